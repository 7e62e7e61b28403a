/**
 * One OS process of a waiting-room storm: each op is a shopper who joins the line, polls its
 * ticket (at the pace the estimate suggests) until admitted or told sold out, then reserves with
 * the ticket and confirms or abandons the hold (left to expire). Some shoppers first try a forged
 * ticket. Every step is appended as a JSON line.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { readyThenGo } from './go.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs } from '../../src/index.js';
import type { SaleOp, SaleWorkerConfig } from './sale-storm.js';
import type { RoomOutcome } from './room-storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SaleWorkerConfig;
const dibs = await openDibs(config.store);
await readyThenGo();

const record = (o: RoomOutcome) => appendFileSync(config.resultFile, `${JSON.stringify(o)}\n`);
const code = (error: unknown) => (isDibsError(error) ? error.code : String(error));

/** A real client retries what the store calls retriable (e.g. SQLite's writer busy past its wait on a loaded machine); every step retried here is idempotent. */
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

async function shop(op: SaleOp): Promise<void> {
  const base = { customer: op.customer, then: op.then ?? 'confirm' } as const;
  let ticket = await retrying(() => dibs.waitingRooms.join(config.sale, op.customer));
  record({ ...base, step: 'join', status: 'ok', number: ticket.number });
  if (op.key === 'forge') {
    const forged = `${ticket.number}.${'x'.repeat(43)}`;
    await retrying(() => dibs.waitingRooms.reserve(config.sale, op.customer, forged, op.quantity, config.ttlMs)).then(
      () => record({ ...base, step: 'forged', status: 'ok' }),
      (e) => record({ ...base, step: 'forged', status: 'error', error: code(e) }),
    );
  }
  // Bounded by the storm's own timeout (240 s), not by a guess at how fast a loaded machine is.
  const deadline = Date.now() + 200_000;
  while (ticket.status === 'waiting' && Date.now() < deadline) {
    await sleep(Math.min(1000, Math.max(100, (ticket.estimatedWaitMs ?? 500) / 4)) * (0.75 + Math.random() / 2));
    ticket = await retrying(() => dibs.waitingRooms.ticket(config.sale, op.customer, ticket.token));
  }
  record({ ...base, step: 'admission', status: 'ok', number: ticket.number, ticketStatus: ticket.status });
  if (ticket.status !== 'admitted') return;
  let holdId: string;
  try {
    holdId = (
      await retrying(() => dibs.waitingRooms.reserve(config.sale, op.customer, ticket.token, op.quantity, config.ttlMs))
    ).hold.id;
    record({ ...base, step: 'reserve', status: 'ok', number: ticket.number, holdId });
  } catch (error) {
    record({ ...base, step: 'reserve', status: 'error', number: ticket.number, error: code(error) });
    return;
  }
  if (op.then === 'abandon') return;
  await sleep(op.thinkMs);
  try {
    const { order } = await retrying(() => dibs.sales.confirm(holdId));
    record({ ...base, step: 'confirm', status: 'ok', number: ticket.number, holdId, orderId: order.id });
  } catch (error) {
    record({ ...base, step: 'confirm', status: 'error', number: ticket.number, holdId, error: code(error) });
  }
}

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) await shop(config.ops[next++]!);
  }),
);
await dibs.close();
process.exit(0);
