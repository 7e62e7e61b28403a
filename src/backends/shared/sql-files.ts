/**
 * SQL lives in real .sql files beside the code that runs it. Two shapes:
 * - migrations: `NNN_name.sql`, applied in numeric order, each once;
 * - query files: blocks introduced by `-- name: someQuery`, loaded into a name → SQL map.
 * Files are read relative to the calling module, so the same code works from src/ (tsx) and
 * dist/ (the build copies .sql files).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

const MIGRATION_FILE = /^\d{3,}_[\w-]+\.sql$/;

/** The id of the newest migration in `dir`, from the file names alone (a cold start reads no SQL). */
export function newestMigrationId(dir: URL): number {
  return Math.max(
    0,
    ...readdirSync(fileURLToPath(dir))
      .filter((file) => MIGRATION_FILE.test(file))
      .map((file) => Number(file.slice(0, file.indexOf('_')))),
  );
}

export function loadMigrations(dir: URL): Migration[] {
  const path = fileURLToPath(dir);
  const migrations = readdirSync(path)
    .filter((file) => MIGRATION_FILE.test(file))
    .sort()
    .map((file) => ({
      id: Number(file.slice(0, file.indexOf('_'))),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }));
  // Numbers are unique and increasing. A gap is allowed: features land on different branches
  // with reserved numbers (e.g. PostgreSQL 004_service before 002/003), and the ledger records
  // each id, so a later-added lower number is still applied exactly once.
  migrations.forEach((m, i) => {
    if (!(m.id >= 1) || (i > 0 && m.id <= migrations[i - 1]!.id))
      throw new Error(
        `migrations in ${path} must have unique increasing numbers; found ${m.name} at position ${i + 1}`,
      );
  });
  return migrations;
}

export function loadQueries<const Names extends string>(file: URL, names: readonly Names[]): Record<Names, string> {
  const text = readFileSync(file, 'utf8');
  const queries: Record<string, string> = {};
  let current: string | null = null;
  for (const line of text.split('\n')) {
    const header = /^--\s*name:\s*(\w+)\s*$/.exec(line);
    if (header) {
      current = header[1]!;
      queries[current] = '';
    } else if (current !== null) {
      queries[current] += `${line}\n`;
    }
  }
  for (const name of names) {
    const sql = queries[name]?.trim();
    if (!sql) throw new Error(`query '${name}' missing from ${fileURLToPath(file)}`);
    queries[name] = sql;
  }
  return queries as Record<Names, string>;
}
