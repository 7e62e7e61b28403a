import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs, type Dibs } from '../../src/index.js';
import { loadMigrations } from '../../src/backends/shared/sql-files.js';
import { openForSuite } from './suite-store.js';

/** A fresh SQLite database file in its own temp directory, removed by `cleanup`. */
export function tempSqliteStore(): { store: string; dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-sqlite-'));
  return { store: `sqlite:${join(dir, 'dibs.db')}`, dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function openTempSqlite(): Promise<{ dibs: Dibs; store: string; cleanup(): Promise<void> }> {
  const temp = tempSqliteStore();
  const dibs = await openDibs(temp.store);
  return {
    dibs,
    store: temp.store,
    cleanup: async () => {
      await dibs.close();
      temp.cleanup();
    },
  };
}

/**
 * For a describe block: a temp SQLite store opened before its tests and removed after them.
 * `env.dibs` is valid inside tests; `env.store` (the URL) is valid at once, for worker processes.
 */
export function sqliteForSuite(): { readonly dibs: Dibs; readonly store: string; readonly dir: string } {
  const temp = tempSqliteStore();
  return Object.assign(
    openForSuite(
      () => temp.store,
      () => temp.cleanup(),
    ),
    { dir: temp.dir },
  );
}

/**
 * Opens the file of `store` with the schema an older build left: the migrations before `before`
 * applied and recorded, nothing else. The caller writes its rows through the returned connection,
 * closes it, then opens the store with this build (which applies the rest).
 */
export function migrateFileBefore(store: string, before: number): Database.Database {
  const raw = new Database(store.slice('sqlite:'.length));
  raw.exec(
    `CREATE TABLE dibs_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`,
  );
  const record = raw.prepare(`INSERT INTO dibs_migrations (id, name, applied_at) VALUES (?, ?, 'then')`);
  for (const m of loadMigrations(new URL('../../src/backends/sqlite/migrations/', import.meta.url)).filter(
    (m) => m.id < before,
  )) {
    raw.exec(m.sql);
    record.run(m.id, m.name);
  }
  return raw;
}
