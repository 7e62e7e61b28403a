/**
 * The pool, sale, cart and lock conformance suites, unchanged, through dibs/client → HTTP → the service
 * → SQLite: the client gives the library's answers and errors.
 */
import { cartConformance } from '../conformance/carts.js';
import { lockConformance } from '../conformance/locks.js';
import { poolConformance } from '../conformance/pools.js';
import { saleConformance } from '../conformance/sales.js';
import { throughClient } from '../support/client-dibs.js';
import { openTempSqlite } from '../support/sqlite.js';

poolConformance('client over HTTP (sqlite)', throughClient(openTempSqlite));
saleConformance('client over HTTP (sqlite)', throughClient(openTempSqlite));
lockConformance('client over HTTP (sqlite)', throughClient(openTempSqlite));
cartConformance('client over HTTP (sqlite)', throughClient(openTempSqlite));
