/**
 * Leases, semaphores and counters on PostgreSQL: the conformance suite unchanged, the
 * multi-process mutual-exclusion timeline, the lost-lease scenario, a counter storm whose shard
 * count must grow, and the LISTEN connection coming back after the server kills it.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import { openDibs } from '../../src/index.js';
import { LISTENER_APPLICATION_NAME } from '../../src/backends/postgres/listener.js';
import { lockConformance } from '../conformance/locks.js';
import { assertLostLeaseIsFenced } from '../support/lost-lease.js';
import { assertFencesGrowAcrossLostHistory, assertFencesGrowPastTheClock } from '../support/fence-history.js';
import { startFaultProxy } from '../support/fault-proxy.js';
import { assertBlockedLoopFiresSignalFirst, assertStalledReplyFiresSignalFirst } from '../support/lost-lease-timing.js';
import { assertMutualExclusion, runCounterStorm, runLockStorm } from '../support/lock-storm.js';
import { assertReleaseWakesOtherInstance } from '../support/wake.js';
import { assertWaitersSeenByOtherInstances } from '../support/lock-waiters.js';
import { assertTakenOverLeaseIsDead } from '../support/lock-edges.js';
import { adminQuery, openTempPg, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  it('postgres locks', { skip }, () => {});
} else {
  lockConformance('postgres', () => openTempPg({ poolSize: '4' }));

  describe('postgres: locks across OS processes', () => {
    it('4 processes × 8 keys: per key no overlap, fences increase, different keys overlap', async () => {
      const temp = tempPgStore({ poolSize: '3' });
      try {
        await (await openDibs(temp.store)).close(); // migrate once, before the workers race
        const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
        const sections = await runLockStorm({ store: temp.store, processes: 4, keys, rounds: 16, holdMs: 10 });
        assert.equal(sections.length, 64);
        assertMutualExclusion(sections, keys);
      } finally {
        await temp.drop();
      }
    });

    it('a release in one instance wakes the waiters of another (NOTIFY → LISTEN)', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertReleaseWakesOtherInstance(temp.store);
      } finally {
        await temp.drop();
      }
    });

    it('waiters of other instances are counted by inspect (as `dibs locks inspect` shows them)', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertWaitersSeenByOtherInstances(temp.store);
      } finally {
        await temp.drop();
      }
    });

    it('a lease that lapsed and was taken over can be neither renewed nor released', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertTakenOverLeaseIsDead(temp.store);
      } finally {
        await temp.drop();
      }
    });

    it('a holder paused past its TTL loses its lease and its late write is fenced off', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertLostLeaseIsFenced(temp.store);
      } finally {
        await temp.drop();
      }
    });

    it("lock history lost (failover to a replica that missed the last commits): fences still grow, the old holder's write is refused", async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertFencesGrowAcrossLostHistory(temp.store, {
          async forget(keys) {
            await adminQuery(`DELETE FROM "${temp.schema}".lock_holders WHERE key = ANY($1)`, [keys]);
            await adminQuery(`DELETE FROM "${temp.schema}".lock_fences WHERE key = ANY($1)`, [keys]);
          },
        });
      } finally {
        await temp.drop();
      }
    });

    it('a last fence ahead of the clock (the clock stepped back) is continued, never restarted', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertFencesGrowPastTheClock(temp.store, async (key, fence) => {
          await adminQuery(`UPDATE "${temp.schema}".lock_fences SET fence = $2 WHERE key = $1`, [key, fence]);
        });
      } finally {
        await temp.drop();
      }
    });

    it('runExclusive: an acquire reply stalled on the wire for 60% of the TTL, then renewals cut — the signal fires before the next holder gets the key', async () => {
      // One connection for the holder: its acquire goes out on the connection already open through the proxy.
      const temp = tempPgStore({ poolSize: '1', queryTimeoutMs: '10000' });
      const proxy = await startFaultProxy({ host: '127.0.0.1', port: 5432 });
      try {
        await (await openDibs(temp.store)).close(); // migrate before the proxy is involved
        const via = new URL(temp.store);
        via.port = String(proxy.port);
        await assertStalledReplyFiresSignalFirst(via.toString(), temp.store, proxy);
      } finally {
        await proxy.close();
        await temp.drop();
      }
    });

    it('runExclusive: an event loop blocked for 60% of the TTL after the grant, then renewals cut — the signal fires before the next holder gets the key', async () => {
      // One connection for the holder: its acquire goes out on the connection already open through the proxy.
      const temp = tempPgStore({ poolSize: '1', queryTimeoutMs: '10000' });
      const proxy = await startFaultProxy({ host: '127.0.0.1', port: 5432 });
      try {
        await (await openDibs(temp.store)).close(); // migrate before the proxy is involved
        const via = new URL(temp.store);
        via.port = String(proxy.port);
        await assertStalledReplyFiresSignalFirst(via.toString(), temp.store, proxy, 'event loop');
      } finally {
        await proxy.close();
        await temp.drop();
      }
    });

    it('runExclusive: an event loop blocked for 60% of the TTL after the grant, renewals working — the holder renews in time, never overlapping the next one', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      try {
        await assertBlockedLoopFiresSignalFirst(temp.store);
      } finally {
        await temp.drop();
      }
    });

    it('4 processes × 100 increments: the counter is exact and its shard count grew', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      const dibs = await openDibs(temp.store);
      // Contention is made certain, not hoped for: this test holds the only shard row locked
      // while the workers start, so their first SKIP LOCKED increments miss and grow the counter.
      await dibs.counters.incr('hits', 1);
      const blocker = new pg.Client({ connectionString: TEST_PG });
      await blocker.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query(`SELECT * FROM "${temp.schema}".counter_shards WHERE name = 'hits' FOR UPDATE`);
        const release = setTimeout(() => blocker.query('COMMIT').catch(() => {}), 3000);
        try {
          await runCounterStorm({ store: temp.store, processes: 4, counter: 'hits', rounds: 100 });
        } finally {
          clearTimeout(release);
          await blocker.query('COMMIT').catch(() => {});
        }
        const value = await dibs.counters.get('hits');
        assert.equal(value.value, 401);
        assert.ok(value.shards > 1, `shard count did not grow under contention (${value.shards})`);
        const rows = await adminQuery<{ n: number; total: string }>(
          `SELECT count(*)::int AS n, sum(value)::text AS total FROM "${temp.schema}".counter_shards WHERE name = 'hits'`,
        );
        assert.equal(rows[0]!.n, value.shards, 'one row per shard');
        assert.equal(Number(rows[0]!.total), 401);
      } finally {
        await blocker.end().catch(() => {});
        await dibs.close();
        await temp.drop();
      }
    });

    it('the LISTEN connection reconnects after the server terminates it, and wake-ups still arrive', async () => {
      const temp = tempPgStore({ poolSize: '2' });
      const dibs = await openDibs(temp.store);
      const other = await openDibs(temp.store);
      try {
        const listenerPids = async () =>
          (
            await adminQuery<{ pid: number }>(
              `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE $2`,
              [LISTENER_APPLICATION_NAME, `LISTEN %dibs_locks_${temp.schema}%`],
            )
          ).map((r) => r.pid);
        const waitForListener = async (not: number[] = []) => {
          for (let i = 0; i < 300; i++) {
            const pids = (await listenerPids()).filter((p) => !not.includes(p));
            if (pids.length > 0) return pids;
            await sleep(100);
          }
          throw new Error('no LISTEN connection appeared');
        };
        // A waiter subscribes, which starts the listener.
        const first = await other.locks.acquire('k', { ttlMs: 30_000 });
        const waiting = dibs.locks.acquire('k', { ttlMs: 30_000, waitMs: 60_000 });
        const before = await waitForListener();
        await other.locks.release(first);
        const second = await waiting;
        await adminQuery('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid', [before]);
        const after = await waitForListener(before);
        assert.ok(after.every((p) => !before.includes(p)));
        // The new connection delivers: a release in another instance wakes this one's waiter.
        const again = other.locks.acquire('k', { ttlMs: 30_000, waitMs: 60_000 });
        await dibs.locks.release(second);
        await other.locks.release(await again);
      } finally {
        await other.close();
        await dibs.close();
        await temp.drop();
      }
    });
  });
}
