/**
 * The fair start's cost (issue 27): a waiting room whose pre-queue is put in a random place at the
 * opening, against a room without a fair start (arrival order), in the same run as interleaved
 * rounds (plain, fair, plain, fair, …), on SQLite, PostgreSQL and Redis. Per room, on a sale that
 * has not opened yet:
 *
 * 1. join: N customers join before the opening, 16 in flight (joins/s);
 * 2. the draw: the sale opens; the first step after it (an early customer's ticket poll, or
 *    `waitingRooms.get` with BENCH_FAIR_FIRST=get) places all N tickets
 *    in the store in that one step — a seeded shuffle (core/sales/fair-draw.ts) in a fair room,
 *    place = arrival number in a plain one. Its latency is the figure. The room admits 1 ticket/s
 *    during it, so the step's own admission stays out of the figure;
 * 3. admitted order: the rate is raised so admission is never the bottleneck, and the first
 *    BENCH_FAIR_ADMITTED customers in line (drawn order in the fair room, arrival order in the
 *    plain one) each check their ticket and reserve with it, 16 in flight (customers/s).
 *
 * Checks: every place the store drew is the one the recorded seed re-derives (fair-draw.ts), the
 * plain room recorded no seed, every served ticket is used and the sale's audit is clean.
 *
 *   npm run bench -- fair-start [--quick]   (quick: N = 1,000; full: N = 1,000 and 10,000)
 *   BENCH_ROUNDS=3 BENCH_FAIR_SIZES=1000,10000 BENCH_FAIR_ADMITTED=1000 npm run bench -- fair-start
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { drawOrder } from '../src/core/sales/fair-draw.js';
import { openDibs, type Dibs } from '../src/index.js';
import { summarise, timeOps, type RunStats } from './lib/measure.js';
import { loadNow, printRatios, spread, type Ratio } from './lib/rounds.js';
import { onEachStore, type StoreKind } from './lib/stores.js';

const QUICK = process.argv.includes('--quick');
const SIZES = (process.env.BENCH_FAIR_SIZES ?? (QUICK ? '1000' : '1000,10000')).split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ADMITTED = Number(process.env.BENCH_FAIR_ADMITTED ?? (QUICK ? 500 : 1000));
/**
 * The step timed at the opening: `ticket` (an early customer's poll: admission, which draws, and
 * that one ticket) or `get` (the same admission, then a count of the room's tickets by status — a
 * read of all N on top of the draw).
 */
const FIRST_STEP = process.env.BENCH_FAIR_FIRST === 'get' ? 'get' : 'ticket';
const CALLERS = 16;
const HOUR = 3_600_000;
const WINDOW_MS = 600_000;
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres,redis').split(',') as StoreKind[];

/** What one room gave in one round. */
interface RoomRun {
  join: RunStats;
  drawMs: number;
  admitted: RunStats;
}

export async function main(): Promise<void> {
  const rows: Ratio[] = [];
  await onEachStore('fair', STORES, async (label, store) => {
    const dibs = await openDibs(store);
    try {
      await room(dibs, false, 100); // untimed warm-up of every path
      for (const size of SIZES) rows.push(...(await rounds(dibs, label, size)));
    } finally {
      await dibs.close();
    }
  });
  printRatios(
    `Fair start vs arrival order, ${CALLERS} in flight, the first ${ADMITTED} in line served, ${ROUNDS} interleaved rounds (${QUICK ? 'quick' : 'full'})`,
    rows,
  );
}

