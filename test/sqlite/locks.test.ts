import { lockConformance } from '../conformance/locks.js';
import { openTempSqlite } from '../support/sqlite.js';

lockConformance('sqlite (file)', openTempSqlite);
