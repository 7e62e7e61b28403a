/**
 * Store URL → backend. Each backend module is imported only when its URL scheme is used, so a
 * SQLite user never loads `pg` or `ioredis`.
 */
import type { Backend, BackendFactory, BackendOptions } from '../core/backend.js';
import { DibsError } from '../core/errors.js';

const FACTORIES: Record<string, () => Promise<BackendFactory>> = {
  sqlite: async () => (await import('./sqlite/index.js')).openSqlite,
  postgres: async () => (await import('./postgres/index.js')).openPostgres,
  redis: async () => (await import('./redis/index.js')).openRedis,
  'redis+cluster': async () => (await import('./redis/index.js')).openRedis,
  'redis+sentinel': async () => (await import('./redis/index.js')).openRedis,
  firestore: async () => (await import('./firestore/index.js')).openFirestore,
};

export const DEFAULT_STORE = 'sqlite:./dibs.db';

export function parseStoreUrl(store: string): URL {
  // `redis+cluster://a:1,b:2/…` and `redis+sentinel://a:1,b:2/master/0` name several hosts, which
  // a WHATWG URL cannot hold: the host list moves into a `nodes` parameter.
  const cluster = /^redis\+(cluster|sentinel):\/\/(?:([^@/?#]*)@)?([^/?#]+)(.*)$/.exec(store);
  if (cluster) {
    const url = new URL(`redis+${cluster[1]}://${cluster[2] ? `${cluster[2]}@` : ''}${cluster[1]}${cluster[4]}`);
    url.searchParams.set('nodes', cluster[3]!);
    return url;
  }
  try {
    return new URL(store);
  } catch {
    throw new DibsError('invalid_input', `store: '${redact(store)}' is not a URL (try sqlite:./dibs.db, postgres://…, redis://…)`, { field: 'store' });
  }
}

export function schemeOf(url: URL): string {
  const scheme = url.protocol.replace(/:$/, '');
  return scheme === 'postgresql' ? 'postgres' : scheme === 'rediss' ? 'redis' : scheme;
}

export async function openBackend(store: string, options: BackendOptions = {}): Promise<Backend> {
  const url = parseStoreUrl(store);
  const load = FACTORIES[schemeOf(url)];
  if (!load) {
    throw new DibsError('invalid_input', `store: unsupported scheme '${url.protocol}' (supported: ${Object.keys(FACTORIES).join(', ')})`, { field: 'store' });
  }
  // Tiered mode: `?fastpath=redis://…` on a SQLite or PostgreSQL URL puts a Redis fast path for
  // sale buys over that store, which stays the ledger (backends/tiered/).
  const fastpath = url.searchParams.get('fastpath');
  if (fastpath === null) return (await load())(url, options);
  url.searchParams.delete('fastpath');
  const ledger = await (await load())(url, options);
  try {
    return await (await import('./tiered/index.js')).openTiered(ledger, fastpath);
  } catch (error) {
    await ledger.close();
    throw error;
  }
}

/** The store URL without its password, for logs and messages. */
export function redact(store: string): string {
  return store.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}
