/**
 * Single claims on PostgreSQL take one of two statements: claim-fast.sql (limit 1, no threshold, no
 * window) or claim.sql (everything else), and a process remembers for a few seconds which pools the
 * fast one cannot serve. These tests change a pool's rules from ANOTHER instance (as another process
 * would) between claims and check that the next claim obeys the new rules either way.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres: fast and full claim statements follow rule changes made elsewhere', { skip }, () => {
  const temp = tempPgStore({ grouped: 'false', poolSize: '4' });
  let claimer: Dibs;
  let admin: Dibs;
  before(async () => {
    claimer = await openDibs(temp.store);
    admin = await openDibs(temp.store);
  });
  after(async () => {
    await claimer?.close();
    await admin?.close();
    await temp.drop();
  });

  it('a limit lowered or raised by another instance holds on the very next claim', async () => {
    await admin.pools.create({ name: 'p', perClaimantLimit: 3 });
    await admin.pools.importCodes(
      'p',
      Array.from({ length: 10 }, (_, i) => `P-${i}`),
    );

    // limit 3: served by claim.sql, and the claimer now believes the pool is not for the fast path
    assert.equal((await claimer.pools.claim('p', 'c1')).status, 'claimed');
    await admin.pools.update('p', { perClaimantLimit: 1 });
    const again = await claimer.pools.claim('p', 'c1');
    assert.equal(again.status, 'already-held', 'limit 1 holds although this instance last saw limit 3');
    assert.equal(again.held.length, 1);

    // limit 1 now: the fast statement serves c2; then raise the limit elsewhere
    assert.equal((await claimer.pools.claim('p', 'c2')).status, 'claimed');
    await admin.pools.update('p', { perClaimantLimit: 2 });
    const second = await claimer.pools.claim('p', 'c2');
    assert.equal(
      second.status,
      'claimed',
      'limit 2 gives a second code although this instance last used the fast statement',
    );
    assert.equal(second.held.length, 2);
    assert.equal((await claimer.pools.claim('p', 'c2')).status, 'already-held');

    const stats = await admin.pools.stats('p');
    assert.equal(stats.claimed, 3);
    assert.equal(stats.free, 7);
    assert.deepEqual(await admin.pools.audit('p'), []);
  });

  it('keyed claims on a limit-1 pool: replay, conflict, already-held, spent key', async () => {
    await admin.pools.create({ name: 'q' });
    await admin.pools.importCodes('q', ['Q-1', 'Q-2', 'Q-3']);
    const first = await claimer.pools.claim('q', 'a', { idempotencyKey: 'k1' });
    assert.equal(first.status, 'claimed');
    assert.equal(first.replayed, false);
    const replay = await claimer.pools.claim('q', 'a', { idempotencyKey: 'k1' });
    assert.deepEqual([replay.status, replay.code, replay.replayed], ['claimed', first.code, true]);
    await assert.rejects(
      claimer.pools.claim('q', 'b', { idempotencyKey: 'k1' }),
      (e: { code?: string }) => e.code === 'conflict',
    );
    const other = await claimer.pools.claim('q', 'a', { idempotencyKey: 'k2' });
    assert.deepEqual([other.status, other.code], ['already-held', first.code]);
    // k2 took nothing, so it was not recorded: after the release it claims afresh
    await admin.pools.release('q', first.code);
    const fresh = await claimer.pools.claim('q', 'a', { idempotencyKey: 'k2' });
    assert.deepEqual([fresh.status, fresh.replayed], ['claimed', false]);
    // k1's code is gone: the spent key is forgotten and claims afresh for the same claimant
    await admin.pools.release('q', fresh.code);
    const respent = await claimer.pools.claim('q', 'a', { idempotencyKey: 'k1' });
    assert.deepEqual([respent.status, respent.replayed], ['claimed', false]);
    const stats = await admin.pools.stats('q');
    assert.deepEqual([stats.claimed, stats.free], [1, 2]);
    assert.deepEqual(await admin.pools.audit('q'), []);
  });

  it('a replayed key answers its own code, not the other codes its claimant holds (limit 3)', async () => {
    // claim.sql answers a replay from the claimant's holdings filtered by the key: a claimant with
    // codes under several keys must get back only the one the replayed key took
    await admin.pools.create({ name: 'r', perClaimantLimit: 3 });
    await admin.pools.importCodes('r', ['R-1', 'R-2', 'R-3', 'R-4']);
    const one = await claimer.pools.claim('r', 'a', { idempotencyKey: 'k1' });
    const two = await claimer.pools.claim('r', 'a', { idempotencyKey: 'k2' });
    assert.notEqual(one.code, two.code);
    const replay = await claimer.pools.claimMany('r', 'a', 1, { idempotencyKey: 'k1' });
    assert.deepEqual([replay.status, replay.replayed], ['claimed', true]);
    assert.deepEqual(replay.codes, [one.code], 'only the code k1 took');
    assert.deepEqual([...replay.held].sort(), [one.code, two.code].sort());
    assert.deepEqual(await admin.pools.audit('r'), []);
  });
});
