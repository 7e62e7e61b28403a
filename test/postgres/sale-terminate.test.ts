/**
 * Connection loss during a flash sale on PostgreSQL: while 4 processes buy, the server terminates
 * their connections again and again. A buy in flight answers `unavailable` (retriable), never a
 * wrong answer; its step committed whole or not at all. Afterwards every acknowledged order is in
 * the store, retrying the interrupted keyed buys never sells a second unit to anyone (replay or
 * one new order), sold ≤ cap, and the audit is clean.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePostgres, tempPgStore, terminateConnectionsDuring } from '../support/postgres.js';
import { assertBuysSurvived, pgStoredOrders, runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';

const skip = await requirePostgres();

describe('postgres: connections terminated mid-sale', { skip }, () => {
  const app = `dibs_sale_fault_${Math.random().toString(36).slice(2, 8)}`;
  const temp = tempPgStore({ poolSize: '4' });
  // Only the storm workers' connections are targets; they are told apart by application_name.
  const workerStore = `${temp.store}&application_name=${app}`;
  let dibs: Dibs;
  before(async () => {
    dibs = await openDibs(temp.store);
  });
  after(async () => {
    await dibs?.close();
    await temp.drop();
  });

  it('keeps every acknowledged order, retries replay, sold ≤ cap, audit clean', async () => {
    const cap = 300;
    const sale = await dibs.sales.create({
      sku: 'FAULTY',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap,
      perCustomerLimit: 2,
    });
    const ops: SaleOp[] = Array.from({ length: 1200 }, (_, i) => ({
      customer: `buyer-${i % 600}`,
      kind: 'buy',
      quantity: 1,
      thinkMs: 0,
      ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
    }));
    const { result: outcomes, killed } = await terminateConnectionsDuring(
      app,
      runSaleStorm({ store: workerStore, sale: sale.id, lanes: spread(ops, 4), concurrency: 8 }),
      { everyMs: 40 },
    );
    assert.ok(killed > 0, 'connections were terminated during the sale');

    const seen = await assertBuysSurvived(dibs, pgStoredOrders(temp.schema), sale.id, cap, outcomes);
    process.stderr.write(
      `terminated ${killed} connections; ${seen.unavailable} buys answered unavailable (${seen.retried} keyed, retried); ${seen.sold} sold\n`,
    );
  });
});
