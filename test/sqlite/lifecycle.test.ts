import { lifecycleConformance } from '../conformance/lifecycle.js';
import { openTempSqlite } from '../support/sqlite.js';

lifecycleConformance('sqlite', openTempSqlite);
