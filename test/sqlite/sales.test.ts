import { saleConformance } from '../conformance/sales.js';
import { openTempSqlite } from '../support/sqlite.js';

saleConformance('sqlite', openTempSqlite);
