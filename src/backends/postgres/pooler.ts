/**
 * PostgreSQL behind a pooler in transaction mode (PgBouncer `pool_mode = transaction`, Supabase's
 * and Neon's poolers, RDS Proxy): each transaction may run on another server connection, so
 * nothing set on a session survives to the next statement. In that mode (`?pooler=transaction`)
 * every connection's `query` is wrapped so that:
 * - every statement runs inside a transaction that first sets dibs' settings with SET LOCAL
 *   (search_path, statement_timeout, lock_timeout, idle_in_transaction_session_timeout): a BEGIN
 *   gets them in the same round trip; a lone statement is wrapped in BEGIN … COMMIT (two more
 *   round trips; one round trip in all when it has no parameters) — no startup `options`
 *   (PgBouncer refuses that parameter), no session SET;
 * - no named prepared statement is created (a name would be prepared on one server connection
 *   and executed on another): statements go unnamed, parsed on every execution.
 * Session advisory locks and LISTEN are not used on such connections (see migrate.ts, listener.ts).
 */
import type pg from 'pg';
import type { PgOptions } from './connection.js';
import { quoteIdent } from './identifiers.js';
import { type Query, wrapQuery } from './query-wrap.js';

const BEGINS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ENDS = /^\s*(COMMIT|END|ABORT|ROLLBACK)\s*(;|$|\s+(WORK|TRANSACTION)\b|\s+AND\s+)/i;

/** The SET LOCAL statements that give a transaction what a direct session gets at startup. */
export function localSettings(
  options: Pick<PgOptions, 'schema' | 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleInTransactionTimeoutMs'>,
): string {
  return [
    `SET LOCAL search_path = ${quoteIdent(options.schema)}`,
    `SET LOCAL statement_timeout = ${options.statementTimeoutMs}`,
    `SET LOCAL lock_timeout = ${options.lockTimeoutMs}`,
    `SET LOCAL idle_in_transaction_session_timeout = ${options.idleInTransactionTimeoutMs}`,
  ].join('; ');
}

const wrapped = new WeakSet<pg.ClientBase>();

/** Makes one connection transaction-scoped (idempotent). */
export function scopeToTransactions(client: pg.ClientBase, settings: string): void {
  if (wrapped.has(client)) return;
  wrapped.add(client);
  const original = client.query.bind(client) as Query;
  let inTransaction = false;

  const run = async (config: unknown, values: unknown): Promise<unknown> => {
    const text = typeof config === 'string' ? config : ((config as { text?: string }).text ?? '');
    // Unnamed: a named statement would be prepared on whichever server connection this
    // transaction got, and looked up on another one later.
    const plain = typeof config === 'string' ? config : unname(config as pg.QueryConfig);
    const call = (c: unknown) => (values === undefined ? original(c) : original(c, values)) as Promise<unknown>;
    if (BEGINS.test(text)) {
      const result = await (original(`${text}; ${settings}`) as Promise<unknown>);
      inTransaction = true;
      return Array.isArray(result) ? result[0] : result;
    }
    if (ENDS.test(text)) {
      try {
        return await call(plain);
      } finally {
        inTransaction = false;
      }
    }
    if (inTransaction) return call(plain);
    // A lone statement without parameters (the cold-start version check) goes in one round trip
    // as one simple query: BEGIN, the settings, the statement, COMMIT. A failure leaves the
    // transaction aborted (the rest of the string is skipped): rolled back below.
    if (typeof config === 'string' && values === undefined && !config.includes(';')) {
      try {
        const results = (await original(`BEGIN; ${settings}; ${config}; COMMIT`)) as unknown[];
        return results[results.length - 2];
      } catch (error) {
        await (original('ROLLBACK') as Promise<unknown>).catch(() => undefined);
        throw error;
      }
    }
    await (original(`BEGIN; ${settings}`) as Promise<unknown>);
    inTransaction = true;
    try {
      const result = await call(plain);
      await (original('COMMIT') as Promise<unknown>);
      return result;
    } catch (error) {
      await (original('ROLLBACK') as Promise<unknown>).catch(() => undefined);
      throw error;
    } finally {
      inTransaction = false;
    }
  };

  // streams (COPY) run as given: dibs only copies inside a transaction it began
  wrapQuery(client, () => true, run, original);
}

function unname(config: pg.QueryConfig): pg.QueryConfig {
  if (!config.name) return config;
  const { name: _name, ...rest } = config;
  return rest;
}
