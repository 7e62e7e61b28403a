/**
 * Migration 013 on an existing schema: free codes that cannot be handed out now (not yet valid,
 * expired, on a live hold) are parked, the others not; claims then hand out only the open one and
 * the counts are what they were.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import pg from 'pg';
import { openDibs } from '../../src/index.js';
import { assertOldPoolClaimsOnlyOpenCode } from '../support/parked-migration.js';
import { requirePostgres, TEST_PG, tempPgStore, migrateSchemaBefore } from '../support/postgres.js';

const skip = await requirePostgres();

it('parks the closed free codes of existing pools; claims then skip them and counts stay', { skip }, async () => {
  const temp = tempPgStore();
  const raw = new pg.Client({ connectionString: TEST_PG });
  await raw.connect();
  try {
    await migrateSchemaBefore(raw, temp.schema, 13);
    await raw.query(`INSERT INTO pools (id, name, per_claimant_limit, counter_shards) VALUES (1, 'old', 1, 1)`);
    await raw.query(`INSERT INTO pool_counters (pool_id, shard, total, free) VALUES (1, 0, 4, 4)`);
    await raw.query(`INSERT INTO codes (pool_id, code, starts_at, expires_at, hold_claimant, hold_until) VALUES
      (1, 'OPEN', NULL, NULL, NULL, NULL),
      (1, 'LATER', now() + interval '1 hour', NULL, NULL, NULL),
      (1, 'GONE', NULL, now() - interval '1 hour', NULL, NULL),
      (1, 'HELD', NULL, NULL, 'checkout', now() + interval '10 minutes')`);

    const dibs = await openDibs(temp.store); // applies 013
    try {
      const { rows } = await raw.query<{ code: string; parked: string | null }>(`SELECT code, CASE
        WHEN parked_until IS NULL THEN NULL WHEN parked_until = 'infinity' THEN 'never'
        WHEN parked_until = coalesce(starts_at, hold_until) THEN 'until it opens' ELSE parked_until::text END AS parked FROM codes`);
      assert.deepEqual(Object.fromEntries(rows.map((r) => [r.code, r.parked])), {
        OPEN: null,
        LATER: 'until it opens',
        GONE: 'never',
        HELD: 'until it opens',
      });
      await assertOldPoolClaimsOnlyOpenCode(dibs);
    } finally {
      await dibs.close();
    }
  } finally {
    await raw.end();
    await temp.drop();
  }
});
