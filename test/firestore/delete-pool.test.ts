/**
 * deletePool on the Firestore emulator: the pool document and a deletion tombstone with a lease in
 * one transaction, then the rest in fenced batches (src/backends/firestore/pool-deletion.ts). A pool
 * re-created under the same name inherits nothing — after a clean deletion, after a deleter that
 * died half-way (its lease expires, the creator finishes the work), and a creator never runs while a
 * deleter's lease is live; a deleter whose lease was taken over deletes nothing more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore, Timestamp } from '@google-cloud/firestore';
import { Dibs, isDibsError, openDibs } from '../../src/index.js';
import { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { Layout } from '../../src/backends/firestore/layout.js';
import { PoolDeletions, type PoolDeletionOptions } from '../../src/backends/firestore/pool-deletion.js';
import { FirestorePools } from '../../src/backends/firestore/pools.js';
import type { PoolSpec } from '../../src/core/pools/types.js';
import { TxRunner } from '../../src/backends/firestore/transactions.js';
import { rejectsWith, uniqueId } from '../support/assert.js';
import { documentsUnder, firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore emulator: deletePool', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();
  const raw = () => new Firestore({ projectId: emulator.projectId, ignoreUndefinedProperties: true });

  /** One store (prefix), a dibs on it, a raw client to look at its documents, and a builder for a pool with some of everything. */
  async function store(options: { url?: string } = {}) {
    const prefix = uniqueId('del');
    const url = emulator.storeUrl(prefix) + (options.url ?? '');
    const dibs = await openDibs(url);
    const db = raw();
    const layout = new Layout(db, prefix);
    const poolRef = (name: string) => layout.pool(name).pool;
    const events = async (name: string) => (await layout.events.where('pool', '==', name).count().get()).data().count;
    const tombstone = (name: string) => layout.deletion(name).get();
    /** Codes, claims with keys (holders, keys, shards), a redemption, a multi-use code with uses, events. */
    async function populate(name: string, codes: number, claimants: number, uses: number) {
      await dibs.pools.create({ name, perClaimantLimit: 2, lowStockThreshold: codes - 1 }); // the first claim records pool.low_stock
      await dibs.pools.importCodes(
        name,
        Array.from({ length: codes }, (_, i) => `OLD${i}`),
      );
      // claims and uses 10 at a time, not one by one: the same documents, in a fraction of the time
      // (150 claims one after another took most of (d)'s 300 s on a loaded machine)
      const inTens = async (n: number, one: (i: number) => Promise<void>) => {
        for (let from = 0; from < n; from += 10)
          await Promise.all(Array.from({ length: Math.min(10, n - from) }, (_, k) => one(from + k)));
      };
      const held: Record<string, string[]> = {};
      await inTens(claimants, async (i) => {
        held[`c${i}`] = (await dibs.pools.claimMany(name, `c${i}`, 2, { idempotencyKey: `key-${i}` })).codes;
      });
      await dibs.pools.redeem(name, held.c0![0]!, { claimant: 'c0' });
      await dibs.pools.unredeem(name, held.c0![0]!); // code.unredeemed
      await dibs.pools.redeem(name, held.c0![0]!, { claimant: 'c0' });
      await dibs.pools.addMultiUseCode(name, { code: 'MULTI', uses: 1000, usesPerClaimant: 1 });
      await inTens(uses, async (i) => {
        await dibs.pools.redeem(name, 'MULTI', { claimant: `u${i}`, orderId: `order-${i}` });
      });
      await dibs.pools.unredeem(name, 'MULTI', { orderId: 'order-0' }); // code.unredeemed
      await dibs.pools.redeem(name, 'MULTI', { claimant: 'u0', orderId: 'order-0' });
      assert.ok((await documentsUnder(poolRef(name))) > codes);
      assert.ok((await events(name)) > 0);
      return held;
    }
    /** The same name again, empty: nothing of the old pool is visible or counted. */
    async function assertFresh(name: string, held: Record<string, string[]>) {
      assert.equal((await tombstone(name)).exists, false, 'the tombstone is gone');
      const pool = await dibs.pools.get(name);
      assert.deepEqual(pool.stats, { ...pool.stats, total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 });
      assert.equal(await documentsUnder(poolRef(name)), 0, 'no document of the old pool is left');
      assert.equal(await events(name), 0, 'no event of the old pool is left');
      await rejectsWith(dibs.pools.code(name, 'OLD0'), 'not_found');
      await rejectsWith(dibs.pools.code(name, 'MULTI'), 'not_found');
      await dibs.pools.importCodes(name, ['NEW1', 'NEW2', 'NEW3']);
      // c0 held 2 codes (the limit) with key-0: neither the holding nor the key carries over
      const again = await dibs.pools.claimMany(name, 'c0', 2, { idempotencyKey: 'key-0' });
      assert.equal(again.replayed, false);
      assert.equal(again.status, 'claimed');
      assert.equal(again.codes.length, 2);
      for (const code of again.codes) assert.match(code, /^NEW/);
      assert.deepEqual(new Set(again.held), new Set(again.codes));
      assert.ok(!again.codes.some((c) => held.c0!.includes(c)));
      const stats = await dibs.pools.stats(name);
      assert.deepEqual([stats.total, stats.free, stats.claimed, stats.redeemed], [3, 1, 2, 0]);
      assert.deepEqual(await dibs.pools.audit(name), []);
    }
    /** A second backend on the same store whose deleter is configured (e.g. to crash between two batches). */
    function deleter(deletion: PoolDeletionOptions) {
      return new FirestoreBackend(raw(), prefix, {}, deletion);
    }
    const close = async () => {
      await dibs.close();
      await db.terminate();
    };
    return { prefix, dibs, db, layout, poolRef, events, tombstone, populate, assertFresh, deleter, close };
  }

  const crash = (atBatch: number) => (batch: number) => {
    if (batch === atBatch) throw new Error(`simulated crash before batch ${atBatch}`);
  };

  it('(a) delete then re-create the same name: the new pool is empty, no holder, key, code or event carried over', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      const held = await s.populate('p', 20, 3, 4);
      await s.dibs.pools.delete('p');
      await rejectsWith(s.dibs.pools.get('p'), 'not_found');
      await rejectsWith(s.dibs.pools.delete('p'), 'not_found');
      assert.equal(await documentsUnder(s.poolRef('p')), 0);
      assert.equal(await s.events('p'), 0);
      assert.equal((await s.tombstone('p')).exists, false);
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 });
      await s.assertFresh('p', held);
    } finally {
      await s.close();
    }
  });

  it('(b) a deleter that died half-way: its lease expires, createPool finishes the cleanup, the new pool inherits nothing', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      const held = await s.populate('p', 40, 5, 9);
      // small batches: the multi-use code's uses take several, the codes several more; it dies before the 7th, two batches into the codes
      const dying = s.deleter({ leaseMs: 400, batch: 6, beforeBatch: crash(7) });
      await assert.rejects(dying.pools.deletePool('p'), /simulated crash before batch 7/);
      await dying.close();
      await rejectsWith(s.dibs.pools.get('p'), 'not_found');
      await rejectsWith(s.dibs.pools.claim('p', 'c0'), 'not_found');
      assert.ok((await documentsUnder(s.poolRef('p'))) > 0, 'the crash left documents behind');
      assert.ok((await s.events('p')) > 0, 'and events');
      assert.equal((await s.tombstone('p')).exists, true);
      await sleep(600); // the dead deleter's lease runs out
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 });
      assert.equal((await s.tombstone('p')).exists, false);
      await s.assertFresh('p', held);
    } finally {
      await s.close();
    }
  });

  it('(c) createPool while a deleter holds a live lease: a retriable conflict, nothing created or deleted', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('p', 10, 2, 2);
      const stuck = s.deleter({ beforeBatch: crash(1) }); // the default 30 s lease, stopped before its first batch
      await assert.rejects(stuck.pools.deletePool('p'), /simulated crash/);
      await stuck.close();
      const before = await documentsUnder(s.poolRef('p'));
      const owner = (await s.tombstone('p')).get('owner') as string;
      const refused = await s.dibs.pools.create({ name: 'p' }).then(
        () => null,
        (error: unknown) => error,
      );
      assert.ok(isDibsError(refused, 'conflict'), `a conflict, not ${String(refused)}`);
      assert.equal(refused.retriable, true);
      assert.match(refused.message, /still being deleted/);
      assert.ok(Number(refused.details?.retryAfterMs) > 0);
      await rejectsWith(s.dibs.pools.get('p'), 'not_found');
      assert.equal((await s.poolRef('p').get()).exists, false, 'no pool document');
      assert.equal((await s.tombstone('p')).get('owner'), owner, 'the lease is still the deleter’s');
      assert.equal(await documentsUnder(s.poolRef('p')), before, 'the refused creator deleted nothing');
      await rejectsWith(s.dibs.pools.delete('p'), 'not_found');
    } finally {
      await s.close();
    }
  });

  it('(d) a pool of more documents than one batch (1,200 codes, claims, keys, uses, events) is deleted completely', {
    timeout: 300_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('big', 1200, 150, 5);
      // more outbox events than one batch (a pool records them only for low stock and unredeems:
      // these are written as the outbox stores them), and one of another pool that must stay
      const at = Timestamp.now();
      for (let chunk = 0; chunk < 3; chunk++) {
        const batch = s.db.batch();
        for (let i = 0; i < 150; i++) {
          const id = String(BigInt(at.toMillis()) * 1000000n + BigInt(chunk * 1000 + i)).padStart(26, '0');
          batch.set(s.layout.events.doc(id), {
            pool: 'big',
            type: 'code.unredeemed',
            key: `synthetic:${chunk}:${i}`,
            payload: {},
            at,
            p: at.toMillis(),
            d: at.toMillis(),
            a: 0,
          });
        }
        await batch.commit();
      }
      await s.dibs.pools.create({ name: 'other' });
      await s.layout.events.doc('9'.repeat(26)).set({
        pool: 'other',
        type: 'code.unredeemed',
        key: 'other',
        payload: {},
        at,
        p: at.toMillis(),
        d: at.toMillis(),
        a: 0,
      });
      const before = await documentsUnder(s.poolRef('big'));
      assert.ok(before > 1200 + 300, `${before} documents`);
      assert.ok((await s.events('big')) > 450, 'more events than one batch');
      await s.dibs.pools.delete('big');
      assert.equal(await documentsUnder(s.poolRef('big')), 0);
      assert.equal(await s.events('big'), 0);
      assert.equal(await s.events('other'), 1, 'another pool keeps its events');
      assert.equal((await s.tombstone('big')).exists, false);
    } finally {
      await s.close();
    }
  });

  it('(e) a deleter whose lease was taken over deletes nothing of the re-created pool', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      const held = await s.populate('p', 12, 2, 2);
      // a deleter that stalls after its first step (a long GC pause, a frozen VM) for longer than its lease
      const slow = new PoolDeletions(s.layout, new TxRunner(s.db), { leaseMs: 300 });
      const owner = await slow.begin('p');
      await sleep(500);
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 }); // takes the lease over, finishes, creates
      await s.assertFresh('p', held);
      const fresh = await documentsUnder(s.poolRef('p'));
      assert.ok(fresh > 0);
      // the stalled deleter wakes up: it finds its lease gone and stops
      assert.equal(await slow.sweep('p', owner), false);
      assert.equal(await slow.end('p', owner), false);
      assert.equal(await documentsUnder(s.poolRef('p')), fresh, 'the new pool kept all its documents');
      assert.deepEqual(await s.dibs.pools.audit('p'), []);
      assert.equal((await s.dibs.pools.stats('p')).total, 3);
    } finally {
      await s.close();
    }
  });

  it('(e2) a creator whose every takeover is taken over in turn answers unavailable once its bound has passed', {
    timeout: 60_000,
  }, async () => {
    const s = await store();
    const creatorDb = raw();
    try {
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 });
      await s.dibs.pools.importCodes('p', ['OLD1', 'OLD2']);
      const dead = new PoolDeletions(s.layout, new TxRunner(s.db), { leaseMs: 300 });
      await dead.begin('p');
      await sleep(500);
      // before each of the creator's batches another deleter takes the lease and lets it lapse at once:
      // the batch finds the tombstone someone else's, and the next round takes it over again
      let stealNext = false;
      let steals = 0;
      const original = creatorDb.runTransaction.bind(creatorDb);
      creatorDb.runTransaction = (async (...args: Parameters<Firestore['runTransaction']>) => {
        if (stealNext) {
          stealNext = false;
          steals++;
          await s.layout.deletion('p').update({ owner: `thief-${steals}`, exp: 0 });
        }
        return original(...args);
      }) as Firestore['runTransaction'];
      const bound = 1500;
      const creator = new FirestorePools(
        new Layout(creatorDb, s.prefix),
        new TxRunner(creatorDb, bound),
        {},
        {
          beforeBatch: () => void (stealNext = true),
        },
      );
      const spec: PoolSpec = {
        name: 'p',
        perClaimantLimit: 2,
        lowStockThreshold: null,
        metadata: {},
        startsAt: null,
        expiresAt: null,
        maxRedemptions: null,
        maxRedemptionsPerClaimant: null,
        publicCodes: false,
        codeFormat: null,
      };
      const started = Date.now();
      const outcome = await creator.createPool(spec).catch((e: unknown) => e);
      const took = Date.now() - started;
      assert.ok(isDibsError(outcome, 'unavailable'), `answered ${String(outcome)} after ${steals} rounds`);
      assert.equal(outcome.retriable, true);
      assert.match(outcome.message, /gave up after \d+ contended attempts .* \(the bound is 1500 ms\)/);
      assert.ok(steals > 1, `${steals} rounds`);
      assert.ok(took < bound + 5000, `answered after ${took} ms`);
      await rejectsWith(s.dibs.pools.get('p'), 'not_found');
      // left alone, the next creator takes over, finishes and creates
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 });
      assert.equal((await s.dibs.pools.stats('p')).total, 0);
      assert.equal((await s.tombstone('p')).exists, false);
    } finally {
      await creatorDb.terminate();
      await s.close();
    }
  });

  it('(f) a deleter whose lease a creator took over, while that creator is still at work, stops at once', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('p', 12, 2, 2);
      const slow = new PoolDeletions(s.layout, new TxRunner(s.db), { leaseMs: 300 });
      const owner = await slow.begin('p');
      await sleep(500);
      // a creator takes the expired lease over, then stalls before its first batch
      const creator = s.deleter({ beforeBatch: crash(1) });
      await assert.rejects(new Dibs(creator).pools.create({ name: 'p' }), /simulated crash/);
      await creator.close();
      const tomb = await s.tombstone('p');
      assert.notEqual(tomb.get('owner'), owner);
      assert.equal(tomb.get('n'), 1, 'one takeover');
      const left = await documentsUnder(s.poolRef('p'));
      assert.ok(left > 0);
      // the first deleter wakes up: the tombstone is another owner's, so it deletes nothing and leaves it
      assert.equal(await slow.sweep('p', owner), false);
      assert.equal(await slow.end('p', owner), false);
      assert.equal(await documentsUnder(s.poolRef('p')), left);
      assert.equal((await s.tombstone('p')).get('owner'), tomb.get('owner'));
      // and the creator's live lease still refuses another creator
      await rejectsWith(s.dibs.pools.create({ name: 'p' }), 'conflict');
    } finally {
      await s.close();
    }
  });

  it('(g) two creators after a dead deleter: one takes over and creates, the other is refused; the pool is fresh', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    const other = await openDibs(emulator.storeUrl(s.prefix));
    try {
      const held = await s.populate('p', 30, 3, 3);
      const dying = s.deleter({ leaseMs: 300, batch: 5, beforeBatch: crash(3) });
      await assert.rejects(dying.pools.deletePool('p'), /simulated crash/);
      await dying.close();
      await sleep(500);
      const results = await Promise.allSettled([
        s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 }),
        other.pools.create({ name: 'p', perClaimantLimit: 2 }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.status)));
      assert.ok(
        isDibsError(lost[0]!.reason, 'conflict') || isDibsError(lost[0]!.reason, 'already_exists'),
        String(lost[0]!.reason),
      );
      await s.assertFresh('p', held);
    } finally {
      await other.close();
      await s.close();
    }
  });

  it('deleteLeaseMs in the store URL is checked', async () => {
    await rejectsWith(openDibs(`${emulator.storeUrl()}&deleteLeaseMs=5`), 'invalid_input', 'store');
    const dibs = await openDibs(`${emulator.storeUrl()}&deleteLeaseMs=1000`);
    await dibs.close();
  });
});
