import { waitingRoomConformance } from '../conformance/waiting-room.js';
import { openTempSqlite } from '../support/sqlite.js';

waitingRoomConformance('sqlite', openTempSqlite);
