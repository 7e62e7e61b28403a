/**
 * Tiered mode: a durable ledger (SQLite or PostgreSQL) with a Redis fast path for sale buys.
 * Selected by a `fastpath` parameter on the ledger's URL:
 *
 *   postgres://…/db?fastpath=redis%3A%2F%2F127.0.0.1%3A6379%2F0
 *   sqlite:./dibs.db?fastpath=redis://127.0.0.1:6379/0        (the rest of the URL is the ledger's)
 *
 * The fast-path URL's own query parameters: `prefix` (key prefix, default `dibs`), `chunk` (units per
 * grant, default 32), `grantTtlMs` (an open grant is revoked after this, default 30000),
 * `recheckMs` (how long Redis keeps a sold-out / ledger-only answer, default 200), `breakerMs`
 * (circuit open after a Redis failure, default 1000), `commandTimeoutMs` (default 1000).
 *
 * Everything but sales is the ledger's; sales are the ledger's too, with buys served through Redis
 * while it is healthy (tiered/sales.ts). Guarantees: docs/sales.md "Tiered mode".
 */
import { Redis } from 'ioredis';
import type { Backend } from '../../core/backend.js';
import { DibsError } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import { TieredSales, type TieredOptions } from './sales.js';

export const TIERED_PARAM = 'fastpath';

export async function openTiered(ledger: Backend, fastpath: string): Promise<Backend> {
  if (!ledger.sales || !ledger.grants) {
    throw new DibsError('invalid_input', `store: ${TIERED_PARAM}= needs a ledger that keeps sale grants (sqlite: or postgres://), not ${ledger.kind}`, { field: 'store' });
  }
  let url: URL;
  try {
    url = new URL(fastpath);
  } catch {
    throw new DibsError('invalid_input', `store: ${TIERED_PARAM} must be a redis:// URL`, { field: 'store' });
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new DibsError('invalid_input', `store: ${TIERED_PARAM} must be a redis:// or rediss:// URL (Cluster is not supported for the fast path yet)`, { field: 'store' });
  const options = tieredOptions(url);
  const commandTimeout = intParam(url, 'commandTimeoutMs', 1000, 50, 60_000);
  url.searchParams.delete('commandTimeoutMs');
  const client = new Redis(url.toString(), {
    lazyConnect: true,
    // A dead Redis must not queue buys: fail at once and let the circuit breaker send them to the ledger.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    commandTimeout,
    retryStrategy: (attempt: number) => Math.min(20 * 2 ** attempt, 500),
  });
  client.on('error', () => {});
  // Redis being down at start is not fatal: the ledger sells until it answers.
  await client.connect().catch(() => {});
  return new TieredBackend(ledger, client, options);
}

function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  const value = raw === null ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new DibsError('invalid_input', `store: ${TIERED_PARAM} ${name} must be a whole number from ${min} to ${max}`, { field: 'store' });
  return value;
}

function tieredOptions(url: URL): TieredOptions {
  const prefix = url.searchParams.get('prefix') ?? 'dibs';
  if (!/^[\w.:-]{1,64}$/.test(prefix)) throw new DibsError('invalid_input', 'store: prefix may use letters, digits, "_", ".", ":" and "-"', { field: 'store' });
  const options: TieredOptions = {
    prefix,
    chunk: intParam(url, 'chunk', 32, 1, 100_000),
    grantTtlMs: intParam(url, 'grantTtlMs', 30_000, 500, 86_400_000),
    recheckMs: intParam(url, 'recheckMs', 200, 10, 60_000),
    breakerMs: intParam(url, 'breakerMs', 1000, 10, 600_000),
    leaseMs: 2000,
  };
  for (const name of ['prefix', 'chunk', 'grantTtlMs', 'recheckMs', 'breakerMs']) url.searchParams.delete(name);
  return options;
}

export class TieredBackend implements Backend {
  readonly kind = 'tiered';
  readonly sales: TieredSales;
  private closed = false;

  constructor(
    readonly ledger: Backend,
    private readonly redis: Redis,
    readonly options: TieredOptions,
  ) {
    this.sales = new TieredSales(ledger.sales!, ledger.grants!, redis, options);
  }

  get pools() {
    return this.ledger.pools;
  }
  get grants() {
    return this.ledger.grants;
  }
  get outbox() {
    return this.ledger.outbox;
  }
  get locks() {
    return this.ledger.locks;
  }
  get counters() {
    return this.ledger.counters;
  }
  get waitingRooms() {
    return this.ledger.waitingRooms;
  }
  get forecasts() {
    return this.ledger.forecasts;
  }
  get service() {
    return this.ledger.service;
  }

  async health(): Promise<Health> {
    const ledger = await this.ledger.health();
    let fastPath: Record<string, unknown>;
    try {
      await this.redis.ping();
      fastPath = { ok: true, prefix: this.options.prefix, breaker: this.sales.breaker.open ? 'open' : 'closed' };
    } catch (error) {
      fastPath = { ok: false, error: (error as Error).message, note: 'buys are served by the ledger until Redis answers' };
    }
    // A dead fast path degrades speed, never correctness: health follows the ledger.
    return { ok: ledger.ok, backend: this.kind, details: { ...ledger.details, ledger: ledger.backend, fastPath } };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.redis.quit().catch(() => this.redis.disconnect());
    await this.ledger.close();
  }
}
