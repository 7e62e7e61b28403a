/**
 * Claims run the parked-code upkeep (unpark_due) only in pools that have left pools_never_parked
 * (026). A pool this build creates starts in it, so its claims skip the upkeep; the codes_park
 * trigger takes it out in the transaction that parks a code or gives one an expiry. These tests
 * check both halves: a plain pool stays in (or the fast statement pays the upkeep again), and a pool whose
 * code was held, or imported with a window, still gets that code back once it is due — through
 * the fast statement (limit 1) and the full one (limit 2).
 *
 * Each code is first parked an hour ahead, so the early claim is refused however slow the machine
 * (a one-second hold ran out before the early claim at load ~30: "Missing expected rejection");
 * then its end is moved to a moment ahead by the store's own clock, in the statement that parks it
 * again, and the late claim waits for the store's time to pass it. The code is checked parked right
 * before the late claim, so only that claim's upkeep can have brought it back.
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
const HOUR_MS = 3_600_000;
const HOLD_SOON_MS = 1000; // the shortest hold the product takes
const WINDOW_SOON_MS = 200;

/**
 * Opens a parked code's window WINDOW_SOON_MS after the store's now(), in one statement: its
 * trigger parks the code until then whatever the load (a time read first and sent back could
 * already be past, and the trigger would unpark the code itself). Run with search_path on the
 * store's schema (the trigger's functions are unqualified). $1 pool, $2 code → when it opens, and
 * its parked_until.
 */
const OPEN_SOON = `UPDATE codes c SET starts_at = now() + make_interval(secs => ${WINDOW_SOON_MS / 1000})
  FROM pools p WHERE p.id = c.pool_id AND p.name = $1 AND c.code = $2
  RETURNING c.starts_at AS opens, c.parked_until`;

async function openSoon(schema: string, pool: string, code: string) {
  const client = new pg.Client({ connectionString: TEST_PG, options: `-c search_path="${schema}"` });
  await client.connect();
  try {
    return (await client.query<{ opens: Date; parked_until: Date | null }>(OPEN_SOON, [pool, code])).rows[0]!;
  } finally {
    await client.end();
  }
}

/** Waits until the store's clock is past `at` (bounded only to catch a hang). */
async function untilStoreTime(clock: () => Promise<string>, at: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while ((await clock()) <= at) {
    if (Date.now() > deadline) throw new Error(`the store's clock did not pass ${at} within 60 s`);
    await sleep(20);
  }
}

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
  /** When the code is parked until (null: it is in the free index). */
  const parkedUntil = async (pool: string, code: string) =>
    (
      await adminQuery<{ parked_until: Date | null }>(
        `SELECT c.parked_until FROM "${suite.schema}".codes c JOIN "${suite.schema}".pools p ON p.id = c.pool_id
         WHERE p.name = $1 AND c.code = $2`,
        [pool, code],
      )
    )[0]?.parked_until ?? null;

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
      await suite.dibs.pools.hold(pool, 'H', 'checkout', HOUR_MS);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      assert.equal(await parking(pool), true);
      // the same checkout holds it again, briefly: the store sets the end (now() + ttl) as it parks it
      const held = await suite.dibs.pools.hold(pool, 'H', 'checkout', HOLD_SOON_MS);
      assert.ok(await parkedUntil(pool, 'H'), 'H is parked until its hold ends');
      await untilStoreTime(() => suite.dibs.backend.pools.clock(), held.hold!.expiresAt);
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'H');
    });

    it(`limit ${limit}: a code imported before its window opens is claimed once it opens`, async () => {
      const pool = `window-${limit}`;
      await suite.dibs.pools.create({ name: pool, perClaimantLimit: limit });
      await suite.dibs.pools.importCodes(pool, [{ code: 'W', startsAt: await storeTime(HOUR_MS) }]);
      await rejectsWith(suite.dibs.pools.claim(pool, 'early'), 'sold_out');
      assert.equal(await parking(pool), true);
      const opens = await openSoon(suite.schema, pool, 'W');
      assert.ok(opens.parked_until, 'W is parked until its window opens');
      await untilStoreTime(() => suite.dibs.backend.pools.clock(), opens.opens.toISOString());
      assert.equal((await suite.dibs.pools.claim(pool, 'late')).code, 'W');
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
    // parked by 013's trigger until it opens, an hour from now
    await raw.query(`INSERT INTO codes (pool_id, code, starts_at) VALUES (1, 'SOON', now() + interval '1 hour')`);
    const dibs = await openDibs(temp.store); // applies 026 and the functions
    try {
      await rejectsWith(dibs.pools.claim('old', 'early'), 'sold_out');
      const opens = await openSoon(temp.schema, 'old', 'SOON');
      assert.ok(opens.parked_until, 'SOON is parked until its window opens');
      await untilStoreTime(() => dibs.backend.pools.clock(), opens.opens.toISOString());
      assert.equal((await dibs.pools.claim('old', 'late')).code, 'SOON');
    } finally {
      await dibs.close();
    }
  } finally {
    await raw.end();
    await temp.drop();
  }
});
