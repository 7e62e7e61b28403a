/**
 * One OS process of the fair-start storm (fair-start-storm.ts). Ops with `key: 'pre'` join before
 * the sale opens, all at once; then the process waits until the room's draw is made, the others
 * join one after another (late arrivals, each timed before the request and after its answer), and
 * every shopper polls its ticket until admitted or turned away, recording the place each poll
 * reports. Admitted shoppers reserve with the ticket and confirm, or abandon the hold.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs, type Ticket } from '../../src/index.js';
import type { FairOutcome } from './fair-start-storm.js';
import { readyThenGo } from './go.js';
import type { SaleOp, SaleWorkerConfig } from './sale-storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SaleWorkerConfig;
const dibs = await openDibs(config.store);
await readyThenGo();

const record = (o: FairOutcome) => appendFileSync(config.resultFile, `${JSON.stringify({ ...o, at: Date.now() })}\n`);
const code = (error: unknown) => (isDibsError(error) ? error.code : String(error));

async function retrying<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!isDibsError(error) || !error.retriable || attempt >= 20) throw error;
      await sleep(50 * attempt);
    }
  }
}

async function pool<T>(items: T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

async function join(op: SaleOp, phase: 'pre' | 'late'): Promise<[SaleOp, Ticket]> {
  const t0 = Date.now();
  const ticket = await retrying(() => dibs.waitingRooms.join(config.sale, op.customer));
  record({
    customer: op.customer,
    step: 'join',
    phase,
    t0,
    t1: Date.now(),
    number: ticket.number,
    place: ticket.place,
  });
  return [op, ticket];
}

async function shop([op, first]: [SaleOp, Ticket]): Promise<void> {
  let ticket = first;
  const base = { customer: op.customer, number: ticket.number } as const;
  const deadline = Date.now() + 200_000;
  for (;;) {
    ticket = await retrying(() => dibs.waitingRooms.ticket(config.sale, op.customer, ticket.token));
    record({ ...base, step: 'poll', place: ticket.place, ticketStatus: ticket.status });
    if (ticket.status !== 'waiting' || Date.now() > deadline) break;
    // every shopper polls at once (places are random, so anyone may be next), each about once a second
    await sleep(400 + Math.random() * 800);
  }
  if (ticket.status !== 'admitted') return;
  let holdId: string;
  // an abandoned hold lapses after the storm's short TTL; one that will be confirmed must outlive a loaded machine
  const ttlMs = op.then === 'abandon' ? config.ttlMs : 60_000;
  try {
    holdId = (
      await retrying(() => dibs.waitingRooms.reserve(config.sale, op.customer, ticket.token, op.quantity, ttlMs))
    ).hold.id;
    record({ ...base, step: 'reserve', status: 'ok', place: ticket.place, holdId });
  } catch (error) {
    record({ ...base, step: 'reserve', status: 'error', place: ticket.place, error: code(error) });
    return;
  }
  if (op.then === 'abandon') return;
  try {
    const { order } = await retrying(() => dibs.sales.confirm(holdId));
    record({ ...base, step: 'confirm', status: 'ok', place: ticket.place, holdId, orderId: order.id });
  } catch (error) {
    record({ ...base, step: 'confirm', status: 'error', place: ticket.place, holdId, error: code(error) });
  }
}

const early: [SaleOp, Ticket][] = [];
await pool(
  config.ops.filter((o) => o.key === 'pre'),
  config.concurrency,
  async (op) => void early.push(await join(op, 'pre')),
);
// the opening: the coordinator moves the start once every early ticket is in; the first step after it draws
while ((await retrying(() => dibs.waitingRooms.get(config.sale))).draw === null) await sleep(50);
const late: [SaleOp, Ticket][] = [];
for (const op of config.ops.filter((o) => o.key !== 'pre')) late.push(await join(op, 'late'));
await Promise.all([...early, ...late].map(shop));
await dibs.close();
process.exit(0);
