/**
 * A PostgreSQL client on a worker "host" that opens a transaction holding a row lock and then
 * waits to be killed — the part of a dibs step that can be cut off mid-transaction. It connects
 * with exactly dibs' session options for the store URL in argv[2] (schema, statement_timeout,
 * lock_timeout, idle_in_transaction_session_timeout, server TCP keepalives); argv[3], when given,
 * overrides idle_in_transaction_session_timeout (0: off, as before dibs set it). It locks the
 * `lock_fences` row of key argv[4], prints "locked <Date.now()>" (when the lock was granted) and sleeps.
 */
import pg from 'pg';
import { DIBS_PARAMS, parseOptions } from '../../src/backends/postgres/index.js';
import { sessionOptions } from '../../src/backends/postgres/connection.js';

const url = new URL(process.argv[2]!);
const options = parseOptions(url);
if (process.argv[3] !== undefined && process.argv[3] !== '')
  options.idleInTransactionTimeoutMs = Number(process.argv[3]);
for (const name of DIBS_PARAMS) url.searchParams.delete(name);
const client = new pg.Client({ connectionString: url.href, options: sessionOptions(options), keepAlive: true });
client.on('error', () => undefined);
await client.connect();
await client.query('BEGIN');
await client.query('SELECT fence FROM lock_fences WHERE key = $1 FOR UPDATE', [process.argv[4]]);
process.stdout.write(`locked ${Date.now()}\n`);
setInterval(() => undefined, 1 << 30);
