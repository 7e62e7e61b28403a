/**
 * Store URL → backend. Each backend module is imported only when its URL scheme is used, so a
 * SQLite user never loads `pg` or `ioredis`.
 */
import type { Backend, BackendFactory, BackendOptions } from '../core/backend.js';
import { DibsError } from '../core/errors.js';
import { parseStoreUrl, redact, schemeOf } from './store-url.js';

export { parseStoreUrl, redact, schemeOf };

const FACTORIES: Record<string, () => Promise<BackendFactory>> = {
  sqlite: async () => (await import('./sqlite/index.js')).openSqlite,
  postgres: async () => (await import('./postgres/index.js')).openPostgres,
  redis: async () => (await import('./redis/index.js')).openRedis,
  'redis+cluster': async () => (await import('./redis/index.js')).openRedis,
  'redis+sentinel': async () => (await import('./redis/index.js')).openRedis,
  firestore: async () => (await import('./firestore/index.js')).openFirestore,
};

/**
 * The npm packages each store's driver needs. They are optional peer dependencies: what runs in a
 * serverless function (dibs/client, or one store) installs without the others.
 */
export const STORE_PACKAGES: Record<string, readonly string[]> = {
  postgres: ['pg', 'pg-copy-streams'],
  redis: ['ioredis'],
  'redis+cluster': ['ioredis'],
  firestore: ['@google-cloud/firestore'],
};

/** A driver package that is not installed → a typed error naming what to install. */
async function loadDriver<T>(scheme: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = error instanceof Error ? error.message : '';
    const missing = (STORE_PACKAGES[scheme] ?? []).find(
      (name) => message.includes(`'${name}'`) || message.includes(`"${name}"`),
    );
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && missing) {
      const all = STORE_PACKAGES[scheme]!.join(' ');
      throw new DibsError(
        'unsupported',
        `store: ${scheme} needs the npm package '${missing}', which is not installed: npm install ${all}`,
        { field: 'store', details: { package: missing, install: `npm install ${all}` }, cause: error },
      );
    }
    throw error;
  }
}

export const DEFAULT_STORE = 'sqlite:./dibs.db';

export async function openBackend(store: string, options: BackendOptions = {}): Promise<Backend> {
  const url = parseStoreUrl(store);
  const load = FACTORIES[schemeOf(url)];
  if (!load) {
    throw new DibsError(
      'invalid_input',
      `store: unsupported scheme '${url.protocol}' (supported: ${Object.keys(FACTORIES).join(', ')})`,
      { field: 'store' },
    );
  }
  // Tiered mode: `?fastpath=redis://…` on a SQLite or PostgreSQL URL puts a Redis fast path for
  // sale buys over that store, which stays the ledger (backends/tiered/).
  const fastpath = url.searchParams.get('fastpath');
  const factory = await loadDriver(schemeOf(url), load);
  if (fastpath === null) return factory(url, options);
  url.searchParams.delete('fastpath');
  const ledger = await factory(url, options);
  try {
    return await (await loadDriver('redis', () => import('./tiered/index.js'))).openTiered(ledger, fastpath);
  } catch (error) {
    await ledger.close();
    throw error;
  }
}
