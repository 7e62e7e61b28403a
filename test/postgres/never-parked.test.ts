/**
 * Claims run the parked-code upkeep (unpark_due) only in pools that have left pools_never_parked
 * (026). A pool this build creates starts in it, so its claims skip the upkeep; the codes_park
 * trigger takes it out in the transaction that parks a code or gives one an expiry. These tests
 * check both halves: a plain pool stays in (or the fast statement pays the upkeep again), and a pool whose
 * code was held, or imported with a window, still gets that code back once it is due — through
 * the fast statement (limit 1) and the full one (limit 2).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import { openDibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import {
  adminQuery,
  migrateSchemaBefore,
  pgForSuite,
  requirePostgres,
  tempPgStore,
  TEST_PG,
} from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres: pools that never parked a code skip the upkeep (026)', { skip }, () => {
  const suite = pgForSuite({ grouped: 'false', poolSize: '2' });

  /** Whether the pool's claims run the upkeep (it has left pools_never_parked). */
  const parking = async (pool: string) =>
    (
      await adminQuery<{ parking: boolean }>(
        `SELECT NOT EXISTS (SELECT 1 FROM "${suite.schema}".pools_never_parked n WHERE n.pool_id = p.id) AS parking
         FROM "${suite.schema}".pools p WHERE p.name = $1`,
        [pool],
      )
    )[0]?.parking;
  const storeTime = async (ms = 0) => new Date(Date.parse(await suite.dibs.backend.pools.clock()) + ms).toISOString();
  const untilStoreTime = async (at: string) => {
    for (let i = 0; i < 100 && (await storeTime()) <= at; i++) await sleep(50);
  };

  it('a plain pool stays in pools_never_parked: its claims skip the upkeep', async () => {
    await suite.dibs.pools.create({ name: 'plain' });
    await suite.dibs.pools.importCodes('plain', ['A', 'B']);
    assert.equal((await suite.dibs.pools.claim('plain', 'alice')).code !== undefined, true);
    assert.equal(await parking('plain'), false);
  });

  for (const limit of [1, 2]) {
    it(`limit ${limit}: a code held and released by its hold's end is claimed again`, async () => {
      const pool = `held-${limit}`;
      await suite.dibs.pools.create({ name: pool, perClaimantLimit: limit, publicCodes: true }); // a checkout may hold a free code
      await suite.dibs.pools.importCodes(pool, ['H']);
      assert.equal(await parking(pool), false);
      // the hold's own answered end, not a time read before it (a loaded machine runs the hold later)
      const held = await suite.dibs.pools.hold(pool, 'H', 'checkout', 1000);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      await untilStoreTime(held.hold!.expiresAt);
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'H');
      assert.equal(await parking(pool), true);
    });

    it(`limit ${limit}: a code imported before its window opens is claimed once it opens`, async () => {
      const pool = `window-${limit}`;
      await suite.dibs.pools.create({ name: pool, perClaimantLimit: limit });
      const opens = await storeTime(1000);
      await suite.dibs.pools.importCodes(pool, [{ code: 'W', startsAt: opens }]);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      await untilStoreTime(opens);
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'W');
      assert.equal(await parking(pool), true);
    });
  }
});

it('postgres: a pool that existed before 026 keeps the upkeep: its parked code comes back when due', {
  skip,
}, async () => {
  const temp = tempPgStore({ grouped: 'false' });
  const raw = new pg.Client({ connectionString: TEST_PG });
  await raw.connect();
  try {
    await migrateSchemaBefore(raw, temp.schema, 26);
    await raw.query(`INSERT INTO pools (id, name, per_claimant_limit, counter_shards) VALUES (1, 'old', 1, 1)`);
    await raw.query(`INSERT INTO pool_counters (pool_id, shard, total, free) VALUES (1, 0, 1, 1)`);
    // parked by 013's trigger until it opens, a moment from now
    const { rows } = await raw.query<{ opens: Date }>(
      `INSERT INTO codes (pool_id, code, starts_at) VALUES (1, 'SOON', now() + interval '1 second') RETURNING starts_at AS opens`,
    );
    const dibs = await openDibs(temp.store); // applies 026 and the functions
    try {
      await rejectsWith(dibs.pools.claim('old', 'early'), 'sold_out');
      const opens = rows[0]!.opens.toISOString();
      for (let i = 0; i < 100 && (await dibs.backend.pools.clock()) <= opens; i++) await sleep(50);
      assert.equal((await dibs.pools.claim('old', 'late')).code, 'SOON');
    } finally {
      await dibs.close();
    }
  } finally {
    await raw.end();
    await temp.drop();
  }
});
