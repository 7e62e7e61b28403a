/**
 * A `Dibs`-shaped object whose pools, sales, locks, semaphores and counters go through dibs/client
 * over HTTP to the service (itself over `lib`), so the conformance suites written against the
 * library run unchanged through the client. The few operations the HTTP API does not offer
 * (FALLBACKS: jobs, paged export iteration, the raw backend) go to `lib` directly — the same store,
 * the default tenant, so names match.
 */
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import type { Dibs } from '../../src/index.js';
import { createClient, type DibsClient } from '../../src/client/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { CLI_ARGS, ROOT } from './cli.js';
import { serveOverHttp } from './client.js';

/** Library operations with no HTTP route, served by the library itself in these runs. */
export const FALLBACKS = [
  'pools.exportCodes',
  'pools.importCsv with onProgress (a callback)',
  'pools.exportCsv with escapeFormulas: false',
  'sales.expireHolds',
  'sales.activateDue',
  'sales.endDue',
  'sales.events',
  'backend',
] as const;

async function text(source: unknown): Promise<string> {
  if (typeof source === 'string') return source;
  if (source instanceof Uint8Array) return new TextDecoder().decode(source);
  let out = '';
  for await (const chunk of source as AsyncIterable<string | Uint8Array>)
    out += typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk, { stream: true });
  return out;
}

async function list(source: Iterable<unknown> | AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const item of source as AsyncIterable<unknown>) out.push(item);
  return out;
}

function through<C extends object>(
  client: C,
  lib: object,
  adapt: Record<string, (...args: never[]) => unknown> = {},
): C {
  return new Proxy(client, {
    get(target, prop) {
      if (typeof prop === 'string' && prop in adapt) return adapt[prop];
      const own = (target as Record<string | symbol, unknown>)[prop];
      if (typeof own === 'function') return (own as (...a: unknown[]) => unknown).bind(target);
      const fallback = (lib as Record<string | symbol, unknown>)[prop];
      return typeof fallback === 'function' ? (fallback as (...a: unknown[]) => unknown).bind(lib) : fallback;
    },
  });
}

export function dibsOverClient(lib: Dibs, client: DibsClient, close: () => Promise<void>): Dibs {
  const pools = through(client.pools, lib.pools, {
    importCodes: (async (pool: string, codes: Iterable<unknown> | AsyncIterable<unknown>) =>
      client.pools.importCodes(pool, (await list(codes)) as never)) as never,
    importCsv: (async (pool: string, source: unknown, options?: { onProgress?: unknown }) =>
      options?.onProgress
        ? lib.pools.importCsv(pool, source as never, options as never)
        : client.pools.importCsv(pool, await text(source))) as never,
    exportCsv: (async (pool: string, options: { status?: never; escapeFormulas?: boolean } = {}) =>
      options.escapeFormulas === false
        ? lib.pools.exportCsv(pool, options)
        : Readable.from([
            await client.pools.exportCsv(pool, options.status ? { status: options.status } : {}),
          ])) as never,
  });
  return {
    backend: lib.backend,
    pools,
    sales: through(client.sales, lib.sales),
    semaphores: through(client.semaphores, lib.semaphores),
    locks: through(client.locks, lib.locks),
    counters: through(client.counters, lib.counters),
    close: async () => {
      await close();
      await lib.close();
    },
  } as unknown as Dibs;
}

/** A conformance factory: `open` a library target, serve it over HTTP, answer a client-backed Dibs. */
export function throughClient(open: () => Promise<{ dibs: Dibs; cleanup(): Promise<void> }>) {
  return async () => {
    const target = await open();
    const served = await serveOverHttp(target.dibs);
    const dibs = dibsOverClient(
      target.dibs,
      served.client({ retry: { attempts: 3, baseDelayMs: 20, maxDelayMs: 200 } }),
      () => Promise.resolve(),
    );
    return {
      dibs,
      cleanup: async () => {
        await served.close();
        await target.cleanup();
      },
    };
  };
}

/**
 * A conformance factory through a real `dibs serve` process (the CLI, --no-jobs so the suites'
 * own job calls stay deterministic) on the store `open` made; an admin key of the default tenant
 * is created in that store. Bounded: the server must say it is serving within 60 s; cleanup sends
 * SIGTERM, then SIGKILL after 10 s.
 */
export function throughServe(open: () => Promise<{ dibs: Dibs; store: string; cleanup(): Promise<void> }>) {
  return async () => {
    const target = await open();
    const apiKey = (await createApiKey(target.dibs.backend.service, { name: 'serve conformance', scopes: ['admin'] }))
      .key;
    const child = spawn(
      process.execPath,
      [...CLI_ARGS, 'serve', '--port', '0', '--no-jobs', '--rate-limit', '0', '--store', target.store],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
    };
    let stderr = '';
    try {
      const baseUrl = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`dibs serve did not start within 60 s:\n${stderr}`)), 60_000);
        child.stderr!.on('data', (d: Buffer) => {
          stderr += d.toString();
          const url = /dibs is serving (http:\/\/\S+)/.exec(stderr);
          if (url) {
            clearTimeout(timer);
            resolve(url[1]!);
          }
        });
        void exited.then(() => reject(new Error(`dibs serve exited early:\n${stderr}`)));
      });
      const client = createClient({ baseUrl, apiKey, retry: { attempts: 3, baseDelayMs: 20, maxDelayMs: 200 } });
      return {
        dibs: dibsOverClient(target.dibs, client, () => Promise.resolve()),
        cleanup: async () => {
          await stop();
          await target.cleanup();
        },
      };
    } catch (error) {
      await stop();
      await target.cleanup();
      throw error;
    }
  };
}
