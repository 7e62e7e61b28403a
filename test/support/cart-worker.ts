/**
 * One OS process of a cart storm (cart-storm.ts): holds carts over several sales and then
 * confirms, cancels, keeps or confirms them too late, or buys single units, after a start barrier
 * (early carts are held before it). Every answer is appended as a JSON line: the client-side
 * record the checker judges.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs } from '../../src/index.js';
import type { CartOp, CartOutcome } from './cart-storm.js';
import { readyThenGo } from './go.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  store: string;
  ops: CartOp[];
  concurrency: number;
  resultFile: string;
};
const dibs = await openDibs(config.store);
const record = (outcome: CartOutcome) => appendFileSync(config.resultFile, `${JSON.stringify(outcome)}\n`);

async function answer(
  op: CartOp,
  step: CartOutcome['step'],
  fn: () => Promise<Partial<CartOutcome>>,
): Promise<CartOutcome> {
  try {
    return { op, step, status: 'ok', ...(await fn()) };
  } catch (error) {
    if (!isDibsError(error)) return { op, step, status: 'error', error: String(error) };
    // an `unavailable` whose outcome is unknown (it may have been applied) is told apart from one
    // that committed nothing (the Firestore backend's contention bound): the checker judges them apart
    const ambiguous = (error.details as { ambiguous?: boolean } | undefined)?.ambiguous === true;
    return { op, step, status: 'error', error: error.code, ...(ambiguous ? { ambiguous } : {}) };
  }
}

function hold(op: CartOp): Promise<CartOutcome> {
  const key = op.key ? { idempotencyKey: op.key } : {};
  return answer(op, 'hold', async () => {
    const { cart, replayed } = await dibs.sales.holdCart({
      customer: op.customer,
      lines: op.lines,
      ttlMs: op.ttlMs,
      ...key,
    });
    return {
      cart: cart.id,
      replayed,
      lines: cart.lines.map((l) => ({ sale: l.saleId, quantity: l.quantity, hold: l.holdId })),
    };
  });
}

// the early carts, before the barrier (recorded now: a worker killed later keeps them in the record)
const early = new Map<CartOp, CartOutcome>();
for (const op of config.ops.filter((o) => o.early)) {
  const held = await hold(op);
  record(held);
  early.set(op, held);
}
await readyThenGo();

async function run(op: CartOp): Promise<CartOutcome[]> {
  const key = op.key ? { idempotencyKey: op.key } : {};
  if (op.kind === 'buy') {
    const line = op.lines[0]!;
    return [
      await answer(op, 'buy', async () => {
        const { order } = await dibs.sales.buy(line.sale, op.customer, line.quantity, key);
        return { orders: [{ id: order.id, sale: order.saleId, quantity: order.quantity }] };
      }),
    ];
  }
  const held = early.get(op) ?? (await hold(op));
  const fresh = early.has(op) ? [] : [held];
  if (held.status === 'error' || op.then === 'keep') return fresh;
  await sleep(op.then === 'late' ? op.ttlMs + 300 : op.thinkMs);
  const next =
    op.then === 'cancel'
      ? await answer(op, 'cancel', async () => {
          await dibs.sales.cancelCart(held.cart!);
          return { cart: held.cart! };
        })
      : await answer(op, 'confirm', async () => {
          const { orders } = await dibs.sales.confirmCart(held.cart!);
          return { cart: held.cart!, orders: orders.map((o) => ({ id: o.id, sale: o.saleId, quantity: o.quantity })) };
        });
  return [...fresh, { ...next, cart: held.cart! }];
}

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) {
      for (const outcome of await run(config.ops[next++]!)) record(outcome);
    }
  }),
);
await dibs.close();
process.exit(0);
