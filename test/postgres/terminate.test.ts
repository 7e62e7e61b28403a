/**
 * Connection loss on PostgreSQL: while 4 processes run a claim storm (or a lock storm, below), the server terminates
 * dibs' connections (pg_terminate_backend) again and again. A claim in flight then answers
 * `unavailable` (retriable) — never a wrong answer — its statement either committed whole or not
 * at all, the next call reconnects, and the audit afterwards finds every acknowledged claim in
 * place and no violation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePostgres, tempPgStore, terminateConnectionsDuring } from '../support/postgres.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';
import { assertMutualExclusion, runLockStormUnderFaults } from '../support/lock-storm.js';

const skip = await requirePostgres();

describe('postgres: connections terminated mid-storm', { skip }, () => {
  for (const grouped of [true, false]) {
    describe(`grouped=${grouped}`, () => {
      const app = `dibs_fault_${Math.random().toString(36).slice(2, 8)}`;
      const temp = tempPgStore({ grouped: String(grouped), poolSize: '4' });
      // Only the storm workers' connections are targets; they are told apart by application_name.
      const workerStore = `${temp.store}&application_name=${app}`;
      let dibs: Dibs;
      before(async () => {
        dibs = await openDibs(temp.store);
      });
      after(async () => {
        await dibs?.close();
        await temp.drop();
      });

      it('keeps every acknowledged claim and a clean audit; later calls reconnect', async () => {
        const pool = 'faulty';
        await dibs.pools.create({ name: pool, lowStockThreshold: 50 });
        // 4,000 claimants for 2,000 codes: the storm lasts long enough for dozens of terminations
        // (every 50 ms); the reference 10,000 vs 5,000 runs fault-free in storm.test.ts.
        await dibs.pools.importCodes(
          pool,
          Array.from({ length: 2000 }, (_, i) => `CODE-${i}`),
        );
        const { result: outcomes, killed } = await terminateConnectionsDuring(
          app,
          runClaimStorm({ store: workerStore, pool, processes: 4, claimants: 4_000, concurrency: 16 }),
        );
        assert.ok(killed > 0, 'connections were terminated during the storm');
        const errors = outcomes.filter((o) => o.status === 'error' && o.error === 'unavailable').length;
        const summary = await assertStormInvariants(dibs, pool, outcomes, {
          codes: 2000,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable'],
          allowUnacknowledged: true,
        });
        assert.ok(summary.codesGiven > 0);
        process.stderr.write(
          `terminated ${killed} connections; ${errors} claims answered unavailable; ${summary.codesGiven} codes given\n`,
        );
        // The process that lost its connections reconnects on the next call.
        await dibs.pools
          .claim(pool, 'after-the-fault')
          .catch((error: { code?: string }) => assert.equal(error.code, 'sold_out'));
        assert.deepEqual(await dibs.pools.audit(pool), []);
      });
    });
  }
});

describe('postgres: connections terminated during a lock storm', { skip }, () => {
  const app = `dibs_lockfault_${Math.random().toString(36).slice(2, 8)}`;
  const temp = tempPgStore({ poolSize: '3' });
  const workerStore = `${temp.store}&application_name=${app}`;
  let dibs: Dibs;
  before(async () => {
    dibs = await openDibs(temp.store); // migrates once, before the workers race
  });
  after(async () => {
    await dibs?.close();
    await temp.drop();
  });

  it('4 processes × 8 keys: per key no overlap and growing fences despite lost connections; the locks work afterwards', async () => {
    const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
    // Killing starts with the first worker connection: on a quiet machine the whole storm took
    // 3.8 s, and waiting for more than 4 connections (each worker may hold only its LISTEN one
    // between calls) once let it end before a single termination.
    const { result, killed } = await terminateConnectionsDuring(
      app,
      runLockStormUnderFaults({ store: workerStore, processes: 4, keys, rounds: 16, holdMs: 10, ttlMs: 3_000 }),
      { everyMs: 60, minConnections: 0 },
    );
    assert.ok(killed > 0, 'connections were terminated during the storm');
    assert.equal(result.sections.length + result.lost, 64, 'every round ran once');
    assertMutualExclusion(result.sections, keys);
    process.stderr.write(
      `terminated ${killed} connections; ${result.unavailable} lock calls answered unavailable (retried); ${result.lost} leases lost\n`,
    );
    // Nothing is stuck: each key can be taken again (a grant lost with its connection lapses with its TTL).
    for (const key of keys) {
      const lastFence = Math.max(0, ...result.sections.filter((s) => s.key === key).map((s) => s.fence));
      const lease = await dibs.locks.acquire(key, { ttlMs: 10_000, waitMs: 30_000 });
      assert.ok(lease.fence > lastFence, `${key}: fence ${lease.fence} after ${lastFence}`);
      await dibs.locks.release(lease);
    }
  });
});
