/**
 * Leases through the shells (HTTP and CLI), which only hand back the token: a renewal answers the
 * lease's own `limit` (a semaphore slot stays a slot of N), and a malformed token is named by the
 * field the caller sent (`token`, `--token`), never by an internal name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Lease } from '../../src/index.js';
import { runCli } from '../support/cli.js';
import { errorOf, openTestService, type TestService } from '../support/service.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('HTTP: renew and release take only the token', () => {
  let svc: TestService;
  let auth: string;
  before(async () => {
    svc = await openTestService();
    auth = await svc.key('acme', ['locks:write']);
  });
  after(() => svc.close());

  it('renew of a semaphore slot (limit 2) answers limit 2 when the body omits limit', async () => {
    const acquired = await svc.call(auth, 'POST', '/v1/locks/printers/acquire', { limit: 2, ttlMs: 60_000 });
    assert.equal(acquired.statusCode, 201, acquired.body);
    const lease = acquired.json() as Lease;
    assert.equal(lease.limit, 2);
    const renewed = await svc.call(auth, 'POST', '/v1/locks/printers/renew', { token: lease.token });
    assert.equal(renewed.statusCode, 200, renewed.body);
    assert.equal((renewed.json() as Lease).limit, 2, renewed.body);
    assert.equal((renewed.json() as Lease).token, lease.token);
    // a plain lock stays limit 1
    const lock = (await svc.call(auth, 'POST', '/v1/locks/report/acquire', {})).json() as Lease;
    assert.equal(
      ((await svc.call(auth, 'POST', '/v1/locks/report/renew', { token: lock.token })).json() as Lease).limit,
      1,
    );
    assert.equal((await svc.call(auth, 'POST', '/v1/locks/printers/release', { token: lease.token })).statusCode, 204);
    assert.equal((await svc.call(auth, 'POST', '/v1/locks/report/release', { token: lock.token })).statusCode, 204);
  });

  it('a malformed token is refused as field "token"', async () => {
    for (const action of ['release', 'renew']) {
      const error = errorOf(
        await svc.call(auth, 'POST', `/v1/locks/k/${action}`, { token: 'short' }),
        400,
        'invalid_input',
      );
      assert.equal(error.field, 'token', `${action}: ${JSON.stringify(error)}`);
    }
  });
});

describe('CLI: locks renew takes only the token', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('renew of a semaphore slot answers limit 2; a malformed token names --token', async () => {
    const env = { DIBS_STORE: temp.store };
    const acquired = await runCli(['locks', 'acquire', 'printers', '--limit', '2', '--ttl', '60000'], { env });
    assert.equal(acquired.code, 0, acquired.stderr);
    const lease = JSON.parse(acquired.stdout) as Lease;
    const renewed = await runCli(['locks', 'renew', 'printers', '--token', lease.token, '--json'], { env });
    assert.equal(renewed.code, 0, renewed.stderr);
    assert.equal((JSON.parse(renewed.stdout) as Lease).limit, 2, renewed.stdout);
    const bad = await runCli(['locks', 'release', 'printers', '--token', 'short'], { env });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--token/, bad.stderr);
    assert.doesNotMatch(bad.stderr, /lease\.token/, bad.stderr);
  });
});
