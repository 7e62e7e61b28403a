/**
 * The price of a fair line (one process, 16 in flight): joining, checking a ticket and reserving
 * with an admitted ticket, next to the plain reservation of a sale without a room — the baseline
 * measured in the same run — on SQLite and on PostgreSQL.
 *
 *   npm run bench -- waiting-room      (BENCH_ROOM_OPS, default 3000; BENCH_PG, default the test server)
 */
import { openDibs } from '../src/index.js';
import { printTable, summarise, timeOps } from './lib/measure.js';
import { onEachStore } from './lib/stores.js';

const OPS = Number(process.env.BENCH_ROOM_OPS ?? 3000);
const CONCURRENCY = 16;

export async function main(): Promise<void> {
  await onEachStore('room', ['sqlite', 'postgres'], run);
}

async function run(label: string, store: string): Promise<void> {
  const dibs = await openDibs(store);
  try {
    const window = {
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: OPS,
      perCustomerLimit: 1,
    };
    const plain = await dibs.sales.create({ sku: 'PLAIN', ...window });
    const roomed = await dibs.sales.create({ sku: 'ROOM', ...window });
    // a rate high enough that admission is never the bottleneck being measured
    await dibs.waitingRooms.enable(roomed.id, { admitPerSecond: 100_000, windowMs: 600_000 });

    const direct = await timeOps(OPS, CONCURRENCY, (i) => dibs.sales.reserve(plain.id, `c${i}`, 1, 600_000));
    const tickets = new Array<{ token: string }>(OPS);
    const joined = await timeOps(
      OPS,
      CONCURRENCY,
      async (i) => (tickets[i] = await dibs.waitingRooms.join(roomed.id, `c${i}`)),
    );
    const checked = await timeOps(OPS, CONCURRENCY, (i) =>
      dibs.waitingRooms.ticket(roomed.id, `c${i}`, tickets[i]!.token),
    );
    const reserved = await timeOps(OPS, CONCURRENCY, (i) =>
      dibs.waitingRooms.reserve(roomed.id, `c${i}`, tickets[i]!.token, 1, 600_000),
    );
    const room = await dibs.waitingRooms.get(roomed.id);
    if (room.tickets.used !== OPS) throw new Error(`expected ${OPS} used tickets, got ${JSON.stringify(room.tickets)}`);
    if ((await dibs.sales.audit(roomed.id)).length > 0) throw new Error('audit of the waiting-room sale is not clean');

    const baseline = summarise('plain reserve (no waiting room)', direct.latencies, direct.seconds);
    printTable(
      `Waiting room on ${label}, ${OPS.toLocaleString('en-US')} customers, ${CONCURRENCY} in flight (ratio vs plain reserve)`,
      [
        baseline,
        summarise('join (ticket in arrival order)', joined.latencies, joined.seconds),
        summarise('ticket check (runs admission)', checked.latencies, checked.seconds),
        summarise('reserve with admitted ticket', reserved.latencies, reserved.seconds),
      ],
      baseline,
    );
  } finally {
    await dibs.close();
  }
}
