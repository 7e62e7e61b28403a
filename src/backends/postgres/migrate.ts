/**
 * Applies the numbered migrations in ./migrations once per schema. Many processes may start
 * together: the run holds a transaction-independent advisory lock keyed by the schema, so the
 * first applies and the others find the ledger up to date. Each migration runs in its own
 * transaction together with its ledger row.
 */
import type pg from 'pg';
import { DibsError } from '../../core/errors.js';
import { loadMigrations } from '../shared/sql-files.js';
import { quoteIdent } from './connection.js';

const MIGRATIONS = new URL('./migrations/', import.meta.url);
/** PostgreSQL 13 is the oldest release still supported upstream; dibs uses nothing newer. */
export const MIN_SERVER_VERSION = 130000;

export async function migrate(client: pg.ClientBase, schema: string): Promise<number> {
  const { rows } = await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
  const version = Number(rows[0]!.v);
  if (version < MIN_SERVER_VERSION) {
    throw new DibsError('unavailable', `postgres: server version ${version} is too old; dibs needs ${MIN_SERVER_VERSION} or newer`, { retriable: false });
  }
  const lockKey = `dibs:migrate:${schema}`;
  // Another process may be migrating (we wait for its lock), and a migration may rewrite a big
  // table: neither is a stuck statement, so the session's server-side limits are lifted here
  // (the client's queryTimeoutMs still bounds each statement) and restored at the end.
  await client.query('SET statement_timeout = 0; SET lock_timeout = 0');
  await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await client.query(`SET search_path = ${quoteIdent(schema)}`);
    await client.query(`CREATE TABLE IF NOT EXISTS migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ id: number }>('SELECT id FROM migrations')).rows.map((r) => r.id));
    let applied = 0;
    for (const migration of loadMigrations(MIGRATIONS)) {
      if (done.has(migration.id)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO migrations (id, name) VALUES ($1, $2)', [migration.id, migration.name]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      applied++;
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => {});
    await client.query('RESET statement_timeout; RESET lock_timeout').catch(() => {});
  }
}
