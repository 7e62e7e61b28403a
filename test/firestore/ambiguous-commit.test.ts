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
import { isDibsError } from '../../src/core/errors.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { injectCommitFaults, writtenPaths, type CommitFaultOptions } from '../support/firestore-faults.js';

const writes = (fragment: string) => (request: Parameters<NonNullable<CommitFaultOptions['when']>>[0]) => writtenPaths(request).some((p) => p.includes(fragment));

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

  it('an unkeyed claim whose commit answer is lost hands out one code, and answers it', { timeout: 120_000 }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes('p', Array.from({ length: 10 }, (_, i) => `C${i}`));
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

  it('a claim whose commit never left the client is run again (nothing was applied)', { timeout: 120_000 }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.pools.create({ name: 'p', perClaimantLimit: 3 });
      await dibs.pools.importCodes('p', Array.from({ length: 10 }, (_, i) => `C${i}`));
      const faults = injectCommitFaults(db, { when: writes('/codes/'), mode: 'not-sent' });
      const result = await dibs.pools.claim('p', 'bob');
      faults.stop();
      assert.equal(faults.injected, 1);
      assert.deepEqual((await dibs.pools.holdings('p', 'bob')).map((c) => c.code), [result.code]);
      assert.deepEqual(await dibs.pools.audit('p'), []);
    });
  });

  it('an unkeyed buy whose commit answer is lost sells once, and answers that order', { timeout: 120_000 }, async () => {
    await withDibs(async (dibs, db) => {
      await dibs.sales.create({ id: 's1', sku: 'SKU-1', startsAt: new Date(Date.now() - 1000).toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString(), cap: 10, perCustomerLimit: 5 });
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

  it('a counter increment whose commit answer is lost counts once (or answers unavailable)', { timeout: 120_000 }, async () => {
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
});
