/**
 * Waiting-room counters on SQLite (migration 017): `waitingRooms.get` reads the room's counters of
 * tickets by status, which triggers keep with every ticket; the sale audit checks them against the
 * tickets (I4), and a file from before 017 has its rooms counted by the migration.
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import Database from 'better-sqlite3';
import { openDibs } from '../../src/index.js';
import { SETTLED, settledRoom } from '../support/room-counters.js';
import { tempSqliteStore } from '../support/sqlite.js';

const temp = tempSqliteStore();
after(() => temp.cleanup());
const file = temp.store.slice('sqlite:'.length);

it('get reads counters that the audit checks against the tickets', async () => {
  const dibs = await openDibs(temp.store);
  try {
    const sale = await settledRoom(dibs);
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
    sale = await settledRoom(dibs);
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
