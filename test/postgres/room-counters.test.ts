/**
 * Waiting-room counters on PostgreSQL (migration 028): `waitingRooms.get` reads the room's counters
 * of tickets by status, which the tickets_count trigger keeps with every ticket statement; the
 * sale audit checks them against the tickets (I4), and a schema from before 028 has its rooms
 * counted by the migration.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { adminQuery, pgForSuite, requirePostgres, tempPgStore } from '../support/postgres.js';
import { SETTLED, settledRoom } from '../support/room-counters.js';

const skip = await requirePostgres();

describe('postgres: waiting-room counters (028)', { skip }, () => {
  const suite = pgForSuite();

  it('get reads counters that the audit checks against the tickets', async () => {
    const sale = await settledRoom(suite.dibs);
    assert.deepEqual((await suite.dibs.waitingRooms.get(sale)).tickets, SETTLED);
    assert.deepEqual(await suite.dibs.sales.audit(sale), []);
    // a counter that drifts from the tickets is an I4 finding
    await adminQuery(`UPDATE "${suite.schema}".waiting_rooms SET n_used = n_used + 1 WHERE sale_id = $1`, [sale]);
    const found = await suite.dibs.sales.audit(sale);
    assert.deepEqual(
      found.map((v) => [v.invariant, v.expected, v.actual]),
      [['I4', 2, 3]],
      JSON.stringify(found),
    );
  });

  it('a room from before migration 028 is counted by it', async () => {
    const temp = tempPgStore();
    try {
      const dibs = await openDibs(temp.store);
      let sale: string;
      try {
        sale = await settledRoom(dibs);
      } finally {
        await dibs.close();
      }
      // the schema as a build before 028 left it: no counters, no trigger, 028 not applied
      const s = `"${temp.schema}"`;
      await adminQuery(`
        DROP TRIGGER tickets_count_insert ON ${s}.tickets; DROP TRIGGER tickets_count_update ON ${s}.tickets;
        DROP TRIGGER tickets_count_delete ON ${s}.tickets;
        ALTER TABLE ${s}.waiting_rooms DROP COLUMN n_waiting, DROP COLUMN n_admitted, DROP COLUMN n_used,
          DROP COLUMN n_expired, DROP COLUMN n_sold_out;
        DELETE FROM ${s}.migrations WHERE id = 28`);
      const again = await openDibs(temp.store); // applies 028
      try {
        assert.deepEqual((await again.waitingRooms.get(sale)).tickets, SETTLED);
        assert.deepEqual(await again.sales.audit(sale), []);
      } finally {
        await again.close();
      }
    } finally {
      await temp.drop();
    }
  });
});
