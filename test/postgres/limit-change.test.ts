/**
 * perClaimantLimit lowered on PostgreSQL (I2, I8).
 *
 * A claimant's holdings occupy slots and UNIQUE (pool, claimant, slot) is what keeps a claimant
 * within its limit. Two ways past it that need no exotic timing:
 * - lowering the limit while a claimant holds a code in a slot above the new limit, with a lower
 *   slot free: a plain sequence of calls, no concurrency at all;
 * - lowering the limit while a claim that read the old limit is still in flight: the claim is
 *   stalled on the pool's counter rows (held from a separate connection) while the update runs.
 * After either, the claimant must not hold more than the limit the store ends with, and the
 * audit must be clean.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { TEST_PG, requirePostgres, tempPgStore, migrateSchemaBefore } from '../support/postgres.js';

const skip = await requirePostgres();

for (const grouped of [false, true]) {
  describe(`postgres: a lowered perClaimantLimit holds (grouped=${grouped})`, { skip }, () => {
    const temp = tempPgStore({ grouped: String(grouped), poolSize: '4' });
    let dibs: Dibs;
    before(async () => {
      dibs = await openDibs(temp.store);
    });
    after(async () => {
      await dibs?.close();
      await temp.drop();
    });

    it('claim two, release the first, lower the limit to 1: the next claim is refused at the limit', async () => {
      await dibs.pools.create({ name: 'seq', perClaimantLimit: 2 });
      await dibs.pools.importCodes(
        'seq',
        Array.from({ length: 6 }, (_, i) => `S-${i}`),
      );
      const first = await dibs.pools.claim('seq', 'x');
      const second = await dibs.pools.claim('seq', 'x');
      assert.deepEqual([first.status, second.status], ['claimed', 'claimed']);
      await dibs.pools.release('seq', first.code!, { claimant: 'x' });
      await dibs.pools.update('seq', { perClaimantLimit: 1 }); // allowed: x holds 1
      const again = await dibs.pools.claim('seq', 'x');
      assert.equal(again.status, 'already-held', `x holds ${again.held.length} code(s) under limit 1`);
      assert.deepEqual(again.held, [second.code]);
      assert.deepEqual(await dibs.pools.audit('seq'), []);
      // and with a key (the fast statement takes keyed claims too)
      const keyed = await dibs.pools.claim('seq', 'x', { idempotencyKey: 'k-x' });
      assert.equal(keyed.status, 'already-held');
      assert.equal((await dibs.pools.stats('seq')).claimed, 1);
    });

    it('limit 3 lowered to 1 (top slot held) then raised to 2: a claim of two gets one, then the limit answers', async () => {
      await dibs.pools.create({ name: 'many', perClaimantLimit: 3 });
      await dibs.pools.importCodes(
        'many',
        Array.from({ length: 9 }, (_, i) => `M-${i}`),
      );
      const got = await dibs.pools.claimMany('many', 'y', 3);
      assert.equal(got.codes.length, 3);
      // release all but the newest, whatever order the slots were assigned in
      const held = (await dibs.pools.claim('many', 'y')).held;
      for (const code of held.slice(0, 2)) await dibs.pools.release('many', code, { claimant: 'y' });
      await dibs.pools.update('many', { perClaimantLimit: 1 });
      await dibs.pools.update('many', { perClaimantLimit: 2 });
      const more = await dibs.pools.claimMany('many', 'y', 2);
      assert.equal(more.codes.length, 1, `limit 2, y held 1: one more, got ${more.codes.length}`);
      assert.equal((await dibs.pools.claim('many', 'y')).status, 'already-held');
      assert.deepEqual(await dibs.pools.audit('many'), []);
    });

    it('a public code redeemed directly counts against the lowered limit too', async () => {
      await dibs.pools.create({ name: 'pub', perClaimantLimit: 2, publicCodes: true });
      await dibs.pools.importCodes('pub', ['P-1', 'P-2', 'P-3', 'P-4']);
      const a = await dibs.pools.claim('pub', 'z');
      await dibs.pools.claim('pub', 'z');
      await dibs.pools.release('pub', a.code!, { claimant: 'z' });
      await dibs.pools.update('pub', { perClaimantLimit: 1 });
      const free: string[] = [];
      for await (const batch of dibs.pools.exportCodes('pub', { status: 'free' }))
        free.push(...batch.map((c) => c.code));
      assert.equal(free.length, 3);
      await assert.rejects(
        dibs.pools.redeem('pub', free[0]!, { claimant: 'z', orderId: 'o-1' }),
        (error: unknown) => isDibsError(error, 'limit_reached'),
        'z already holds 1 under limit 1',
      );
      assert.deepEqual(await dibs.pools.audit('pub'), []);
    });
  });
}

describe('postgres: a limit lowered while a claim is in flight (I8)', { skip }, () => {
  const temp = tempPgStore({ grouped: 'false', poolSize: '4' });
  let claimer: Dibs;
  let admin: Dibs;
  let blocker: pg.Client;
  let watcher: pg.Client;
  before(async () => {
    claimer = await openDibs(temp.store);
    admin = await openDibs(temp.store);
    blocker = new pg.Client({ connectionString: TEST_PG, application_name: 'limit-change-blocker' });
    watcher = new pg.Client({ connectionString: TEST_PG });
    await blocker.connect();
    await watcher.connect();
  });
  after(async () => {
    await blocker?.end().catch(() => {});
    await watcher?.end().catch(() => {});
    await claimer?.close();
    await admin?.close();
    await temp.drop();
  });

  /** Backends waiting behind the blocker, directly or behind one that does (other tests share the server). */
  const waiting = async () => {
    const blockerPid = (blocker as unknown as { processID: number }).processID;
    return (
      await watcher.query<{ n: number }>(
        `
      WITH a AS (SELECT pid, pg_blocking_pids(pid) AS b FROM pg_stat_activity WHERE datname = current_database()),
           direct AS (SELECT pid FROM a WHERE $1::int = ANY(b))
      SELECT count(*)::int AS n FROM a WHERE $1::int = ANY(b) OR b && ARRAY(SELECT pid FROM direct)`,
        [blockerPid],
      )
    ).rows[0]!.n;
  };
  const heldBy = async (pool: string, claimant: string) =>
    (
      await watcher.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${temp.schema}".codes c JOIN "${temp.schema}".pools p ON p.id = c.pool_id WHERE p.name = $1 AND c.claimant = $2`,
        [pool, claimant],
      )
    ).rows[0]!.n;

  async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('a claim stalled on its counter row while the limit drops from 2 to 1: never over the limit the store ends with', async () => {
    await admin.pools.create({ name: 'race', perClaimantLimit: 2 });
    await admin.pools.importCodes(
      'race',
      Array.from({ length: 6 }, (_, i) => `R-${i}`),
    );
    assert.equal((await claimer.pools.claim('race', 'x')).status, 'claimed');

    // hold every counter row of the pool: the claim below reads the pool (limit 2) and stalls on its shard
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT pc.shard FROM "${temp.schema}".pool_counters pc JOIN "${temp.schema}".pools p ON p.id = pc.pool_id WHERE p.name = 'race' FOR UPDATE OF pc`,
    );
    const claim = claimer.pools.claim('race', 'x').then(
      (r) => ({ ok: r }),
      (error: unknown) => ({ error }),
    );
    await until('the claim to wait for a counter row', async () => (await waiting()) >= 1);

    let updateSettled = false;
    const update = admin.pools
      .update('race', { perClaimantLimit: 1 })
      .then(
        (r) => ({ ok: r }),
        (error: unknown) => ({ error }),
      )
      .finally(() => {
        updateSettled = true;
      });
    // the update either finishes at once (judging without the in-flight claim) or waits as well
    await until('the update to finish or wait', async () => updateSettled || (await waiting()) >= 2);
    await blocker.query('COMMIT');

    const [claimed, updated] = await Promise.all([claim, update]);
    const pool = await admin.pools.get('race');
    const held = await heldBy('race', 'x');
    const audit = await admin.pools.audit('race');
    const outcome = `claim ${'ok' in claimed ? claimed.ok.status : String((claimed as { error: unknown }).error)}, update ${'ok' in updated ? `limit ${updated.ok.perClaimantLimit}` : String((updated as { error: unknown }).error)}`;
    process.stderr.write(`# stalled claim: ${outcome}\n`);
    assert.deepEqual(audit, [], outcome);
    assert.ok(held <= pool.perClaimantLimit, `x holds ${held} under limit ${pool.perClaimantLimit} (${outcome})`);
    // I8: an acknowledged second code means the update must not have gone through, and vice versa
    if ('ok' in claimed && claimed.ok.status === 'claimed') {
      assert.ok(
        'error' in updated && isDibsError(updated.error, 'conflict'),
        `the update must be refused once the claim won (${outcome})`,
      );
    } else {
      assert.ok('ok' in updated && updated.ok.perClaimantLimit === 1, outcome);
    }
  });

  it('a claim that read the old limit and reaches its counter row after the change takes nothing and is judged again', async () => {
    await admin.pools.create({ name: 'late', perClaimantLimit: 2 });
    await admin.pools.importCodes(
      'late',
      Array.from({ length: 6 }, (_, i) => `L-${i}`),
    );
    assert.equal((await claimer.pools.claim('late', 'x')).status, 'claimed');

    // the update gets as far as the pool row (held here) — past everything a claim needs, if it locks any
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${temp.schema}".pools WHERE name = 'late' FOR NO KEY UPDATE`);
    const update = admin.pools.update('late', { perClaimantLimit: 1 }).then(
      (r) => ({ ok: r }),
      (error: unknown) => ({ error }),
    );
    await until('the update to wait for the pool row', async () => (await waiting()) >= 1);
    // this claim's snapshot has limit 2; it may finish at once, or wait behind the update
    let claimSettled = false;
    const claim = claimer.pools
      .claim('late', 'x')
      .then(
        (r) => ({ ok: r }),
        (error: unknown) => ({ error }),
      )
      .finally(() => {
        claimSettled = true;
      });
    await until('the claim to finish or wait', async () => claimSettled || (await waiting()) >= 2);
    await blocker.query('COMMIT');

    const [claimed, updated] = await Promise.all([claim, update]);
    const outcome = `claim ${'ok' in claimed ? claimed.ok.status : String((claimed as { error: unknown }).error)}, update ${'ok' in updated ? `limit ${updated.ok.perClaimantLimit}` : String((updated as { error: unknown }).error)}`;
    const pool = await admin.pools.get('late');
    assert.deepEqual(await admin.pools.audit('late'), [], outcome);
    assert.ok((await heldBy('late', 'x')) <= pool.perClaimantLimit, outcome);
    if ('ok' in claimed && claimed.ok.status === 'claimed')
      assert.ok('error' in updated && isDibsError(updated.error, 'conflict'), outcome);
    else
      assert.ok(
        'ok' in updated && updated.ok.perClaimantLimit === 1 && 'ok' in claimed && claimed.ok.status === 'already-held',
        outcome,
      );
    process.stderr.write(`# late claim: ${outcome}\n`);
  });
});

