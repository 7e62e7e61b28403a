/**
 * Tiered stores beyond the conformance suite: the store URL, a fast path that is down from the
 * start, cap changes with grants outstanding, reservations reclaiming granted units, and an audit
 * that sees broken grant bookkeeping.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { rejectsWith } from '../support/assert.js';
import { freePort, sharedRedisAvailable, SHARED_REDIS } from '../support/redis.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { openTempTiered } from '../support/tiered.js';

const HOUR = 3_600_000;
const redis = await sharedRedisAvailable();
const live = (sku: string, cap: number | null, perCustomerLimit = 1) => ({
  sku,
  startsAt: new Date().toISOString(),
  endsAt: new Date(Date.now() + HOUR).toISOString(),
  cap,
  perCustomerLimit,
});

describe('tiered store URL', () => {
  it('refuses a fast path that is not redis://, and bad parameters, as invalid_input on store', async () => {
    const temp = tempSqliteStore();
    try {
      await rejectsWith(
        openDibs(`${temp.store}?fastpath=${encodeURIComponent('http://127.0.0.1:1/')}`),
        'invalid_input',
        'store',
      );
      await rejectsWith(
        openDibs(`${temp.store}?fastpath=${encodeURIComponent('redis://127.0.0.1:6379/0?chunk=0')}`),
        'invalid_input',
        'store',
      );
      await rejectsWith(
        openDibs(`${temp.store}?fastpath=${encodeURIComponent('redis://127.0.0.1:6379/0?prefix=a b')}`),
        'invalid_input',
        'store',
      );
      await rejectsWith(openDibs(`${temp.store}?fastpath=not-a-url`), 'invalid_input', 'store');
      await rejectsWith(
        openDibs(`${temp.store}?fastpath=${encodeURIComponent('redis+cluster://?chunk=4')}`),
        'invalid_input',
        'store',
      );
    } finally {
      temp.cleanup();
    }
  });

  it('reads an unencoded redis+cluster:// fast path (its "+" arrives as a space) as a Cluster', async () => {
    const temp = tempSqliteStore();
    const dibs = await openDibs(`${temp.store}?fastpath=redis+cluster://127.0.0.1:${await freePort()}`);
    try {
      const fastPath = (await dibs.health()).details.fastPath as { ok: boolean; error: string };
      assert.equal(fastPath.ok, false);
      assert.match(fastPath.error, /Cluster/);
    } finally {
      await dibs.close();
      temp.cleanup();
    }
  });

  for (const mode of ['single', 'cluster'] as const) {
    it(`sells through the ledger when Redis (${mode}) is down from the start, and says so in health`, () =>
      fastPathDownFromStart(mode));
  }

  async function fastPathDownFromStart(mode: 'single' | 'cluster'): Promise<void> {
    const [a, b] = [await freePort(), await freePort()]; // nothing listens there
    const t = await openTempTiered('sqlite', {
      redis: mode === 'single' ? `redis://127.0.0.1:${a}/0` : `redis+cluster://127.0.0.1:${a},127.0.0.1:${b}`,
      fast: { breakerMs: '200' },
    });
    try {
      assert.equal(t.dibs.kind, 'tiered');
      const sale = await t.dibs.sales.create(live('DOWN', 3));
      for (let i = 0; i < 3; i++) await t.dibs.sales.buy(sale.id, `c${i}`);
      await rejectsWith(t.dibs.sales.buy(sale.id, 'late'), 'sold_out');
      assert.equal((await t.dibs.sales.get(sale.id)).stats.sold, 3);
      assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
      const health = await t.dibs.health();
      assert.equal(health.ok, true, 'a dead fast path costs speed, not correctness');
      assert.equal((health.details.fastPath as { ok: boolean }).ok, false);
      // Readiness judges the ledger's schema: the service knows which migrations a tiered store must have.
      const app = buildServer({ dibs: t.dibs, rateLimit: false });
      try {
        const ready = await app.inject({ method: 'GET', url: '/readyz' });
        assert.equal(ready.statusCode, 200, ready.body);
        const { applied, expected } = ready.json().migrations as { applied: number; expected: number };
        assert.ok(expected > 0 && applied === expected, ready.body);
      } finally {
        await app.close();
      }
    } finally {
      await t.cleanup();
    }
  }
});

describe('tiered sales with grants outstanding', { skip: !redis }, () => {
  it('lowers the cap below what is granted (grants are revoked first) but never below sold + held', async () => {
    const t = await openTempTiered('postgres', { fast: { chunk: '50' } });
    try {
      const sale = await t.dibs.sales.create(live('CAP', 100));
      await t.dibs.sales.buy(sale.id, 'alice'); // grants 50 units to Redis
      await t.dibs.sales.reserve(sale.id, 'bob', 1, 60_000);
      const lower = await t.dibs.sales.update(sale.id, { cap: 5 });
      assert.equal(lower.cap, 5);
      await rejectsWith(t.dibs.sales.update(sale.id, { cap: 1 }), 'invalid_input', 'cap');
      for (let i = 0; i < 3; i++) await t.dibs.sales.buy(sale.id, `c${i}`);
      await rejectsWith(t.dibs.sales.buy(sale.id, 'late'), 'sold_out');
      assert.deepEqual((await t.dibs.sales.get(sale.id)).stats, { sold: 4, held: 1, available: 0 });
      assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
    } finally {
      await t.cleanup();
    }
  });

  it('a reservation takes back units Redis holds unsold, and a FLUSHALL-style loss is reconciled before re-granting', async () => {
    const t = await openTempTiered('sqlite', { fast: { chunk: '10' } });
    const client = new Redis(SHARED_REDIS);
    try {
      const sale = await t.dibs.sales.create(live('HOLD', 10, 10));
      await t.dibs.sales.buy(sale.id, 'alice'); // all 10 units granted, 9 unsold in Redis
      const { hold } = await t.dibs.sales.reserve(sale.id, 'bob', 9, 60_000);
      assert.equal(hold.quantity, 9, 'the hold got the units Redis had not sold');
      await rejectsWith(t.dibs.sales.buy(sale.id, 'carol'), 'sold_out');
      await t.dibs.sales.cancelHold(hold.id);
      // Lose the sale's fast-path state, as FLUSHALL would (only this test's keys).
      const keys = await client.keys(`{${t.prefix}:*`);
      if (keys.length) await client.del(...keys);
      for (let i = 0; i < 9; i++) await t.dibs.sales.buy(sale.id, `d${i}`);
      await rejectsWith(t.dibs.sales.buy(sale.id, 'late'), 'sold_out');
      assert.equal((await t.dibs.sales.get(sale.id)).stats.sold, 10);
      assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
    } finally {
      client.disconnect();
      await t.cleanup();
    }
  });

  it('the audit reports grant bookkeeping that does not add up', async () => {
    const t = await openTempTiered('sqlite', { fast: { chunk: '4' } });
    try {
      const sale = await t.dibs.sales.create(live('AUDIT', 10));
      await t.dibs.sales.buy(sale.id, 'alice');
      assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
      const file = new URL(t.store).pathname;
      const db = new Database(file);
      try {
        db.prepare('UPDATE dibs_sale_grants SET used = used + 1 WHERE sale_id = ?').run(sale.id);
      } finally {
        db.close();
      }
      const violations = await t.dibs.sales.audit(sale.id);
      assert.ok(
        violations.some((v) => v.invariant === 'I4' && /grant .* used/.test(v.message)),
        JSON.stringify(violations),
      );
      assert.ok(
        violations.some((v) => v.invariant === 'I4' && /escrow/.test(v.message)),
        JSON.stringify(violations),
      );
    } finally {
      await t.cleanup();
    }
  });
});
