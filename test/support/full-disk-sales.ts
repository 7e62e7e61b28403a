/**
 * A flash-sale buy storm on a full disk (test/hostile/full-disk-sales.test.ts,
 * full-disk-postgres.test.ts), judged by the client-side ledger of test/support/sale-storm.ts:
 * every failed buy is `unavailable`, every acknowledged order is in the store (read raw by the
 * caller), each interrupted keyed buy retried with its key replays or buys once, sold ≤ cap, the
 * sale's audit clean; then recovery: the same handle buys again, and a wave — more demand than the
 * units left — runs without a failure and sells out exactly the cap.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dibs } from '../../src/index.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp, type SaleOutcome } from './sale-storm.js';

/** Paced buys (so the storm still runs while the disk is full); two of three carry an idempotency key. */
function buys(count: number, prefix: string, delayMs: number): SaleOp[] {
  return Array.from({ length: count }, (_, i) => ({
    customer: `${prefix}-${i % Math.ceil(count / 2)}`,
    kind: 'buy',
    quantity: 1,
    thinkMs: 0,
    delayMs,
    ...(i % 3 === 0 ? {} : { key: `${prefix}-order-${i}` }),
  }));
}

async function createSale(dibs: Dibs, sku: string, cap: number): Promise<string> {
  const sale = await dibs.sales.create({
    sku,
    startsAt: new Date().toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    cap,
    perCustomerLimit: 2,
  });
  return sale.id;
}

/** Retries `unavailable` for up to ~30 s (a restarted store, a reconnecting handle). */
async function once<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if ((error as { code?: string }).code !== 'unavailable' || attempt >= 300) throw error;
      await sleep(100);
    }
  }
}

/**
 * The round: a paced storm with `fault` started at its beginning (its promise says what it did), the
 * ledger check, a buy by this process' handle, and a wave that must sell out with no failure at all. Returns the sale's id.
 */
export async function buyStormOnFullDisk(options: {
  label: string;
  /** The sale's SKU (its Redis keys' group), cap, and the storm's paced buys. */
  sku: string;
  cap: number;
  buyers: number;
  delayMs: number;
  store: string;
  dibs: Dibs;
  storedOrders(saleId: string): Promise<Set<string>>;
  fault(saleId: string): Promise<string>;
}): Promise<string> {
  const { dibs, label, cap: CAP } = options;
  const saleId = await createSale(dibs, options.sku, CAP);
  let faulting: Promise<string> = Promise.resolve('');
  const outcomes = await runSaleStorm({
    store: options.store,
    sale: saleId,
    lanes: spread(buys(options.buyers, 'buyer', options.delayMs), 3),
    concurrency: 4,
    timeoutMs: 240_000,
    during: async () => {
      faulting = options.fault(saleId);
    },
  });
  const faultLog = await faulting;
  const kinds = [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))];
  console.log(
    `[disk] ${label} buys: ${faultLog}; answers ${outcomes.length}, ok ${outcomes.filter((o) => o.status === 'ok').length}, errors ${kinds.join(', ') || 'none'}`,
  );
  assert.ok(
    outcomes.some((o) => o.error === 'unavailable'),
    'the full disk was felt by the clients',
  );
  // the same handle, open through it all, buys again by itself
  const again = await once(() =>
    dibs.sales.buy(saleId, 'after-the-disk-was-freed', 1, { idempotencyKey: 'after-the-disk-was-freed' }),
  );
  const seen = await assertBuysSurvived(dibs, () => options.storedOrders(saleId), saleId, CAP, outcomes);
  // a second wave, from this process (new processes are the claim rounds' second wave): more
  // demand than the units left, no failure, sold out exactly
  const left = CAP - seen.sold;
  const waveOps = buys(left + 60, 'after', 0);
  const wave: SaleOutcome[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let op = waveOps.shift(); op; op = waveOps.shift()) {
        const key = op.key ? { idempotencyKey: op.key } : {};
        wave.push(
          await dibs.sales.buy(saleId, op.customer, 1, key).then(
            ({ order }) => ({ ...op, step: 'buy' as const, status: 'ok' as const, orderId: order.id }),
            (error: { code?: string }) => ({
              ...op,
              step: 'buy' as const,
              status: 'error' as const,
              error: error.code ?? String(error),
            }),
          ),
        );
      }
    }),
  );
  const waveErrors = wave.filter((o) => o.status === 'error' && !['sold_out', 'limit_reached'].includes(o.error!));
  assert.deepEqual(waveErrors, [], 'after the disk was freed no buy fails');
  const all: SaleOutcome[] = [
    ...outcomes,
    ...wave,
    { ...buys(1, 'x', 0)[0]!, step: 'buy', status: 'ok', orderId: again.order.id },
  ];
  const final = await assertBuysSurvived(dibs, () => options.storedOrders(saleId), saleId, CAP, all);
  assert.equal(final.sold, CAP, 'the sale sells out exactly its cap once the disk is back');
  console.log(
    `[disk] ${label} buys: unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${CAP} after the storm; after freeing, ${wave.length} more buys without a failure, sold ${final.sold}/${CAP}; violations 0`,
  );
  return saleId;
}
