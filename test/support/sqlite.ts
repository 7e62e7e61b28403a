import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs, type Dibs } from '../../src/index.js';
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
