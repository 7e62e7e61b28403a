/**
 * The `pools.finish-deletions` job on the Firestore emulator: a pool deletion whose deleter died
 * half-way leaves a tombstone and documents that, when the name is never created again, nobody else
 * removes. The step (`backend.pools.finishDeletions`, src/backends/firestore/pool-deletion.ts) takes
 * an expired tombstone over as createPool does, sweeps and deletes the tombstone without creating a
 * pool; a live lease is left alone, a pool re-created meanwhile is untouched, the work per run is
 * bounded. The job is registered only where the backend has the step.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Firestore } from '@google-cloud/firestore';
import { Dibs, openDibs } from '../../src/index.js';
import { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { Layout } from '../../src/backends/firestore/layout.js';
import { PoolDeletions, type PoolDeletionOptions } from '../../src/backends/firestore/pool-deletion.js';
import { TxRunner } from '../../src/backends/firestore/transactions.js';
import { FINISH_DELETIONS_EVERY_MS, JobRunner, standardJobs } from '../../src/jobs/runner.js';
import { rejectsWith, uniqueId } from '../support/assert.js';
import { documentsUnder, firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { tempSqliteStore } from '../support/sqlite.js';

const ALL = { deletions: 100, batches: 100_000 };

describe('firestore emulator: finishing pool deletions whose deleter died', {
  skip: !firestoreEmulatorInstalled(),
}, () => {
  const emulator = firestoreForSuite();
  const raw = () => new Firestore({ projectId: emulator.projectId, ignoreUndefinedProperties: true });

  async function store() {
    const prefix = uniqueId('fin');
    const dibs = await openDibs(emulator.storeUrl(prefix));
    const db = raw();
    const layout = new Layout(db, prefix);
    const poolRef = (name: string) => layout.pool(name).pool;
    const events = async (name: string) => (await layout.events.where('pool', '==', name).count().get()).data().count;
    const tombstone = (name: string) => layout.deletion(name).get();
    const finish = (budget = ALL) => dibs.backend.pools.finishDeletions!(budget);
    /** Codes, claims with keys, a redemption and unredeem (events), a multi-use code with uses. */
    async function populate(name: string, codes: number, uses: number) {
      await dibs.pools.create({ name, perClaimantLimit: 2, lowStockThreshold: codes - 1 });
      await dibs.pools.importCodes(
        name,
        Array.from({ length: codes }, (_, i) => `${name}-${i}`),
      );
      const held = (await dibs.pools.claimMany(name, 'c0', 2, { idempotencyKey: 'k0' })).codes;
      await dibs.pools.claimMany(name, 'c1', 2, { idempotencyKey: 'k1' });
      await dibs.pools.redeem(name, held[0]!, { claimant: 'c0' });
      await dibs.pools.unredeem(name, held[0]!);
      await dibs.pools.addMultiUseCode(name, { code: 'MULTI', uses: 100, usesPerClaimant: 1 });
      for (let i = 0; i < uses; i++) await dibs.pools.redeem(name, 'MULTI', { claimant: `u${i}`, orderId: `o${i}` });
      await dibs.pools.unredeem(name, 'MULTI', { orderId: 'o0' });
      assert.ok((await documentsUnder(poolRef(name))) > codes);
      assert.ok((await events(name)) > 0);
    }
    /** Deletes `name` with a deleter that crashes before batch `atBatch` (leaving a tombstone and documents). */
    async function crashDelete(name: string, atBatch: number, options: PoolDeletionOptions = {}) {
      const dying = new FirestoreBackend(
        raw(),
        prefix,
        {},
        {
          ...options,
          beforeBatch: (batch) => {
            if (batch === atBatch) throw new Error(`simulated crash before batch ${atBatch}`);
          },
        },
      );
      await assert.rejects(dying.pools.deletePool(name), /simulated crash/);
      await dying.close();
      assert.equal((await tombstone(name)).exists, true);
      assert.ok((await documentsUnder(poolRef(name))) > 0, 'the crash left documents behind');
    }
    const close = async () => {
      await dibs.close();
      await db.terminate();
    };
    return { prefix, dibs, db, layout, poolRef, events, tombstone, finish, populate, crashDelete, close };
  }

  it('a crashed deleter’s leftovers are gone after the job runs: no document under the pool, no event, no tombstone, no pool', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('gone', 30, 6);
      await s.populate('other', 5, 2); // a live pool beside it keeps everything
      const otherDocs = await documentsUnder(s.poolRef('other'));
      const otherEvents = await s.events('other');
      await s.crashDelete('gone', 4, { leaseMs: 300, batch: 5 });
      const tomb = await s.tombstone('gone');
      assert.ok((await s.events('gone')) > 0, 'and events');
      await sleep(500); // the dead deleter's lease runs out
      const runner = new JobRunner(standardJobs(s.dibs), {
        onError: (name, error) => assert.fail(`${name}: ${String(error)}`),
      });
      const results = await runner.runAll();
      assert.deepEqual(results['pools.finish-deletions'], { finished: 1, paused: 0 });
      assert.equal(await documentsUnder(s.poolRef('gone')), 0, 'no document left under the pool path');
      assert.equal((await s.poolRef('gone').get()).exists, false, 'no pool document was created');
      assert.equal(await s.events('gone'), 0, 'its events are deleted');
      assert.equal((await s.tombstone('gone')).exists, false, 'the tombstone is deleted');
      assert.equal((await s.layout.deletions.get()).size, 0);
      await rejectsWith(s.dibs.pools.get('gone'), 'not_found');
      assert.equal(await documentsUnder(s.poolRef('other')), otherDocs, 'the other pool keeps its documents');
      assert.equal(await s.events('other'), otherEvents, 'and its events');
      assert.deepEqual(await s.dibs.pools.audit('other'), []);
      // nothing left to do: a second run finds nothing
      assert.deepEqual(await s.finish(), { finished: 0, paused: 0 });
      // the name is free: created again, it is empty
      await s.dibs.pools.create({ name: 'gone' });
      assert.equal((await s.dibs.pools.stats('gone')).total, 0);
      assert.equal(tomb.get('n'), 0, 'the crashed deleter had not been taken over before the job');
    } finally {
      await s.close();
    }
  });

  it('a live lease is left alone: nothing deleted, the tombstone’s owner, lease and takeovers unchanged', {
    timeout: 120_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('p', 12, 3);
      await s.crashDelete('p', 2, { batch: 5 }); // the default 30 s lease, stopped after one batch
      const before = await documentsUnder(s.poolRef('p'));
      const events = await s.events('p');
      const tomb = (await s.tombstone('p')).data()!;
      const counters = (s.dibs.backend as FirestoreBackend).transactionCounters;
      const transactions = counters.transactions;
      assert.deepEqual(await s.finish(), { finished: 0, paused: 0 });
      assert.equal(
        counters.transactions,
        transactions,
        'the listing (by the server clock) skips a live lease without a transaction',
      );
      // and the takeover transaction itself refuses it (a lease renewed after the listing)
      assert.deepEqual(await new PoolDeletions(s.layout, new TxRunner(s.db)).finish('p'), 'skipped');
      assert.equal(await documentsUnder(s.poolRef('p')), before, 'nothing deleted');
      assert.equal(await s.events('p'), events, 'no event deleted');
      const after = (await s.tombstone('p')).data()!;
      assert.equal(after.owner, tomb.owner, 'the owner is still the deleter');
      assert.equal(after.exp, tomb.exp, 'its lease unchanged');
      assert.equal(after.n, 0, 'no takeover');
    } finally {
      await s.close();
    }
  });

  it('a pool re-created meanwhile is untouched — by a run that lists it late and by a finisher whose own lease was taken over', {
    timeout: 180_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('p', 12, 3);
      await s.crashDelete('p', 3, { leaseMs: 300, batch: 4 });
      await sleep(500);
      // a finisher takes the expired lease over, then stalls (here: dies) before its first batch
      const stalled = new PoolDeletions(s.layout, new TxRunner(s.db), {
        leaseMs: 300,
        beforeBatch: () => {
          throw new Error('finisher stalled');
        },
      });
      await assert.rejects(stalled.finish('p'), /finisher stalled/);
      const taken = (await s.tombstone('p')).data()!;
      assert.equal(taken.n, 1, 'the finisher took the lease over');
      await sleep(500);
      // its lease ran out too: createPool takes over in turn, finishes and creates the pool
      await s.dibs.pools.create({ name: 'p', perClaimantLimit: 2 });
      await s.dibs.pools.importCodes('p', ['NEW1', 'NEW2', 'NEW3']);
      await s.dibs.pools.claimMany('p', 'c0', 2, { idempotencyKey: 'k0' });
      const fresh = await documentsUnder(s.poolRef('p'));
      assert.ok(fresh > 3);
      // a finisher that listed the tombstone before the re-creation arrives late: nothing to take over
      assert.equal(await new PoolDeletions(s.layout, new TxRunner(s.db)).finish('p'), 'skipped');
      assert.deepEqual(await s.finish(), { finished: 0, paused: 0 });
      assert.equal(await documentsUnder(s.poolRef('p')), fresh, 'the new pool keeps all its documents');
      assert.equal((await s.dibs.pools.stats('p')).total, 3);
      assert.deepEqual(await s.dibs.pools.audit('p'), []);
    } finally {
      await s.close();
    }
  });

  it('the work per run is bounded: a run that spends its batches gives its lease back, the next runs go on until done', {
    timeout: 180_000,
  }, async () => {
    const s = await store();
    try {
      await s.populate('a', 40, 4);
      await s.populate('b', 10, 2);
      await s.crashDelete('a', 2, { leaseMs: 300, batch: 5 });
      await s.crashDelete('b', 2, { leaseMs: 300, batch: 5 });
      await sleep(500);
      // one deletion and 3 batches per run (the finisher's batch is the default 400: a is 40 codes, so
      // its multi-use code, codes, holders, keys, shards and events take more than 3 batches)
      const first = await s.finish({ deletions: 1, batches: 3 });
      assert.deepEqual(first, { finished: 0, paused: 1 });
      assert.equal((await s.tombstone('b')).get('n'), 0, 'only one deletion looked at');
      const paused = [await s.tombstone('a'), await s.tombstone('b')].find((t) => t.get('n') === 1)!;
      assert.ok(paused, 'one deletion was taken over');
      assert.ok((paused.get('exp') as number) <= paused.readTime.toMillis(), 'its lease was given back');
      let runs = 1;
      let finished = 0;
      while ((await s.layout.deletions.get()).size > 0) {
        assert.ok(++runs < 20, 'the runs make progress');
        const r = await s.finish({ deletions: 1, batches: 3 });
        finished += r.finished;
      }
      assert.equal(finished, 2);
      assert.ok(runs >= 4, `${runs} runs`);
      for (const name of ['a', 'b']) {
        assert.equal(await documentsUnder(s.poolRef(name)), 0, name);
        assert.equal(await s.events(name), 0, name);
      }
    } finally {
      await s.close();
    }
  });

  it('two services running the job at once: each deletion finished once, the other finds it gone or leased', {
    timeout: 180_000,
  }, async () => {
    const s = await store();
    const other = await openDibs(`${emulator.storeUrl(s.prefix)}`);
    try {
      for (const name of ['x', 'y', 'z']) await s.populate(name, 8, 2);
      for (const name of ['x', 'y', 'z']) await s.crashDelete(name, 2, { leaseMs: 300, batch: 3 });
      await sleep(500);
      const [r1, r2] = await Promise.all([s.finish(), other.backend.pools.finishDeletions!(ALL)]);
      assert.equal(r1.finished + r2.finished, 3, JSON.stringify([r1, r2]));
      assert.equal((await s.layout.deletions.get()).size, 0);
      for (const name of ['x', 'y', 'z']) assert.equal(await documentsUnder(s.poolRef(name)), 0, name);
    } finally {
      await other.close();
      await s.close();
    }
  });

  it('the job is registered, once a minute, only where the backend has the step', async () => {
    const s = await store();
    const temp = tempSqliteStore();
    const sqlite = await openDibs(temp.store);
    try {
      const job = standardJobs(s.dibs).find((j) => j.name === 'pools.finish-deletions');
      assert.ok(job, 'Firestore: registered');
      assert.equal(job.everyMs, FINISH_DELETIONS_EVERY_MS);
      assert.equal(FINISH_DELETIONS_EVERY_MS, 60_000);
      assert.equal(
        standardJobs(s.dibs, { everyMs: 50 }).find((j) => j.name === 'pools.finish-deletions')?.everyMs,
        60_000,
        'not every tick of the fast jobs',
      );
      assert.equal(typeof sqlite.backend.pools.finishDeletions, 'undefined');
      assert.deepEqual(
        standardJobs(sqlite).filter((j) => j.name === 'pools.finish-deletions'),
        [],
        'SQLite deletes a pool in one transaction: no job',
      );
      // a backend without the step, whatever its kind
      const pools = new Proxy(s.dibs.backend.pools, {
        get: (t, p) => (p === 'finishDeletions' ? undefined : Reflect.get(t, p)),
      });
      const without = new Dibs({ ...s.dibs.backend, pools } as never);
      assert.ok(!standardJobs(without).some((j) => j.name === 'pools.finish-deletions'));
    } finally {
      await sqlite.close();
      temp.cleanup();
      await s.close();
    }
  });
});
