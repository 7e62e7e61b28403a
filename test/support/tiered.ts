/**
 * Tiered stores for tests: a SQLite file or a PostgreSQL schema as the ledger, with a Redis fast
 * path (`?fastpath=redis://…` or `redis+cluster://…`) under a fresh key prefix, all removed by
 * `cleanup` (a test-owned Cluster's keys go with the Cluster).
 */
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { tempPgStore } from './postgres.js';
import { deletePrefix, SHARED_REDIS, testPrefix } from './redis.js';
import { tempSqliteStore } from './sqlite.js';
import { openForSuite } from './suite-store.js';

export type Ledger = 'sqlite' | 'postgres';

/** The tiered store URL over a fresh ledger; `redis` defaults to the shared server. */
export function tempTieredStore(
  ledger: Ledger,
  options: { redis?: string; fast?: Record<string, string>; ledgerParams?: Record<string, string> } = {},
): { store: string; redis: string; prefix: string; schema?: string; drop(): Promise<void> } {
  const redis = options.redis ?? SHARED_REDIS;
  const prefix = testPrefix();
  // Appended as text: a Cluster URL's host list (a,b,c) is no WHATWG URL.
  const fastParams = new URLSearchParams({ ...options.fast, prefix });
  const fast = `${redis}${redis.includes('?') ? '&' : '?'}${fastParams}`;
  let base: { store: string; schema?: string; drop(): Promise<void> };
  if (ledger === 'postgres') {
    const pg = tempPgStore(options.ledgerParams);
    base = { store: pg.store, schema: pg.schema, drop: pg.drop };
  } else {
    const lite = tempSqliteStore();
    base = { store: lite.store, drop: async () => lite.cleanup() };
  }
  const url = new URL(base.store);
  url.searchParams.set('fastpath', fast);
  return {
    store: url.href,
    redis,
    prefix,
    ...(base.schema ? { schema: base.schema } : {}),
    drop: async () => {
      await base.drop();
      // A test-owned Redis may be gone already; a test-owned Cluster is thrown away whole.
      if (!redis.startsWith('redis+cluster:') && (await answers(redis))) await deletePrefix(redis, prefix);
    },
  };
}

export async function openTempTiered(
  ledger: Ledger,
  options: Parameters<typeof tempTieredStore>[1] = {},
): Promise<{ dibs: Dibs; store: string; redis: string; prefix: string; cleanup(): Promise<void> }> {
  const temp = tempTieredStore(ledger, options);
  const dibs = await openDibs(temp.store);
  return {
    dibs,
    store: temp.store,
    redis: temp.redis,
    prefix: temp.prefix,
    cleanup: async () => {
      await dibs.close();
      await temp.drop();
    },
  };
}

/**
 * For a describe block: a tiered store opened before its tests and removed after them. `redis` may
 * be a function: a test-owned Cluster's URL is known only once its `before` hook ran.
 */
export function tieredForSuite(
  ledger: Ledger,
  options: Omit<Parameters<typeof tempTieredStore>[1] & {}, 'redis'> & { redis?: string | (() => string) } = {},
): { readonly dibs: Dibs; readonly store: string; readonly prefix: string } {
  let temp: ReturnType<typeof tempTieredStore> | undefined;
  const made = () =>
    (temp ??= tempTieredStore(ledger, {
      ...options,
      redis: typeof options.redis === 'function' ? options.redis() : options.redis,
    }));
  const suite = openForSuite(
    () => made().store,
    () => temp?.drop(),
  );
  return Object.defineProperty(suite, 'prefix', { get: () => made().prefix }) as typeof suite & {
    readonly prefix: string;
  };
}

/** Whether a Redis answers at `url` (one attempt, no retries). */
async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}
