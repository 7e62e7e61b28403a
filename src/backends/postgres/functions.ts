/**
 * Server-side functions live once each, as functions/<name>.sql (CREATE OR REPLACE FUNCTION …),
 * not as copies in migrations: migrations keep tables, indexes and data moves. After the
 * migrations, a file is applied when its content hash differs from the one in the schema's
 * function_versions ledger (023), under the migration lock, in one transaction with its ledger row.
 * A function whose signature changes starts its file with the DROP FUNCTION IF EXISTS of the old one.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const DIR = new URL('./functions/', import.meta.url);

export interface FunctionFile {
  name: string;
  sql: string;
  hash: string;
}

let cached: FunctionFile[] | null = null;

/** The function files of this build, by name (byte order, as the ledger digest sorts them). */
export function loadFunctions(): FunctionFile[] {
  cached ??= readdirSync(fileURLToPath(DIR))
    .filter((file) => /^[a-z_][a-z0-9_]*\.sql$/.test(file))
    .sort()
    .map((file) => {
      const sql = readFileSync(new URL(file, DIR), 'utf8');
      return {
        name: file.replace(/\.sql$/, ''),
        sql,
        hash: createHash('sha256').update(sql).digest('hex').slice(0, 32),
      };
    });
  return cached;
}

/** `name=hash,…` of every file: what the ledger reads back (see DIGEST_SQL) when the schema is current. */
export const functionsDigest = (): string =>
  loadFunctions()
    .map((f) => `${f.name}=${f.hash}`)
    .join(',');

/** The ledger's digest and newest level, for the cold-start check (schema-qualified by the caller). */
export const digestSql = (qualified: string): string =>
  `SELECT string_agg(name || '=' || hash, ',' ORDER BY name COLLATE "C") AS digest, max(level) AS level FROM ${qualified}`;

/**
 * Applies the files whose hash the ledger does not have, and forgets ledger rows of files this
 * build no longer has. The caller holds the migration lock, has the schema on its search_path and
 * runs this inside a transaction. Nothing is applied when a build with more migrations (`level`)
 * applied the functions: the newer build's text stays. Returns how many files were applied.
 */
export async function applyFunctions(client: pg.ClientBase, level: number): Promise<number> {
  const { rows } = await client.query<{ name: string; hash: string; level: number }>(
    'SELECT name, hash, level FROM function_versions',
  );
  if (rows.some((r) => r.level > level)) return 0;
  const have = new Map(rows.map((r) => [r.name, r.hash]));
  let applied = 0;
  for (const file of loadFunctions()) {
    if (have.get(file.name) === file.hash) continue;
    await client.query(file.sql);
    await client.query(
      `INSERT INTO function_versions (name, hash, level) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET hash = EXCLUDED.hash, level = EXCLUDED.level, applied_at = now()`,
      [file.name, file.hash, level],
    );
    applied++;
  }
  await client.query('DELETE FROM function_versions WHERE NOT (name = ANY($1))', [loadFunctions().map((f) => f.name)]);
  return applied;
}
