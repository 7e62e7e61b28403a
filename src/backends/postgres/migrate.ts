/**
 * Applies the numbered migrations in ./migrations once per schema. Many processes may start
 * together: the run holds a transaction-independent advisory lock keyed by the schema, so the
 * first applies and the others find the ledger up to date. Each migration runs in its own
 * transaction together with its ledger row. Then, under the same lock, the server-side functions
 * whose files changed (functions.ts).
 */
import type pg from 'pg';
import { DibsError } from '../../core/errors.js';
import { loadMigrations, newestMigrationId } from '../shared/sql-files.js';
import { quoteIdent } from './connection.js';
import { applyFunctions, digestSql, functionsDigest } from './functions.js';

const MIGRATIONS = new URL('./migrations/', import.meta.url);
/** PostgreSQL 13 is the oldest release still supported upstream; dibs uses nothing newer. */
export const MIN_SERVER_VERSION = 130000;

/** The id of the newest migration this build carries. */
export function latestMigration(): number {
  return newestMigrationId(MIGRATIONS);
}

/**
 * The cold-start check: true when the schema's ledger already has this build's newest migration
 * and its functions are this build's files (or a newer build's), in one cheap statement — then
 * opening does no migration work at all (no advisory lock, no DDL). A missing schema or ledger is
 * simply "not current".
 */
export async function schemaIsCurrent(client: pg.ClientBase, schema: string): Promise<boolean> {
  try {
    const s = quoteIdent(schema);
    const { rows } = await client.query<{ v: number | null; digest: string | null; level: number | null }>(
      `SELECT (SELECT max(id) FROM ${s}.migrations) AS v, f.digest, f.level FROM (${digestSql(`${s}.function_versions`)}) f`,
    );
    const latest = latestMigration();
    const row = rows[0];
    return (row?.v ?? 0) >= latest && (row?.digest === functionsDigest() || (row?.level ?? 0) > latest);
  } catch (error) {
    const state = (error as { code?: unknown }).code;
    if (state === '42P01' || state === '3F000') return false;
    throw error;
  }
}

export async function migrate(client: pg.ClientBase, schema: string): Promise<number> {
  await checkVersion(client);
  const lockKey = `dibs:migrate:${schema}`;
  // Another process may be migrating (we wait for its lock), and a migration may rewrite a big
  // table: neither is a stuck statement, so the session's server-side limits are lifted here
  // (the client's queryTimeoutMs still bounds each statement) and restored at the end.
  await client.query('SET statement_timeout = 0; SET lock_timeout = 0');
  await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await client.query(`SET search_path = ${quoteIdent(schema)}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
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
    await client.query('BEGIN');
    try {
      await applyFunctions(client, latestMigration());
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => {});
    await client.query('RESET statement_timeout; RESET lock_timeout').catch(() => {});
  }
}

/**
 * Migrations through a pooler in transaction mode, where no session survives a transaction: each
 * migration runs in a transaction of its own that takes the transaction-scoped advisory lock, lifts
 * the timeouts with SET LOCAL, and re-reads the ledger — so concurrent openers still apply each
 * migration exactly once.
 */
export async function migratePooled(client: pg.ClientBase, schema: string): Promise<number> {
  await checkVersion(client);
  const lockKey = `dibs:migrate:${schema}`;
  const migrations = loadMigrations(MIGRATIONS);
  await createLedger(client, schema, lockKey);
  for (let applied = 0; ; applied++) {
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey]);
      const done = new Set((await client.query<{ id: number }>('SELECT id FROM migrations')).rows.map((r) => r.id));
      const next = migrations.find((m) => !done.has(m.id));
      if (next) {
        await client.query(next.sql);
        await client.query('INSERT INTO migrations (id, name) VALUES ($1, $2)', [next.id, next.name]);
      } else {
        await applyFunctions(client, latestMigration());
      }
      await client.query('COMMIT');
      if (!next) return applied;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  }
}

async function checkVersion(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
  const version = Number(rows[0]!.v);
  if (version < MIN_SERVER_VERSION) {
    throw new DibsError(
      'unavailable',
      `postgres: server version ${version} is too old; dibs needs ${MIN_SERVER_VERSION} or newer`,
      { retriable: false },
    );
  }
}

/**
 * The schema and its ledger, in a transaction of their own. An advisory lock does not refresh the
 * catalog caches of a transaction that waited for it, so a second opener could still miss the
 * schema the first just created and collide on it; that collision (unique_violation,
 * duplicate_schema, duplicate_table) means another opener created them: fine.
 */
async function createLedger(client: pg.ClientBase, schema: string, lockKey: string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    const state = (error as { code?: unknown }).code;
    if (state !== '23505' && state !== '42P06' && state !== '42P07') throw error;
  }
}
