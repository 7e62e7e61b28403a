/** The fair-start storm (support/fair-start-storm.ts) on SQLite: 4 processes on one database file. */
import { fairStartStormSuite } from '../support/fair-start-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

fairStartStormSuite('sqlite', sqliteForSuite());
