/**
 * Claims run the parked-code upkeep (parkExpired, unparkDue) only in pools that have left
 * dibs_pools_never_parked (016). A pool this build creates starts in it, so its claims skip the
 * upkeep; triggers take it out in the statement that parks a code or gives a free one an expiry.
 * These tests check both halves, as test/postgres/never-parked.test.ts does for PostgreSQL's 026: a
 * plain pool stays in (or every claim pays the upkeep again), and a pool whose code was held,
 * imported with a window, or released into a window still gets that code back once it is due —
 * with a limit of 1 and of 2 — and a pool from before 016 keeps the upkeep.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openDibs, type Dibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import { migrateFileBefore, sqliteForSuite, tempSqliteStore } from '../support/sqlite.js';

/** Whether the pool's claims run the upkeep (it has left dibs_pools_never_parked), read beside the store. */
function parking(store: string, pool: string): boolean | undefined {
  const db = new Database(store.slice('sqlite:'.length), { readonly: true });
  try {
    const row = db
      .prepare(
        `SELECT NOT EXISTS (SELECT 1 FROM dibs_pools_never_parked n WHERE n.pool_id = p.id) AS parking
         FROM dibs_pools p WHERE p.name = ?`,
      )
      .get(pool) as { parking: number } | undefined;
    return row === undefined ? undefined : row.parking === 1;
  } finally {
    db.close();
  }
}

const storeTime = async (dibs: Dibs, ms = 0) =>
  new Date(Date.parse(await dibs.backend.pools.clock()) + ms).toISOString();
const untilStoreTime = async (dibs: Dibs, at: string) => {
  for (let i = 0; i < 100 && (await storeTime(dibs)) <= at; i++) await sleep(50);
};

describe('sqlite: pools that never parked a code skip the upkeep (016)', () => {
  const suite = sqliteForSuite();

  it('a plain pool stays in dibs_pools_never_parked: its claims skip the upkeep', async () => {
    await suite.dibs.pools.create({ name: 'plain' });
    await suite.dibs.pools.importCodes('plain', ['A', 'B']);
    assert.equal((await suite.dibs.pools.claim('plain', 'alice')).code !== undefined, true);
    await suite.dibs.pools.release('plain', (await suite.dibs.pools.holdings('plain', 'alice'))[0]!.code, {
      claimant: 'alice',
    });
    assert.equal(parking(suite.store, 'plain'), false);
  });

  for (const limit of [1, 2]) {
    it(`limit ${limit}: a code held and released by its hold's end is claimed again`, async () => {
      const pool = `held-${limit}`;
      await suite.dibs.pools.create({ name: pool, perClaimantLimit: limit, publicCodes: true }); // a checkout may hold a free code
      await suite.dibs.pools.importCodes(pool, ['H']);
      assert.equal(parking(suite.store, pool), false);
      // the hold's own answered end, not a time read before it (a loaded machine runs the hold later)
      const held = await suite.dibs.pools.hold(pool, 'H', 'checkout', 1000);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      await untilStoreTime(suite.dibs, held.hold!.expiresAt);
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'H');
      assert.equal(parking(suite.store, pool), true);
    });

    it(`limit ${limit}: a code imported before its window opens is claimed once it opens`, async () => {
      const pool = `window-${limit}`;
      await suite.dibs.pools.create({ name: pool, perClaimantLimit: limit });
      const opens = await storeTime(suite.dibs, 1000);
      await suite.dibs.pools.importCodes(pool, [{ code: 'W', startsAt: opens }]);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      await untilStoreTime(suite.dibs, opens);
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'W');
      assert.equal(parking(suite.store, pool), true);
    });
  }

  it('a claimed code given a window and released into it is claimed once the window opens', async () => {
    await suite.dibs.pools.create({ name: 'released' });
    await suite.dibs.pools.importCodes('released', ['R']);
    assert.equal((await suite.dibs.pools.claim('released', 'alice')).code, 'R');
    const opens = await storeTime(suite.dibs, 1000);
    await suite.dibs.pools.setCodeWindow('released', 'R', { startsAt: opens, expiresAt: null });
    assert.equal(parking(suite.store, 'released'), false); // a claimed code is not parked
    await suite.dibs.pools.release('released', 'R', { claimant: 'alice' }); // free again, parked until its window opens
    assert.equal(parking(suite.store, 'released'), true);
    await rejectsWith(suite.dibs.pools.claim('released', 'early'), 'sold_out');
    await untilStoreTime(suite.dibs, opens);
    assert.equal((await suite.dibs.pools.claim('released', 'late')).code, 'R');
  });
});

it('sqlite: a pool that existed before 016 keeps the upkeep: its parked code comes back when due', async () => {
  const temp = tempSqliteStore();
  try {
    const raw = migrateFileBefore(temp.store, 16);
    raw
      .prepare(
        `INSERT INTO dibs_pools (id, name, per_claimant_limit, created_at, total, free) VALUES (1, 'old', 1, 'then', 1, 1)`,
      )
      .run();
    // parked until it opens, a moment from now, as 012's import parks it
    const { opens } = raw
      .prepare(
        `INSERT INTO dibs_codes (pool_id, code, starts_at, parked_until)
         VALUES (1, 'SOON', strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 second'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 second'))
         RETURNING starts_at AS opens`,
      )
      .get() as { opens: string };
    raw.close();
    const dibs = await openDibs(temp.store); // applies 016
    try {
      assert.equal(parking(temp.store, 'old'), true);
      await rejectsWith(dibs.pools.claim('old', 'early'), 'sold_out');
      await untilStoreTime(dibs, opens);
      assert.equal((await dibs.pools.claim('old', 'late')).code, 'SOON');
    } finally {
      await dibs.close();
    }
  } finally {
    temp.cleanup();
  }
});
