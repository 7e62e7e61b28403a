/**
 * Import storm: several processes import overlapping code lists into one pool at once, in
 * different orders and small batches, so batches race on the same codes (in the pool already,
 * earlier in the same batch, in a parallel batch of this or another process). Judged by what the
 * importers were told: every distinct code is in the pool exactly once, the imports together
 * report each one imported exactly once, each import's imported + duplicates is what it sent, and
 * the pool's counters and audit agree with its rows.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { runWorkers, shuffle } from './admin-storm.js';

interface Outcome {
  op: number;
  sent: number;
  result?: { imported: number; duplicates: number; invalid: number };
  error?: string;
}

const PROCESSES = 3;
const DISTINCT = 6000;

export function importStormCases(env: () => { dibs: Dibs; store: string }): void {
  // Into an empty pool most batches are all new until they meet a parallel batch's codes; with a
  // tenth of the codes already there (a refill) nearly every batch meets one at once.
  for (const refill of [0, DISTINCT / 10])
    it(`keeps every code exactly once when processes import overlapping lists at once (${refill} codes there before)`, async () => {
      const { dibs, store } = env();
      const pool = `import-storm-${process.pid}-${refill}`;
      await dibs.pools.create({ name: pool });
      const all = Array.from({ length: DISTINCT }, (_, i) => `IS-${i}`);
      const before = await dibs.pools.importCodes(pool, all.slice(0, refill));
      // each process: two imports, each about half of all codes in its own shuffled order, with
      // some codes repeated inside one list
      const lanes = Array.from({ length: PROCESSES }, (_, p) =>
        [0, 1].map((k) => {
          const picked = shuffle(
            all.filter((_, i) => (i * 7 + p * 3 + k) % 5 < 3),
            p * 10 + k + 1,
          );
          return [...picked, ...picked.slice(0, 40)];
        }),
      );
      const outcomes = await runWorkers<Outcome>({
        lanes,
        worker: './import-worker.ts',
        config: { store, pool, batchSize: 250 },
        concurrency: 1,
        timeoutMs: 120_000,
        during: async () => {},
      });

      assert.equal(outcomes.length, PROCESSES * 2, 'every import answered');
      const failed = outcomes.filter((o) => o.error !== undefined);
      assert.deepEqual(failed, [], 'no import failed');
      for (const o of outcomes) {
        assert.equal(o.result!.invalid, 0);
        assert.equal(o.result!.imported + o.result!.duplicates, o.sent, `import ${o.op}: imported + duplicates = sent`);
      }
      const sent = new Set([...all.slice(0, refill), ...lanes.flat(2)]);
      const reported = before.imported + outcomes.reduce((n, o) => n + o.result!.imported, 0);
      assert.equal(reported, sent.size, 'the imports together report each distinct code imported once');

      const exported: string[] = [];
      for await (const page of dibs.pools.exportCodes(pool)) for (const row of page) exported.push(row.code);
      assert.equal(new Set(exported).size, exported.length, 'no code twice in the pool');
      assert.deepEqual(new Set(exported), sent, 'the pool holds exactly the distinct codes sent');
      assert.deepEqual(await dibs.pools.stats(pool), {
        total: sent.size,
        free: sent.size,
        claimed: 0,
        redeemed: 0,
        revoked: 0,
      });
      assert.deepEqual(await dibs.pools.audit(pool), [], 'the audit finds nothing');
    });
}
