import { saleConformance } from '../conformance/sales.js';
import { cartConformance } from '../conformance/carts.js';
import { sqliteCartTamper } from '../support/cart-tamper.js';
import { openTempSqlite } from '../support/sqlite.js';

saleConformance('sqlite', openTempSqlite);
cartConformance('sqlite', openTempSqlite, sqliteCartTamper);
