/**
 * Admin changes racing a claim / buy / reserve storm on one SQLite file (I8; the suite is in
 * support/admin-storm-suite.ts): 4 processes, the rules changed by this one.
 */
import { adminStormSuite } from '../support/admin-storm-suite.js';
import { sqliteForSuite } from '../support/sqlite.js';

adminStormSuite('sqlite', sqliteForSuite());
