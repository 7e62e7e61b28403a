/**
 * Whether this Node can run the SQLite store. better-sqlite3 12 — the last line that supports
 * Node 20 — aborts the whole process on Node 24 when a statement is garbage-collected
 * (`Assertion failed: (env) != nullptr` in `node::RemoveEnvironmentCleanupHook`, exit 134): at a
 * random moment, with every request of the process in flight. The store refuses to open there
 * instead, with the way out; better-sqlite3 13 (Node-API) does not have the fault.
 * docs/operations.md, "Node versions".
 */
import { createRequire } from 'node:module';
import { DibsError } from '../../core/errors.js';

const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

/** The installed better-sqlite3's version. */
function driverVersion(): string {
  return (createRequire(import.meta.url)('better-sqlite3/package.json') as { version: string }).version;
}

/** Why this Node and driver cannot run the SQLite store, or null when they can. */
export function sqliteNodeProblem(
  node: string = process.versions.node,
  driver: string = driverVersion(),
): string | null {
  if (major(node) < 24 || major(driver) >= 13) return null;
  return (
    `the SQLite store does not run on Node ${node} with better-sqlite3 ${driver}: that driver aborts the ` +
    'process when a statement is garbage-collected on Node 24 and later. Run dibs on Node 20 or 22 for ' +
    'SQLite, or use a PostgreSQL, Redis or Firestore store (docs/operations.md, "Node versions")'
  );
}

/** Throws `unsupported` when the SQLite store cannot run here. */
export function assertSqliteRunsHere(): void {
  const problem = sqliteNodeProblem();
  if (problem) throw new DibsError('unsupported', problem);
}
