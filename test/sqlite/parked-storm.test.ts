import { parkedStormSuite } from '../support/parked-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

parkedStormSuite('sqlite', sqliteForSuite());
