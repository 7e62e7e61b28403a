/**
 * Flash sales, carts, outbox delivery and forecasts on the Firestore emulator: the sale, cart,
 * outbox and forecast conformance suites, unchanged (each store on a fresh prefix of this file's own
 * emulator), the forecast alert raced by several processes, and grouped steps whose refusals rest
 * on reads that a concurrent step moved in between.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DocumentReference } from '@google-cloud/firestore';
import type { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { encodeId } from '../../src/backends/firestore/layout.js';
import { isDibsError } from '../../src/core/errors.js';
import { openDibs, type Dibs } from '../../src/index.js';
import { cartConformance } from '../conformance/carts.js';
import { firestoreCartTamper } from '../support/cart-tamper.js';
import { forecastConformance } from '../conformance/forecast.js';
import { outboxConformance } from '../conformance/outbox.js';
import { saleConformance } from '../conformance/sales.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { assertAlertRace } from '../support/forecast-race.js';

describe('firestore sales (the official emulator, started by the test)', {
  skip: !firestoreEmulatorInstalled(),
}, () => {
  const emulator = firestoreForSuite();
  const open = async () => {
    const store = emulator.storeUrl();
    const dibs = await openDibs(store);
    return { dibs, store, cleanup: () => dibs.close() };
  };
  saleConformance('firestore', open);
  cartConformance('firestore', open, firestoreCartTamper);
  outboxConformance('firestore', open);

  let dibs: Dibs | undefined;
  before(async () => {
    dibs = await openDibs(emulator.storeUrl());
  });
  after(async () => {
    await dibs?.close();
  });
  forecastConformance('firestore', {
    get dibs() {
      if (!dibs) throw new Error('the store is opened in before()');
      return dibs;
    },
  });

  /**
   * Runs `meanwhile` once, just before `dibs` first reads `customer`'s document of a sale with a
   * plain read: in a grouped step, after its read of the sale document and before its other reads.
   */
  function beforeCustomerRead(dibs: Dibs, customer: string, meanwhile: () => Promise<void>): { restore(): void } {
    const db = (dibs.backend as FirestoreBackend).layout.db as unknown as { getAll: (...refs: unknown[]) => unknown };
    const original = db.getAll;
    const suffix = `/customers/${encodeId(customer)}`;
    let fired = false;
    db.getAll = async (...refs: unknown[]) => {
      if (!fired && refs.some((r) => (r as DocumentReference | undefined)?.path?.endsWith(suffix))) {
        fired = true;
        await meanwhile();
      }
      return original.apply(db, refs);
    };
    return {
      restore: () => {
        db.getAll = original;
        assert.ok(fired, `no plain read of ${customer}'s document was seen`);
      },
    };
  }

  async function twoClients(fn: (dibs: Dibs, other: Dibs) => Promise<void>): Promise<void> {
    const store = emulator.storeUrl();
    const dibs = await openDibs(store);
    const other = await openDibs(store);
    try {
      await fn(dibs, other);
    } finally {
      await Promise.all([dibs.close(), other.close()]);
    }
  }

  const live = (dibs: Dibs, cap: number, perCustomerLimit: number) =>
    dibs.sales.create({
      sku: `mixed-${Date.now()}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap,
      perCustomerLimit,
    });

  // Each state the buy could have seen accepts it: (limit 2, 0 units), (limit 4, 0), (limit 4, 2 units).
  // Only the limit read before the raise with the units read after the order refuses it.
  it('a grouped buy does not answer limit_reached from a limit read before a raise and units read after an order', async () => {
    await twoClients(async (dibs, other) => {
      const sale = await live(dibs, 100, 2);
      const hook = beforeCustomerRead(dibs, 'alice', async () => {
        await other.sales.update(sale.id, { perCustomerLimit: 4 });
        await other.sales.buy(sale.id, 'alice', 2);
      });
      const bought = await dibs.sales.buy(sale.id, 'alice', 1).catch((error: unknown) => error);
      hook.restore();
      assert.ok(!isDibsError(bought), `the buy was refused: ${String(bought)}`);
      assert.equal((await dibs.sales.get(sale.id)).stats.sold, 3);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
    });
  });

  // alice replaces her hold of 2 (the last units) with another of 2: accepted before her hold's
  // cancel and after it. Only the sale's held units read before the cancel with her own hold read
  // after it (gone) counts her 2 units twice.
  it('a grouped reservation does not answer sold_out from held units read before a cancel and the hold read after it', async () => {
    await twoClients(async (dibs, other) => {
      const sale = await live(dibs, 4, 4);
      await dibs.sales.buy(sale.id, 'bob', 2);
      const { hold } = await dibs.sales.reserve(sale.id, 'alice', 2, 60_000);
      const hook = beforeCustomerRead(dibs, 'alice', async () => {
        await other.sales.cancelHold(hold.id);
      });
      const again = await dibs.sales.reserve(sale.id, 'alice', 2, 60_000).catch((error: unknown) => error);
      hook.restore();
      assert.ok(!isDibsError(again), `the reservation was refused: ${String(again)}`);
      const { stats } = await dibs.sales.get(sale.id);
      assert.deepEqual([stats.sold, stats.held], [2, 2]);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
    });
  });

  // ≈20 s on the emulator (worker start-up and 90 claims): a long run only
  it('forecast alerts checked by 3 processes at once: each crossing recorded and answered once', {
    timeout: 120_000,
    skip: process.env.FAULTS_LONG ? false : 'FAULTS_LONG=1 runs it',
  }, async () => {
    const store = emulator.storeUrl();
    const raced = await openDibs(store);
    try {
      console.log('firestore alert race', JSON.stringify(await assertAlertRace(raced, store, { env: emulator.env })));
    } finally {
      await raced.close();
    }
  });
});
