/**
 * One OS process of an admin-change sale storm (admin-storm-suite.ts): buys, or reserves and then
 * confirms, cancels or abandons, on a schedule (each op at `atMs` after the start barrier). Every
 * step is appended as a JSON line stamped with CLOCK_MONOTONIC at request and answer.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs } from '../../src/index.js';
import { monoUs } from './admin-storm.js';
import { readyThenGo } from './go.js';
import { retryUnavailable } from './retry-unavailable.js';
import type { BuyOp, BuyRecord } from './admin-storm-suite.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  store: string;
  sale: string;
  ttlMs: number;
  ops: BuyOp[];
  concurrency: number;
  resultFile: string;
};
const dibs = await openDibs(config.store);
await readyThenGo();
const start = Date.now();

async function step(op: BuyOp, name: BuyRecord['step'], fn: () => Promise<Partial<BuyRecord>>): Promise<BuyRecord> {
  const t0 = monoUs();
  try {
    // t0 stays the first attempt's: the record spans every retry, so the checker's candidate sale versions do too
    return { ...op, step: name, status: 'ok', ...(await retryUnavailable(fn)), t0, t1: monoUs() };
  } catch (error) {
    return {
      ...op,
      step: name,
      status: 'error',
      error: isDibsError(error) ? error.code : String(error),
      t0,
      t1: monoUs(),
    };
  }
}

async function run(op: BuyOp): Promise<BuyRecord[]> {
  await sleep(Math.max(0, start + op.atMs - Date.now()));
  const key = op.key ? { idempotencyKey: op.key } : {};
  if (op.kind === 'buy') {
    return [
      await step(op, 'buy', async () => {
        const { order, replayed } = await dibs.sales.buy(config.sale, op.customer, op.quantity, key);
        return { orderId: order.id, units: order.quantity, replayed };
      }),
    ];
  }
  const reserved = await step(op, 'reserve', async () => {
    const { hold, replayed } = await dibs.sales.reserve(config.sale, op.customer, op.quantity, config.ttlMs, key);
    return { holdId: hold.id, replayed };
  });
  if (reserved.status === 'error' || op.then === 'abandon') return [reserved];
  await sleep(op.thinkMs);
  const then =
    op.then === 'confirm'
      ? await step(op, 'confirm', async () => {
          const { order } = await dibs.sales.confirm(reserved.holdId!);
          return { orderId: order.id, units: order.quantity, holdId: reserved.holdId! };
        })
      : await step(
          op,
          'cancel',
          async () => (await dibs.sales.cancelHold(reserved.holdId!), { holdId: reserved.holdId! }),
        );
  return [reserved, then];
}

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) {
      for (const record of await run(config.ops[next++]!))
        appendFileSync(config.resultFile, `${JSON.stringify(record)}\n`);
    }
  }),
);
await dibs.close();
process.exit(0);
