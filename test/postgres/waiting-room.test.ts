import { waitingRoomConformance } from '../conformance/waiting-room.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres waiting-room conformance', { skip }, () => {});
} else {
  waitingRoomConformance('postgres', () => openTempPg());
}
