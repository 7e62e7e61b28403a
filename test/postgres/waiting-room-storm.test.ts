/** The waiting-room storm (support/room-storm.ts) on PostgreSQL: 4 processes, one schema. */
import { pgForSuite, requirePostgres } from '../support/postgres.js';
import { roomStormSuite } from '../support/room-storm.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres waiting-room storm', { skip }, () => {});
} else {
  roomStormSuite('postgres', pgForSuite({ poolSize: '8' }));
}
