/**
 * Waiting-room counters on SQLite (migration 017): `waitingRooms.get` reads the room's counters of
 * tickets by status, which triggers keep with every ticket; the sale audit checks them against the
 * tickets (I4), and a file from before 017 has its rooms counted by the migration.
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import Database from 'better-sqlite3';
import { openDibs, type Dibs } from '../../src/index.js';
import { tempSqliteStore } from '../support/sqlite.js';

const temp = tempSqliteStore();
after(() => temp.cleanup());
const file = temp.store.slice('sqlite:'.length);

/** A live sale of 2 behind a room; 4 join, 2 reserve and confirm: 2 used, 2 turned away. */
async function usedRoom(dibs: Dibs): Promise<string> {
  const sale = await dibs.sales.create({
    sku: `COUNTED-${Date.now()}`,
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

const SETTLED = { waiting: 0, admitted: 0, used: 2, expired: 0, sold_out: 2 };

it('get reads counters that the audit checks against the tickets', async () => {
  const dibs = await openDibs(temp.store);
  try {
    const sale = await usedRoom(dibs);
    assert.deepEqual((await dibs.waitingRooms.get(sale)).tickets, SETTLED);
    assert.deepEqual(await dibs.sales.audit(sale), []);
    // a counter that drifts from the tickets is an I4 finding
    const raw = new Database(file);
    raw.prepare('UPDATE dibs_waiting_rooms SET n_used = n_used + 1 WHERE sale_id = ?').run(sale);
    raw.close();
    const found = await dibs.sales.audit(sale);
    assert.deepEqual(
      found.map((v) => [v.invariant, v.expected, v.actual]),
      [['I4', 2, 3]],
      JSON.stringify(found),
    );
  } finally {
    await dibs.close();
  }
});

it('a room from before migration 017 is counted by it', async () => {
  let sale: string;
  const dibs = await openDibs(temp.store);
  try {
    sale = await usedRoom(dibs);
  } finally {
    await dibs.close();
  }
  // the file as a build before 017 left it: no counters, no triggers, 017 not applied
  const raw = new Database(file);
  raw.exec(`
    DROP TRIGGER dibs_tickets_count_insert; DROP TRIGGER dibs_tickets_count_update; DROP TRIGGER dibs_tickets_count_delete;
    ALTER TABLE dibs_waiting_rooms DROP COLUMN n_waiting; ALTER TABLE dibs_waiting_rooms DROP COLUMN n_admitted;
    ALTER TABLE dibs_waiting_rooms DROP COLUMN n_used; ALTER TABLE dibs_waiting_rooms DROP COLUMN n_expired;
    ALTER TABLE dibs_waiting_rooms DROP COLUMN n_sold_out;
    DELETE FROM dibs_migrations WHERE id = 17;`);
  raw.close();
  const again = await openDibs(temp.store); // applies 017
  try {
    assert.deepEqual((await again.waitingRooms.get(sale)).tickets, SETTLED);
    assert.deepEqual(await again.sales.audit(sale), []);
  } finally {
    await again.close();
  }
});
