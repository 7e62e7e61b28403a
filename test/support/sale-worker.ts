/**
 * One OS process of a sale storm (see sale-storm.ts): buys, or reserves and then confirms,
 * cancels or abandons its holds, after a start barrier. Answers are appended as JSON lines.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { readyThenGo } from './go.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError } from '../../src/index.js';
import { openWhenReachable } from './open-store.js';
import type { SaleOp, SaleOutcome, SaleWorkerConfig } from './sale-storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SaleWorkerConfig;
const dibs = await openWhenReachable(config.store);
await readyThenGo();

async function answer(
  op: SaleOp,
  step: SaleOutcome['step'],
  fn: () => Promise<{ orderId?: string; holdId?: string; quantity?: number }>,
): Promise<SaleOutcome> {
  try {
    return { ...op, step, status: 'ok', ...(await fn()) };
  } catch (error) {
    return { ...op, step, status: 'error', error: isDibsError(error) ? error.code : String(error) };
  }
}

async function run(op: SaleOp): Promise<SaleOutcome[]> {
  const key = op.key ? { idempotencyKey: op.key } : {};
  if (op.delayMs) await sleep(op.delayMs);
  if (op.kind === 'buy') {
    return [
      await answer(op, 'buy', async () => {
        const { order } = await dibs.sales.buy(config.sale, op.customer, op.quantity, key);
        return { orderId: order.id, quantity: order.quantity };
      }),
    ];
  }
  const reserved = await answer(op, 'reserve', async () => {
    const { hold } = await dibs.sales.reserve(config.sale, op.customer, op.quantity, config.ttlMs, key);
    return { holdId: hold.id, quantity: hold.quantity };
  });
  if (reserved.status === 'error' || op.then === 'abandon') return [reserved];
  await sleep(op.thinkMs);
  const next =
    op.then === 'confirm'
      ? await answer(op, 'confirm', async () => {
          const { order } = await dibs.sales.confirm(reserved.holdId!);
          return { orderId: order.id, quantity: order.quantity, holdId: reserved.holdId! };
        })
      : await answer(op, 'cancel', async () => {
          await dibs.sales.cancelHold(reserved.holdId!);
          return { holdId: reserved.holdId! };
        });
  return [reserved, next];
}

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) {
      for (const outcome of await run(config.ops[next++]!))
        appendFileSync(config.resultFile, `${JSON.stringify(outcome)}\n`);
    }
  }),
);
await dibs.close();
process.exit(0);
