/**
 * Migration 012 on an existing file: free codes that cannot be handed out now (not yet valid,
 * expired, on a live hold) are parked, the others not; claims then hand out only the open one and
 * the counts are what they were.
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import Database from 'better-sqlite3';
import { openDibs } from '../../src/index.js';
import { assertOldPoolClaimsOnlyOpenCode } from '../support/parked-migration.js';
import { migrateFileBefore, tempSqliteStore } from '../support/sqlite.js';

const temp = tempSqliteStore();
after(() => temp.cleanup());

it('parks the closed free codes of existing pools; claims then skip them and counts stay', async () => {
  const raw = migrateFileBefore(temp.store, 12);
  const at = (ms: number) => new Date(Date.now() + ms).toISOString();
  const [later, past, holdEnds] = [at(3_600_000), at(-3_600_000), at(600_000)];
  raw
    .prepare(
      `INSERT INTO dibs_pools (id, name, per_claimant_limit, created_at, total, free) VALUES (1, 'old', 1, 'then', 4, 4)`,
    )
    .run();
  const insert = raw.prepare(
    `INSERT INTO dibs_codes (pool_id, code, starts_at, expires_at, hold_claimant, hold_until) VALUES (1, ?, ?, ?, ?, ?)`,
  );
  insert.run('OPEN', null, null, null, null);
  insert.run('LATER', later, null, null, null);
  insert.run('GONE', null, past, null, null);
  insert.run('HELD', null, null, 'checkout', holdEnds);
  raw.close();

  const dibs = await openDibs(temp.store); // applies 012
  try {
    const check = new Database(temp.store.slice('sqlite:'.length), { readonly: true });
    const parked = Object.fromEntries(
      (
        check.prepare('SELECT code, parked_until FROM dibs_codes').all() as {
          code: string;
          parked_until: string | null;
        }[]
      ).map((r) => [r.code, r.parked_until]),
    );
    check.close();
    assert.deepEqual(parked, { OPEN: null, LATER: later, GONE: 'infinity', HELD: holdEnds });
    await assertOldPoolClaimsOnlyOpenCode(dibs);
  } finally {
    await dibs.close();
  }
});
