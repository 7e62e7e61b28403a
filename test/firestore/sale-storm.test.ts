/**
 * Multi-process flash-sale storms on the Firestore emulator: the suite every selling store runs
 * (support/sale-storm-suite.ts) — 4 OS processes, 200 buyers (plus retried keys and double clicks)
 * on the last 10 units, and holds racing confirmations, cancellations and expiries with I3 sampled
 * live — smaller than the 1,000 buyers of the SQL and Redis storms: the emulator is one JVM and much
 * slower than a real database. Then one process's burst, to log transactions per buy, and the
 * snapshot the audits read while commits land.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldValue, Firestore } from '@google-cloud/firestore';
import type { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { TxRunner } from '../../src/backends/firestore/transactions.js';
import { firestoreEmulatorInstalled, firestoreStoreForSuite } from '../support/firestore.js';
import { saleStormSuite } from '../support/sale-storm-suite.js';

const HOUR = 3_600_000;

describe('firestore emulator: flash-sale storms', { skip: !firestoreEmulatorInstalled() }, () => {
  const suite = firestoreStoreForSuite();

  // The storms every selling store runs (support/sale-storm-suite.ts), smaller: 200 buyers on the
  // last 10 units (20 per unit, 4 processes of 8 in flight: every unit raced for); 120 hold flows
  // of 70 customers (still customers with two flows sharing a hold). The SQL and Redis runs are larger.
  saleStormSuite('firestore emulator', suite, { buyers: 200, flows: 120, customers: 70, timeoutMs: 150_000 });

  it('one process, 150 concurrent buyers on 15 units: transactions per buy (logged, not asserted)', {
    timeout: 180_000,
  }, async () => {
    const sale = await suite.dibs.sales.create({
      sku: 'ONE-PROCESS',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap: 15,
      perCustomerLimit: 1,
    });
    const counters = (suite.dibs.backend as FirestoreBackend).transactionCounters;
    const before = { ...counters };
    const started = Date.now();
    const settled = await Promise.allSettled(
      Array.from({ length: 150 }, (_, i) => suite.dibs.sales.buy(sale.id, `c-${i}`)),
    );
    const ms = Date.now() - started;
    const won = settled.filter((s) => s.status === 'fulfilled').length;
    const transactions = counters.transactions - before.transactions;
    const attempts = counters.attempts - before.attempts;
    console.log(
      `# firestore one-process burst: 150 buys in ${ms} ms, ${won} orders, ${transactions} read-write transactions, ${attempts} attempts`,
    );
    assert.equal(won, 15);
    for (const s of settled) if (s.status === 'rejected') assert.equal((s.reason as { code: string }).code, 'sold_out');
    assert.deepEqual(await suite.dibs.sales.audit(sale.id), []);
  });

  // The storms' mid-run audits once reported `sold counter says 15 but orders hold 16 units`: the
  // emulator's unpinned read-only transactions let a query see half of a commit still being applied.
  it('the snapshot an audit reads never shows half of a commit, while 4 writers commit', {
    timeout: 60_000,
  }, async () => {
    const db = new Firestore({ projectId: suite.emulator.projectId });
    const root = db.collection('snapshot-test').doc(String(Date.now()));
    const counter = root.collection('c').doc('n');
    const orders = root.collection('orders');
    const holds = root.collection('holds');
    await counter.set({ n: 0 });
    // each commit moves one unit, like a confirmation: the counter, an order and a hold, together
    let writing = true;
    let commits = 0;
    const writer = async () => {
      while (writing) {
        const batch = db.batch();
        batch.update(counter, { n: FieldValue.increment(1) });
        batch.create(orders.doc(), { q: 1 });
        batch.create(holds.doc(), { q: 1 });
        await batch.commit();
        commits++;
      }
    };
    const writers = [writer(), writer(), writer(), writer()];
    const runner = new TxRunner(db);
    const torn: string[] = [];
    let snapshots = 0;
    try {
      // 6 s (or 150 snapshots), and on a loaded machine on until the precondition below holds, bounded
      const started = Date.now();
      const enough = () => snapshots >= 10 && commits >= 100;
      while ((Date.now() < started + 6_000 && snapshots < 150) || (!enough() && Date.now() < started + 40_000)) {
        const [c, o, h] = await runner.snapshot(counter, (tx) =>
          Promise.all([tx.get(counter), tx.get(orders.count()), tx.get(holds.count())]),
        );
        snapshots++;
        const seen = [c.get('n') as number, o.data().count, h.data().count];
        if (new Set(seen).size !== 1) torn.push(seen.join('/'));
      }
    } finally {
      writing = false;
      await Promise.all(writers);
      await db.terminate();
    }
    assert.ok(snapshots >= 10 && commits >= 100, `${snapshots} snapshots during ${commits} commits`);
    assert.deepEqual(torn, [], `counter/orders/holds differed in ${torn.length} of ${snapshots} snapshots`);
  });
});
