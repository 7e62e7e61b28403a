/**
 * Connection loss on PostgreSQL: while 4 processes run a claim storm, the server terminates
 * dibs' connections (pg_terminate_backend) again and again. A claim in flight then answers
 * `unavailable` (retriable) — never a wrong answer — its statement either committed whole or not
 * at all, the next call reconnects, and the audit afterwards finds every acknowledged claim in
 * place and no violation.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { adminQuery, requirePostgres, tempPgStore } from '../support/postgres.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

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
        await dibs.pools.importCodes(pool, Array.from({ length: 5000 }, (_, i) => `CODE-${i}`));
        let killed = 0;
        let stop = false;
        const storm = runClaimStorm({ store: workerStore, pool, processes: 4, claimants: 10_000, concurrency: 16 });
        const killer = (async () => {
          // Start once the storm is under way: every worker has opened (one connection each) and
          // at least one has grown its pool for concurrent claims, which happens only after 'go'.
          for (let wait = 0; wait < 200 && !stop; wait++) {
            const [row] = await adminQuery<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [app]);
            if (row!.n > 4) break;
            await sleep(25);
          }
          for (let round = 0; round < 40 && !stop; round++) {
            const rows = await adminQuery<{ ok: boolean }>(
              `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`,
              [app],
            );
            killed += rows.filter((r) => r.ok).length;
            await sleep(50);
          }
        })();
        const outcomes = await storm.finally(() => (stop = true));
        await killer;
        assert.ok(killed > 0, 'connections were terminated during the storm');
        const errors = outcomes.filter((o) => o.status === 'error' && o.error === 'unavailable').length;
        const summary = await assertStormInvariants(dibs, pool, outcomes, { codes: 5000, perClaimantLimit: 1, allowedErrors: ['unavailable'], allowUnacknowledged: true });
        assert.ok(summary.codesGiven > 0);
        process.stderr.write(`terminated ${killed} connections; ${errors} claims answered unavailable; ${summary.codesGiven} codes given\n`);
        // The process that lost its connections reconnects on the next call.
        await dibs.pools.claim(pool, 'after-the-fault').catch((error: { code?: string }) => assert.equal(error.code, 'sold_out'));
        assert.deepEqual(await dibs.pools.audit(pool), []);
      });
    });
  }
});
