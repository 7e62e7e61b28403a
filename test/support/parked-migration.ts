/**
 * What the parked-codes migration tests (SQLite 012, PostgreSQL 013) expect of the pool 'old' they
 * wrote under the previous schema — codes OPEN, LATER (not yet valid), GONE (expired), HELD (on a
 * live hold), 4 free — once the migration has run: only OPEN is handed out, the counts are as
 * they were, the audit is clean.
 */
import assert from 'node:assert/strict';
import type { Dibs } from '../../src/index.js';
import { rejectsWith } from './assert.js';

export async function assertOldPoolClaimsOnlyOpenCode(dibs: Dibs): Promise<void> {
  assert.equal((await dibs.pools.claim('old', 'alice')).code, 'OPEN');
  await rejectsWith(dibs.pools.claim('old', 'bob'), 'sold_out');
  assert.deepEqual(await dibs.pools.stats('old'), { total: 4, free: 3, claimed: 1, redeemed: 0, revoked: 0 });
  assert.deepEqual(await dibs.pools.audit('old'), []);
}
