/** `dibs keys create|list|revoke`: the key is printed once, stored hashed, usable by the service, revocable. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { runCli } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('dibs keys', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());
  const dibs = (...args: string[]) => runCli(['--store', temp.store, ...args]);

  it('creates (shown once), lists (never the key) and revokes keys that the service honours', async () => {
    const created = await dibs(
      '--json',
      'keys',
      'create',
      '--name',
      'checkout',
      '--tenant',
      'acme',
      '--scopes',
      'pools:read,pools:claim',
    );
    assert.equal(created.code, 0, created.stderr);
    const { key, apiKey } = JSON.parse(created.stdout) as {
      key: string;
      apiKey: { id: string; tenant: string; scopes: string[] };
    };
    assert.match(key, /^dibs_[a-f0-9]{16}_[A-Za-z0-9_-]{32}$/);
    assert.deepEqual([apiKey.tenant, apiKey.scopes], ['acme', ['pools:read', 'pools:claim']]);

    const human = await dibs('keys', 'create', '--name', 'ops');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^dibs_\w+/);
    assert.match(human.stdout, /cannot be shown again/);

    const listed = await dibs('keys', 'list');
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(apiKey.id));
    assert.ok(!listed.stdout.includes(key.slice(22)), 'the list never shows a key');
    const acmeOnly = JSON.parse((await dibs('--json', 'keys', 'list', '--tenant', 'acme')).stdout) as {
      data: { tenant: string }[];
    };
    assert.deepEqual(
      acmeOnly.data.map((k) => k.tenant),
      ['acme'],
    );

    const store = await openDibs(temp.store);
    const app = buildServer({ dibs: store, keyCacheMs: 0 });
    try {
      const me = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${key}` } });
      assert.equal(me.json().tenant, 'acme');
      assert.equal(
        (
          await app.inject({
            method: 'POST',
            url: '/v1/pools',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            payload: '{"name":"x"}',
          })
        ).statusCode,
        403,
      );
      const revoked = await dibs('keys', 'revoke', apiKey.id);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal(
        (await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${key}` } })).statusCode,
        401,
      );
    } finally {
      await app.close();
      await store.close();
    }
    assert.equal((await dibs('keys', 'revoke', 'ffffffffffffffff')).code, 2);
    const bad = await dibs('keys', 'create', '--name', 'x', '--scopes', 'pools:everything');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /invalid_input/);
    const badTenant = await dibs('keys', 'create', '--name', 'x', '--tenant', 'Bad~Tenant');
    assert.equal(badTenant.code, 2);
  });
});
