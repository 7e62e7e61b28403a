/**
 * PostgreSQL for tests: the server from DIBS_TEST_PG (default postgres://root@127.0.0.1:5432/test),
 * a unique schema per test file (dropped afterwards), and a reachability check that fails loudly
 * in CI and skips loudly elsewhere.
 */
import pg from 'pg';
import { loadMigrations } from '../../src/backends/shared/sql-files.js';
import { openDibs, type Dibs } from '../../src/index.js';
import { uniqueId } from './assert.js';
import { openForSuite } from './suite-store.js';

export const TEST_PG = process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';

const HOW_TO = `PostgreSQL is not reachable at ${TEST_PG}. Start it (e.g. \`pg_ctlcluster 15 main start\` or \`service postgresql start\`) or point DIBS_TEST_PG at a server where the user may create schemas.`;

let reachable: Promise<string | null> | undefined;

/** null when PostgreSQL answers; otherwise why not. Checked once per process. */
export function postgresUnreachable(): Promise<string | null> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_PG, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return null;
    } catch (error) {
      return `${HOW_TO} (${error instanceof Error ? error.message : String(error)})`;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/**
 * For `describe(..., { skip })` / `before`: in CI an unreachable server is a failure, otherwise the
 * suite is skipped with instructions printed on stderr.
 */
export async function requirePostgres(): Promise<string | false> {
  const why = await postgresUnreachable();
  if (why === null) return false;
  if (process.env.CI === 'true') throw new Error(why);
  process.stderr.write(`\n*** SKIPPING PostgreSQL tests: ${why}\n\n`);
  return why;
}

/** A store URL in a fresh schema, with `drop()` removing the schema and everything in it. */
export function tempPgStore(params: Record<string, string> = {}): {
  store: string;
  schema: string;
  drop(): Promise<void>;
} {
  const schema = uniqueId('t').toLowerCase();
  const url = new URL(TEST_PG);
  url.searchParams.set('schema', schema);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return { store: url.href, schema, drop: () => dropSchema(schema) };
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_PG });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export async function openTempPg(
  params: Record<string, string> = {},
): Promise<{ dibs: Dibs; store: string; schema: string; cleanup(): Promise<void> }> {
  const temp = tempPgStore(params);
  const dibs = await openDibs(temp.store);
  return {
    dibs,
    store: temp.store,
    schema: temp.schema,
    cleanup: async () => {
      await dibs.close();
      await temp.drop();
    },
  };
}

/** Runs SQL as the test superuser (for fault injection: pg_terminate_backend). */
export async function adminQuery<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: TEST_PG });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Fault injection: while `work` runs, terminates (pg_terminate_backend) every connection whose
 * application_name is `app`, `rounds` times, `everyMs` apart — starting once more than
 * `minConnections` of them are open (the workers are under way). Returns the work's result and how
 * many connections were terminated. Bounded in rounds and time.
 */
export async function terminateConnectionsDuring<T>(
  app: string,
  work: Promise<T>,
  options: { rounds?: number; everyMs?: number; minConnections?: number } = {},
): Promise<{ result: T; killed: number }> {
  const { rounds = 40, everyMs = 50, minConnections = 4 } = options;
  let killed = 0;
  let stop = false;
  const killer = (async () => {
    for (let wait = 0; wait < 400 && !stop; wait++) {
      const [row] = await adminQuery<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
        [app],
      );
      if (row!.n > minConnections) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    for (let round = 0; round < rounds && !stop; round++) {
      const rows = await adminQuery<{ ok: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
        [app],
      );
      killed += rows.filter((r) => r.ok).length;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  try {
    const result = await work;
    stop = true;
    await killer;
    return { result, killed };
  } finally {
    stop = true;
    await killer.catch(() => undefined);
  }
}

/**
 * For a describe block: a fresh schema opened before its tests and dropped after them (the
 * PostgreSQL twin of sqliteForSuite). `env.store` (the URL) is valid at once, for worker processes.
 */
export function pgForSuite(params: Record<string, string> = {}): {
  readonly dibs: Dibs;
  readonly store: string;
  readonly schema: string;
} {
  const temp = tempPgStore(params);
  return Object.assign(
    openForSuite(
      () => temp.store,
      () => temp.drop(),
    ),
    { schema: temp.schema },
  );
}

/**
 * Builds `schema` as a database that an older build left behind: the migrations numbered below
 * `before` applied and recorded, none after. `raw` keeps `search_path` on the schema, so a test can
 * then write what that older build would have written before dibs opens it and migrates the rest.
 */
export async function migrateSchemaBefore(raw: pg.Client, schema: string, before: number): Promise<void> {
  await raw.query(`CREATE SCHEMA "${schema}"; SET search_path = "${schema}"`);
  await raw.query(
    `CREATE TABLE migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const migrations = loadMigrations(new URL('../../src/backends/postgres/migrations/', import.meta.url));
  for (const m of migrations.filter((m) => m.id < before)) {
    await raw.query(m.sql);
    await raw.query('INSERT INTO migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
  }
}
