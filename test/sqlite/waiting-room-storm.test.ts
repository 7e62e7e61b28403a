/** The waiting-room storm (support/room-storm.ts) on SQLite: 4 processes on one database file. */
import { roomStormSuite } from '../support/room-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

roomStormSuite('sqlite', sqliteForSuite());