async function rounds(dibs: Dibs, label: string, size: number): Promise<Ratio[]> {
  const before = loadNow();
  const plain: RoomRun[] = [];
  const fair: RoomRun[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    plain.push(await room(dibs, false, size));
    fair.push(await room(dibs, true, size));
  }
  const load = `${before} → ${loadNow()}`;
  const n = size.toLocaleString('en-US');
  const row = (what: string, unit: string, metric: (r: RoomRun) => number): Ratio => {
    const b = plain.map(metric);
    const f = fair.map(metric);
    return {
      path: `${label}, N = ${n}: ${what}`,
      target: '—',
      unit,
      baseline: spread(b),
      dibs: spread(f),
      ratio: spread(f.map((x, i) => x / b[i]!)),
      rounds: ROUNDS,
      load,
    };
  };
  return [
    row(`first step after the opening (the draw; ${FIRST_STEP})`, 'ms', (r) => r.drawMs),
    row('join before the opening', 'joins/s', (r) => r.join.perSecond),
    row(`ticket + reserve, first ${Math.min(ADMITTED, size)} in line`, 'customers/s', (r) => r.admitted.perSecond),
  ];
}

let sales = 0;

/** One room of `size` pre-queue tickets, from the first join to the last reservation measured. */
async function room(dibs: Dibs, fairStart: boolean, size: number): Promise<RoomRun> {
  const sale = await dibs.sales.create({
    sku: `FAIR-${++sales}`,
    startsAt: new Date(Date.now() + HOUR).toISOString(),
    endsAt: new Date(Date.now() + 2 * HOUR).toISOString(),
    cap: size,
    perCustomerLimit: 1,
  });
  await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 1, windowMs: WINDOW_MS, fairStart });

  const tickets = new Array<{ number: number; token: string }>(size);
  const joined = await timeOps(size, CALLERS, async (i) => {
    tickets[i] = await dibs.waitingRooms.join(sale.id, `c${i}`);
  });

  // the opening: moved to just ahead of now, then waited for
  const opensAt = Date.now() + 200;
  await dibs.sales.update(sale.id, { startsAt: new Date(opensAt).toISOString() });
  await sleep(opensAt - Date.now() + 20);
  const t = performance.now();
  if (FIRST_STEP === 'ticket') await dibs.waitingRooms.ticket(sale.id, 'c0', tickets[0]!.token);
  const first = FIRST_STEP === 'ticket' ? null : await dibs.waitingRooms.get(sale.id);
  const drawMs = performance.now() - t;
  const opened = first ?? (await dibs.waitingRooms.get(sale.id));
  if (!opened.draw || opened.draw.preQueue !== size || (opened.draw.seed !== null) !== fairStart)
    throw new Error(`room ${sale.id} (fair ${fairStart}): draw ${JSON.stringify(opened.draw)}, expected ${size}`);

  // who stands in place k: arrival numbers in drawn order (fair) or in arrival order (plain)
  const byNumber = new Map(tickets.map((ticket, i) => [ticket.number, i]));
  const order = fairStart ? drawOrder(opened.draw.seed!, size) : Array.from({ length: size }, (_, k) => k + 1);
  const served = Math.min(ADMITTED, size);
  await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 100_000, windowMs: WINDOW_MS, fairStart });
  const admitted = await timeOps(served, CALLERS, async (k) => {
    const i = byNumber.get(order[k]!)!;
    const ticket = await dibs.waitingRooms.ticket(sale.id, `c${i}`, tickets[i]!.token);
    if (ticket.place !== k + 1)
      throw new Error(`ticket ${ticket.number} has place ${ticket.place}; the recorded seed says ${k + 1}`);
    await dibs.waitingRooms.reserve(sale.id, `c${i}`, tickets[i]!.token, 1, WINDOW_MS);
  });
  const after = await dibs.waitingRooms.get(sale.id);
  if (after.tickets.used !== served)
    throw new Error(`expected ${served} used tickets, got ${JSON.stringify(after.tickets)}`);
  const audit = await dibs.sales.audit(sale.id);
  if (audit.length) throw new Error(`audit of ${sale.id}: ${JSON.stringify(audit)}`);
  await dibs.sales.cancel(sale.id); // its line no longer takes part in anything
  return {
    join: summarise('join', joined.latencies, joined.seconds),
    drawMs,
    admitted: summarise('ticket + reserve', admitted.latencies, admitted.seconds),
  };
}
