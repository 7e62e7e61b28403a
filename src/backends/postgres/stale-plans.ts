/**
 * Named prepared statements outlive a schema change made by another build. During a rolling deploy
 * the newer build's migrations add a column to a table, or its function files change a function's
 * result columns; every connection of an older instance that had prepared `SELECT * FROM t` or
 * `SELECT * FROM f(…)` then fails that statement with SQLSTATE 0A000 "cached plan must not change
 * result type" on every later execution (PostgreSQL re-plans it but refuses the new row shape for a
 * statement prepared with the old one), until the connection closes — the old instances would
 * answer errors for the rest of the deploy.
 *
 * The refusal comes while the statement is re-planned, before it runs, so nothing of it happened:
 * outside a transaction the statement is dropped (DEALLOCATE), prepared again and run once more;
 * inside one the transaction is aborted, so the error stands (translated to `unavailable`,
 * retriable) and the statement is dropped before the connection's next statement.
 */
import type pg from 'pg';
import { quoteIdent } from './identifiers.js';
import { type Query, wrapQuery } from './query-wrap.js';

/** The routine that raises it (never translated, unlike the message), with the English text as a second witness. */
export function isStalePlan(error: unknown): boolean {
  const e = error as { code?: unknown; routine?: unknown; message?: unknown } | null;
  return (
    e?.code === '0A000' &&
    (e.routine === 'RevalidateCachedQuery' || /cached plan must not change result type/i.test(String(e.message)))
  );
}

const WRAPPED = Symbol('dibs.replanStaleStatements');
interface Internals {
  connection?: { parsedStatements?: Record<string, string> };
  getTransactionStatus?: () => string | null;
}

/** Wraps one connection's `query` so a statement made stale by a schema change is prepared again (idempotent). */
export function replanStaleStatements(client: pg.ClientBase): void {
  const internals = client as unknown as Internals & { [WRAPPED]?: true };
  if (internals[WRAPPED]) return;
  internals[WRAPPED] = true;
  const original = client.query.bind(client) as Query;
  /** Statements to drop on the server once the aborted transaction they failed in has ended. */
  const stale = new Set<string>();

  const forget = async (name: string): Promise<void> => {
    // the driver re-sends Parse for a name it no longer knows; the server must not know it either
    delete internals.connection?.parsedStatements?.[name];
    await (original(`DEALLOCATE ${quoteIdent(name)}`) as Promise<unknown>).catch(() => undefined);
  };

  const run = async (config: unknown, values: unknown): Promise<unknown> => {
    if (stale.size > 0 && internals.getTransactionStatus?.() !== 'E') {
      for (const name of stale) await forget(name);
      stale.clear();
    }
    const call = () => (values === undefined ? original(config) : original(config, values)) as Promise<unknown>;
    try {
      return await call();
    } catch (error) {
      const name = (config as { name?: string } | null)?.name;
      if (!name || !isStalePlan(error)) throw error;
      if (internals.getTransactionStatus?.() !== 'I') {
        delete internals.connection?.parsedStatements?.[name];
        stale.add(name);
        throw error;
      }
      await forget(name);
      return call();
    }
  };

  // only named statements are cached: every other call (plain text, unnamed, streams) runs as given
  wrapQuery(client, (config) => typeof (config as { name?: unknown } | null)?.name === 'string', run, original);
}