describe('postgres: migration 014 on a pool whose limit was lowered before it', { skip }, () => {
  it('moves holdings above the limit into free slots; the next claim answers at the limit', async () => {
    const temp = tempPgStore({ grouped: 'false' });
    const raw = new pg.Client({ connectionString: TEST_PG });
    await raw.connect();
    try {
      await migrateSchemaBefore(raw, temp.schema, 14);
      // what the old code left behind: limit lowered from 3 to 2 with x in slots 2 and 3, y in slot 3
      await raw.query(`INSERT INTO pools (id, name, per_claimant_limit, counter_shards) VALUES (1, 'old', 2, 1)`);
      await raw.query(`INSERT INTO pool_counters (pool_id, shard, total, free, claimed) VALUES (1, 0, 6, 3, 3)`);
      await raw.query(`INSERT INTO codes (pool_id, code, status, claimant, slot, claimed_at) VALUES
        (1, 'X-2', 'claimed', 'x', 2, now()), (1, 'X-3', 'claimed', 'x', 3, now()), (1, 'Y-3', 'claimed', 'y', 3, now()),
        (1, 'F-1', 'free', NULL, NULL, NULL), (1, 'F-2', 'free', NULL, NULL, NULL), (1, 'F-3', 'free', NULL, NULL, NULL)`);

      const dibs = await openDibs(temp.store); // applies 014
      try {
        const { rows } = await raw.query<{ code: string; slot: number }>(
          `SELECT code, slot FROM codes WHERE claimant IS NOT NULL ORDER BY code`,
        );
        assert.deepEqual(Object.fromEntries(rows.map((r) => [r.code, r.slot])), { 'X-2': 2, 'X-3': 1, 'Y-3': 1 });
        assert.equal((await dibs.pools.claim('old', 'x')).status, 'already-held');
        assert.equal((await dibs.pools.claim('old', 'y')).status, 'claimed');
        assert.equal((await dibs.pools.claim('old', 'y')).status, 'already-held');
        assert.deepEqual(await dibs.pools.audit('old'), []);
      } finally {
        await dibs.close();
      }
    } finally {
      await raw.end();
      await temp.drop();
    }
  });
});
