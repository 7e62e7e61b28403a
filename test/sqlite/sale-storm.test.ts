/**
 * Multi-process flash-sale tests on one SQLite file (the suite is in support/sale-storm-suite.ts).
 */
import { jobRaceSuite } from '../support/job-race.js';
import { saleStormSuite } from '../support/sale-storm-suite.js';
import { sqliteForSuite } from '../support/sqlite.js';

saleStormSuite('sqlite', sqliteForSuite());
jobRaceSuite('sqlite', sqliteForSuite());
