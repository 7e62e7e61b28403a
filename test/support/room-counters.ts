/**
 * A waiting room with every kind of settled ticket, for the tests of the rooms' status counters
 * (kept with every ticket, read by `waitingRooms.get`, checked by the sale audit).
 */
import type { Dibs } from '../../src/index.js';

/** A live sale of 2 behind a room; 4 join, 2 reserve and confirm: 2 used, 2 turned away. */
export async function settledRoom(dibs: Dibs, sku = `COUNTED-${Date.now()}`): Promise<string> {
  const sale = await dibs.sales.create({
    sku,
    startsAt: new Date(Date.now() - 1000).toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    cap: 2,
    perCustomerLimit: 1,
  });
  await dibs.waitingRooms.enable(sale.id, { admitPerSecond: 100, windowMs: 60_000 });
  const tickets = [];
  for (const c of ['a', 'b', 'c', 'd']) tickets.push(await dibs.waitingRooms.join(sale.id, c));
  for (const t of tickets.slice(0, 2)) {
    const { hold } = await dibs.waitingRooms.reserve(sale.id, t.customer, t.token, 1, 60_000);
    await dibs.sales.confirm(hold.id);
  }
  return sale.id;
}

/** The counts of `settledRoom` once a step has closed its line. */
export const SETTLED = { waiting: 0, admitted: 0, used: 2, expired: 0, sold_out: 2 };
