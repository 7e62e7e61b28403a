/** The multi-process cart storm on one SQLite file (support/cart-storm-suite.ts). */
import { cartStormSuite } from '../support/cart-storm-suite.js';
import { sqliteForSuite } from '../support/sqlite.js';

cartStormSuite('sqlite', sqliteForSuite());
