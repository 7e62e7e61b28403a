/**
 * A commit whose answer is lost: the emulator applies it and the client is told UNAVAILABLE
 * (injected under the client, at its gRPC stub: test/support/firestore-faults.ts). Whatever the
 * client's retry and dibs' TxRunner then do, a step must take effect at most once, and its caller
 * must get that step's answer (or `unavailable`): an unkeyed claim never hands out a second code,
 * a buy never sells twice, a counter never counts twice, and `tryAcquire` never answers null while
 * the caller holds the lease.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import type { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { FieldValue } from '@google-cloud/firestore';
import { setTimeout as sleep } from 'node:timers/promises';
import { TxRunner } from '../../src/backends/firestore/transactions.js';
import { FirestoreCounters } from '../../src/backends/firestore/counters.js';
import { translateFirestoreError } from '../../src/backends/firestore/index.js';
import { translateErrors } from '../../src/backends/shared/translate-errors.js';
import { isDibsError } from '../../src/core/errors.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { injectCommitFaults, writtenPaths, type CommitFaultOptions } from '../support/firestore-faults.js';

const writes = (fragment: string) => (request: Parameters<NonNullable<CommitFaultOptions['when']>>[0]) =>
  writtenPaths(request).some((p) => p.includes(fragment));

describe('firestore emulator: ambiguous commits', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  async function withDibs(fn: (dibs: Dibs, db: FirestoreBackend['layout']['db']) => Promise<void>): Promise<void> {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await fn(dibs, (dibs.backend as FirestoreBackend).layout.db);
    } finally {
      await dibs.close();
    }
  }

  it('an unkeyed claim whose commit answer is lost hands out one code, and answers it', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes(
        'p',
        Array.from({ length: 10 }, (_, i) => `C${i}`),
      );
      const faults = injectCommitFaults(db, { when: writes('/codes/') });
      const result = await dibs.pools.claim('p', 'alice');
      faults.stop();
      assert.equal(faults.injected, 1);
      const held = (await dibs.pools.holdings('p', 'alice')).map((c) => c.code);
      assert.deepEqual(held, [result.code], `alice holds ${held.length} codes after one claim`);
      assert.equal(result.status, 'claimed');
      assert.equal((await dibs.pools.stats('p')).claimed, 1);
      assert.deepEqual(await dibs.pools.audit('p'), []);
    });
  });

  it('a claim whose commit never left the client is run again (nothing was applied)', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes(
        'p',
        Array.from({ length: 10 }, (_, i) => `C${i}`),
      );
      const faults = injectCommitFaults(db, { when: writes('/codes/'), mode: 'not-sent' });
      const result = await dibs.pools.claim('p', 'bob');
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.deepEqual(
        (await dibs.pools.holdings('p', 'bob')).map((c) => c.code),
        [result.code],
      );
      assert.deepEqual(await dibs.pools.audit('p'), []);
    });
  });

  it('an unkeyed buy whose commit answer is lost sells once, and answers that order', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.sales.create({
        id: 's1',
        sku: 'SKU-1',
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 10,
        perCustomerLimit: 5,
      });
      const faults = injectCommitFaults(db, { when: writes('/orders/') });
      const result = await dibs.sales.buy('s1', 'carol', 1);
      faults.stop();
      assert.equal(faults.injected, 1);
      const sale = await dibs.sales.get('s1');
      assert.equal(sale.stats.sold, 1, `sold ${sale.stats.sold} units for one buy of 1`);
      assert.equal(result.order.quantity, 1);
      assert.deepEqual(await dibs.sales.audit('s1'), []);
    });
  });

  it('tryAcquire whose commit answer is lost returns the lease it holds', { timeout: 120_000 }, async () => {
    await withDibs(async (dibs, db) => {
      const faults = injectCommitFaults(db, { when: writes('/locks/') });
      const lease = await dibs.locks.tryAcquire('job', { ttlMs: 60_000 });
      faults.stop();
      assert.equal(faults.injected, 1);
      const info = await dibs.locks.inspect('job');
      assert.equal(info.holders.length, 1, 'the lease was granted');
      assert.ok(lease, 'tryAcquire answered null while the caller holds the lease');
      assert.equal(info.holders[0]!.tokenPrefix, lease.token.slice(0, 8));
      assert.equal(info.holders[0]!.fence, lease.fence);
      await dibs.locks.release(lease);
      assert.equal((await dibs.locks.inspect('job')).holders.length, 0);
    });
  });

  it('renew and release whose commit answers are lost are answered from the lock document', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      const lease = await dibs.locks.acquire('job', { ttlMs: 5_000 });
      let faults = injectCommitFaults(db, { when: writes('/locks/') });
      const renewed = await dibs.locks.renew(lease, { ttlMs: 60_000 });
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.equal(renewed.fence, lease.fence);
      assert.ok(renewed.validForMs > 10_000, `renewed for ${renewed.validForMs} ms`);
      assert.equal((await dibs.locks.inspect('job')).holders[0]?.expiresAt, renewed.expiresAt);
      faults = injectCommitFaults(db, { when: writes('/locks/') });
      await dibs.locks.release(renewed);
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.equal((await dibs.locks.inspect('job')).holders.length, 0);
      const next = await dibs.locks.tryAcquire('job', { ttlMs: 5_000 });
      assert.ok(next && next.fence > lease.fence);
    });
  });

  it('a counter increment whose commit answer is lost counts once (or answers unavailable)', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      const faults = injectCommitFaults(db, { when: writes('/counters/') });
      let answered: number | null = null;
      try {
        answered = (await dibs.counters.incr('visits', 1)).value;
      } catch (error) {
        assert.ok(isDibsError(error, 'unavailable'), `expected unavailable, got ${String(error)}`);
      }
      faults.stop();
      assert.equal(faults.injected, 1);
      const value = (await dibs.counters.get('visits')).value;
      assert.equal(value, 1, `one increment of 1 counted ${value}`);
      if (answered !== null) assert.equal(answered, 1);
    });
  });

  it('release, redeem and revoke whose commit answers are lost are answered from the code', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes('p', ['R1', 'R2', 'R3']);
      const codes = (await dibs.pools.claimMany('p', 'dave', 3)).codes;
      const lost = async <T>(step: () => Promise<T>): Promise<T> => {
        const faults = injectCommitFaults(db, { when: writes('/codes/') });
        try {
          return await step();
        } finally {
          faults.stop();
          assert.equal(faults.injected, 1);
        }
      };
      assert.equal((await lost(() => dibs.pools.release('p', codes[0]!, { claimant: 'dave' }))).status, 'free');
      assert.equal((await lost(() => dibs.pools.redeem('p', codes[1]!, { claimant: 'dave' }))).status, 'redeemed');
      assert.equal((await lost(() => dibs.pools.revoke('p', codes[2]!))).status, 'revoked');
      const stats = await dibs.pools.stats('p');
      assert.deepEqual([stats.free, stats.claimed, stats.redeemed, stats.revoked], [1, 0, 1, 1]);
      assert.deepEqual(await dibs.pools.audit('p'), []);
    });
  });

  it('a step that cannot read its outcome back answers unavailable (ambiguous), applied once', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes('p', ['H1']);
      const { code } = await dibs.pools.claim('p', 'erin');
      const faults = injectCommitFaults(db, { when: writes('/codes/') });
      await assert.rejects(dibs.pools.hold('p', code, 'erin', 60_000), (error: unknown) => {
        assert.ok(isDibsError(error, 'unavailable'), String(error));
        assert.equal(error.retriable, true);
        assert.equal(error.details?.ambiguous, true);
        assert.equal(typeof error.details?.retryAfterMs, 'number');
        return true;
      });
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.equal((await dibs.pools.code('p', code)).hold?.claimant, 'erin', 'the hold was applied, once');
      assert.deepEqual(await dibs.pools.audit('p'), []);
    });
  });

  it('concurrent claims and buys from two clients, with lost and unsent commits: every call takes effect at most once', {
    timeout: 300_000,
  }, async () => {
    // one claim per transaction: 40 claim commits to hit
    const store = `${emulator.storeUrl()}&groupMax=1`;
    const a = await openDibs(store);
    const b = await openDibs(store);
    try {
      await a.pools.create({ name: 'p', perClaimantLimit: 3 });
      await a.pools.importCodes(
        'p',
        Array.from({ length: 80 }, (_, i) => `M${i}`),
      );
      await a.sales.create({
        id: 's',
        sku: 'SKU-M',
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 200,
        perCustomerLimit: 5,
      });
      const faults = [a, b].flatMap((d) => {
        const db = (d.backend as FirestoreBackend).layout.db;
        let seen = 0; // every third matching commit, whichever injector sees it first
        const hit = (request: Parameters<NonNullable<CommitFaultOptions['when']>>[0]) =>
          (writes('/codes/')(request) || writes('/sales/')(request)) && seen++ % 3 === 0;
        return [
          injectCommitFaults(db, { when: hit, times: 12 }),
          injectCommitFaults(db, { when: hit, times: 4, mode: 'not-sent' }),
        ];
      });
      const claimants = Array.from({ length: 40 }, (_, i) => `c${i}`);
      const claims = await Promise.allSettled(claimants.map((c, i) => (i % 2 ? a : b).pools.claim('p', c)));
      const buys = await Promise.allSettled(claimants.map((c, i) => (i % 2 ? b : a).sales.buy('s', c, 1)));
      for (const f of faults) f.stop();
      const injected = faults.reduce((n, f) => n + f.injected, 0);
      assert.ok(injected >= 8, `only ${injected} faults injected`);
      let unclear = 0;
      for (const [i, outcome] of claims.entries()) {
        const held = (await a.pools.holdings('p', claimants[i]!)).map((c) => c.code);
        if (outcome.status === 'fulfilled') {
          assert.deepEqual(held, [outcome.value.code], `${claimants[i]} claimed once and holds ${held.join(', ')}`);
        } else {
          assert.ok(isDibsError(outcome.reason, 'unavailable'), String(outcome.reason));
          assert.ok(
            held.length <= 1,
            `${claimants[i]} claimed once, was answered unavailable and holds ${held.length}`,
          );
          unclear++;
        }
      }
      assert.deepEqual(await a.pools.audit('p'), []);
      const boughtOk = buys.filter((o) => o.status === 'fulfilled').length;
      const saleRefs = (a.backend as FirestoreBackend).layout.sale('s');
      let units = 0;
      for (const [i, outcome] of buys.entries()) {
        const ordered = Number((await saleRefs.customer(claimants[i]!).get()).get('o') ?? 0);
        units += ordered;
        if (outcome.status === 'fulfilled')
          assert.equal(ordered, 1, `${claimants[i]} bought 1 once and has ${ordered} units`);
        else {
          assert.ok(isDibsError(outcome.reason, 'unavailable'), String(outcome.reason));
          assert.ok(ordered <= 1, `${claimants[i]} bought 1 once, was answered unavailable and has ${ordered} units`);
        }
      }
      const sold = (await a.sales.get('s')).stats.sold;
      assert.equal(sold, units);
      assert.deepEqual(await a.sales.audit('s'), []);
      console.log(
        `  faults injected: ${injected}; claims answered unavailable: ${unclear}; buys answered: ${boughtOk}/40, sold ${sold}`,
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('an idempotency record whose create answer is lost starts its request (not in flight to itself)', {
    timeout: 120_000,
  }, async () => {
    await withDibs(async (dibs, db) => {
      const faults = injectCommitFaults(db, { when: writes('/idempotency/') });
      const begun = await dibs.backend.service.beginIdempotent('scope', 'order-9', 'fp', 60_000);
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.equal(begun.state, 'started', `the request that created the record was told ${begun.state}`);
      assert.equal((await dibs.backend.service.beginIdempotent('scope', 'order-9', 'fp', 60_000)).state, 'in_flight');
    });
  });

  // A blind increment retries outside TxRunner (counters.ts): it kept its own count of 20 and then
  // threw the driver's ABORTED, which the edge answered as a 500.
  it('an increment refused for contention every time answers unavailable once its bound has passed, counting nothing', async () => {
    await withDibs(async (dibs, db) => {
      const backend = dibs.backend as FirestoreBackend;
      const bound = 1500;
      // the backend's own counters, with a short bound, behind the same translation as the backend's
      const counters = translateErrors(
        new FirestoreCounters(backend.layout, new TxRunner(db, bound)),
        translateFirestoreError,
      );
      const faults = injectCommitFaults(db, { when: writes('/shards/'), times: Infinity, mode: 'aborted' });
      const started = Date.now();
      const outcome = await counters.incr('hot', 1).catch((error: unknown) => error);
      const took = Date.now() - started;
      faults.stop();
      assert.ok(isDibsError(outcome, 'unavailable'), `answered ${String(outcome)} after ${faults.injected} refusals`);
      assert.equal(outcome.retriable, true);
      assert.equal(outcome.details?.retryAfterMs, 1000);
      assert.match(outcome.message, /gave up after \d+ contended attempts .* \(the bound is 1500 ms\)/);
      assert.ok(faults.injected > 1, `${faults.injected} refusals`);
      assert.ok(took < bound + 3000, `answered after ${took} ms`);
      assert.equal((await dibs.counters.get('hot')).value, 0, 'a refused increment counted');
      // and a contention refusal that escapes any other way is `unavailable` at the edge too
      const aborted = injectCommitFaults(db, { mode: 'aborted' });
      const raw = await db
        .runTransaction(async (tx) => void tx.set(db.collection('x').doc('y'), { n: 1 }), { maxAttempts: 1 })
        .catch((error: unknown) => error);
      aborted.stop();
      assert.equal((raw as { code?: unknown }).code, 10, `the driver answered ${String(raw)}`);
      assert.ok(isDibsError(translateFirestoreError(raw), 'unavailable'), 'ABORTED is translated to unavailable');
    });
  });

  // Not a lost answer but its neighbour: a step that never wins must still answer (issue #27).
  it('a step that keeps losing to contention answers unavailable once its bound has passed', async () => {
    await withDibs(async (_dibs, db) => {
      const doc = db.collection('contended').doc(`d-${Date.now()}`);
      await doc.set({ n: 0 });
      let writing = true;
      const writer = (async () => {
        while (writing) await doc.update({ n: FieldValue.increment(1) });
      })();
      const bound = 1500;
      const runner = new TxRunner(db, bound);
      const started = Date.now();
      let attempts = 0;
      try {
        // a guarded write of a document that moves all the time: every commit fails its guard
        const outcome = await runner
          .run(
            async (tx) => {
              attempts++;
              const snap = await doc.get();
              await sleep(50);
              tx.update(doc, { mine: attempts }, { lastUpdateTime: snap.updateTime! });
              return 'won';
            },
            undefined,
            { optimistic: true },
          )
          .catch((error: unknown) => error);
        const took = Date.now() - started;
        assert.ok(isDibsError(outcome, 'unavailable'), `answered ${String(outcome)} after ${attempts} attempts`);
        assert.equal(outcome.retriable, true);
        assert.match(outcome.message, /gave up after \d+ contended attempts .* \(the bound is 1500 ms\)/);
        assert.ok(attempts > 1, `${attempts} attempts`);
        // the bound, plus one attempt in flight (a read, 50 ms, a commit) on a loaded machine
        assert.ok(took < bound + 3000, `answered after ${took} ms`);
      } finally {
        writing = false;
        await writer;
      }
    });
  });
});
