import { redeemStormSuite } from '../support/redeem-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

redeemStormSuite('sqlite', sqliteForSuite());
