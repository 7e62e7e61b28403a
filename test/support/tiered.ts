/**
 * Tiered stores for tests: a SQLite file or a PostgreSQL schema as the ledger, with a Redis fast
 * path (`?fastpath=redis://…`) under a fresh key prefix, all removed by `cleanup`.
 */
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { tempPgStore } from './postgres.js';
import { deletePrefix, SHARED_REDIS, testPrefix } from './redis.js';
import { tempSqliteStore } from './sqlite.js';
import { openForSuite } from './suite-store.js';

export type Ledger = 'sqlite' | 'postgres';

/** The tiered store URL over a fresh ledger; `redis` defaults to the shared server. */
export function tempTieredStore(ledger: Ledger, options: { redis?: string; fast?: Record<string, string>; ledgerParams?: Record<string, string> } = {}): { store: string; redis: string; prefix: string; schema?: string; drop(): Promise<void> } {
  const redis = options.redis ?? SHARED_REDIS;
  const prefix = testPrefix();
  const fast = new URL(redis);
  fast.searchParams.set('prefix', prefix);
  for (const [k, v] of Object.entries(options.fast ?? {})) fast.searchParams.set(k, v);
  let base: { store: string; schema?: string; drop(): Promise<void> };
  if (ledger === 'postgres') {
    const pg = tempPgStore(options.ledgerParams);
    base = { store: pg.store, schema: pg.schema, drop: pg.drop };
  } else {
    const lite = tempSqliteStore();
    base = { store: lite.store, drop: async () => lite.cleanup() };
  }
  const url = new URL(base.store);
  url.searchParams.set('fastpath', fast.href);
  return {
    store: url.href,
    redis,
    prefix,
    ...(base.schema ? { schema: base.schema } : {}),
    drop: async () => {
      await base.drop();
      if (await answers(redis)) await deletePrefix(redis, prefix); // a test-owned Redis may be gone already
    },
  };
}

export async function openTempTiered(ledger: Ledger, options: Parameters<typeof tempTieredStore>[1] = {}): Promise<{ dibs: Dibs; store: string; redis: string; prefix: string; cleanup(): Promise<void> }> {
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

/** For a describe block: a tiered store opened before its tests and removed after them. */
export function tieredForSuite(ledger: Ledger, options: Parameters<typeof tempTieredStore>[1] = {}): { readonly dibs: Dibs; readonly store: string; readonly prefix: string } {
  const temp = tempTieredStore(ledger, options);
  return Object.assign(openForSuite(() => temp.store, () => temp.drop()), { prefix: temp.prefix });
}

/** Whether a Redis answers at `url` (one attempt, no retries). */
async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
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
