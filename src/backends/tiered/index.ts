/**
 * Tiered mode: a durable ledger (SQLite or PostgreSQL) with a Redis fast path for sale buys.
 * Selected by a `fastpath` parameter on the ledger's URL:
 *
 *   postgres://…/db?fastpath=redis%3A%2F%2F127.0.0.1%3A6379%2F0
 *   sqlite:./dibs.db?fastpath=redis://127.0.0.1:6379/0        (the rest of the URL is the ledger's)
 *   sqlite:./dibs.db?fastpath=redis%2Bcluster%3A%2F%2F10.0.0.1%3A7000%2C10.0.0.2%3A7000   (a Cluster)
 *
 * The client is the Redis backend's (redis/connect.ts), set to fail at once rather than queue or
 * retry. On a Cluster each sale's keys share one slot, a lost state is noticed and reconciled per
 * sale, and each sale has its own circuit breaker, so a master that is down or flushed affects only
 * the sales in its slots (docs/sales.md "On a Redis Cluster").
 *
 * The fast-path URL's own query parameters: `prefix` (key prefix, default `dibs`), `chunk` (units per
 * grant, default 32), `grantTtlMs` (an open grant is revoked after this, default 30000),
 * `recheckMs` (how long Redis keeps a sold-out / ledger-only answer, default 200), `breakerMs`
 * (circuit open after a Redis failure, default 1000), `commandTimeoutMs` (default 1000).
 *
 * Everything but sales is the ledger's; sales are the ledger's too, with buys served through Redis
 * while it is healthy (tiered/sales.ts). Guarantees: docs/sales.md "Tiered mode".
 */
import type { Cluster } from 'ioredis';
import type { Backend } from '../../core/backend.js';
import { DibsError } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import { createRedisClient, isClusterUrl } from '../redis/connect.js';
import { unavailableReply } from '../redis/errors.js';
import type { RedisClient } from '../redis/scripts.js';
import { parseStoreUrl } from '../store-url.js';
import { TieredSales, type TieredOptions } from './sales.js';
import { TieredWaitingRooms } from './waiting-rooms.js';

export const TIERED_PARAM = 'fastpath';

export async function openTiered(ledger: Backend, fastpath: string): Promise<Backend> {
  if (!ledger.grants) {
    throw new DibsError(
      'invalid_input',
      `store: ${TIERED_PARAM}= needs a ledger that keeps sale grants (sqlite: or postgres://), not ${ledger.kind}`,
      { field: 'store' },
    );
  }
  let url: URL;
  try {
    // An unencoded `+` in the ledger's query string arrives as a space (`redis cluster://…`); a
    // scheme cannot hold a space, so this can only mean the Cluster scheme.
    url = parseStoreUrl(fastpath.replace(/^redis cluster:\/\//, 'redis+cluster://'));
  } catch {
    throw new DibsError(
      'invalid_input',
      `store: ${TIERED_PARAM} must be a redis://, rediss:// or redis+cluster:// URL`,
      { field: 'store' },
    );
  }
  if (!['redis:', 'rediss:', 'redis+cluster:'].includes(url.protocol))
    throw new DibsError(
      'invalid_input',
      `store: ${TIERED_PARAM} must be a redis://, rediss:// or redis+cluster:// URL`,
      { field: 'store' },
    );
  const options = tieredOptions(url);
  const commandTimeout = intParam(url, 'commandTimeoutMs', 1000, 50, 60_000);
  url.searchParams.delete('commandTimeoutMs');
  const cluster = isClusterUrl(url);
  const reconnect = (attempt: number) => Math.min(20 * 2 ** attempt, 500);
  const client = createRedisClient(url, {
    // A dead Redis must not queue buys: fail at once and let the circuit breaker send them to the ledger.
    node: {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      commandTimeout,
      retryStrategy: reconnect,
    },
    // The same on a Cluster, where a master that is down, or a cluster that says CLUSTERDOWN, would
    // otherwise be retried for up to 16 redirections: the breaker of the sales on that master opens
    // and the sales on the others stay fast.
    cluster: {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
      clusterRetryStrategy: reconnect,
    },
  });
  client.on('error', () => {});
  // Redis being down at start is not fatal: the ledger sells until it answers.
  await client.connect().catch(() => {});
  return new TieredBackend(ledger, client, options, cluster);
}

function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  const value = raw === null ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new DibsError(
      'invalid_input',
      `store: ${TIERED_PARAM} ${name} must be a whole number from ${min} to ${max}`,
      { field: 'store' },
    );
  return value;
}

function tieredOptions(url: URL): TieredOptions {
  const prefix = url.searchParams.get('prefix') ?? 'dibs';
  if (!/^[\w.:-]{1,64}$/.test(prefix))
    throw new DibsError('invalid_input', 'store: prefix may use letters, digits, "_", ".", ":" and "-"', {
      field: 'store',
    });
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
  readonly waitingRooms: TieredWaitingRooms | undefined;
  private closed = false;

  constructor(
    readonly ledger: Backend,
    private readonly redis: RedisClient,
    readonly options: TieredOptions,
    private readonly cluster: boolean,
  ) {
    this.sales = new TieredSales(ledger.sales, ledger.grants!, redis, options, cluster);
    this.waitingRooms = ledger.waitingRooms
      ? new TieredWaitingRooms(ledger.waitingRooms, (saleId) => this.sales.resetFastPath(saleId))
      : undefined;
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
  /** Rate limits are the ledger's (decided by the durable store). */
  get limits() {
    return this.ledger.limits;
  }
  get forecasts() {
    return this.ledger.forecasts;
  }
  get service() {
    return this.ledger.service;
  }

  async health(): Promise<Health> {
    const ledger = await this.ledger.health();
    const open = this.sales.breaker.openCount();
    const breaker = open === 0 ? 'closed' : this.cluster ? `open for ${open} sale(s)` : 'open';
    const failure = this.sales.lastFailure;
    // A node can answer PING and still refuse every buy (READONLY after a failover, OOM, MISCONF…):
    // an open breaker means the fast path is degraded, whatever PING says.
    const degraded = {
      degraded: true,
      breaker,
      ...(failure
        ? { ...(failure.reason ? { reason: failure.reason } : {}), error: failure.message, since: failure.at }
        : {}),
    };
    let fastPath: Record<string, unknown>;
    try {
      if (!this.cluster) await this.redis.ping();
      const mode = this.cluster ? { mode: 'cluster', masters: await this.pingMasters() } : { mode: 'single' };
      fastPath =
        open === 0
          ? { ok: true, ...mode, prefix: this.options.prefix, breaker }
          : {
              ok: false,
              ...mode,
              prefix: this.options.prefix,
              ...degraded,
              note: 'buys are served by the ledger until the breaker closes',
            };
    } catch (error) {
      const reason = unavailableReply(error);
      fastPath = {
        ok: false,
        ...degraded,
        ...(reason ? { reason } : {}),
        error: (error as Error).message,
        note: 'buys are served by the ledger until Redis answers',
      };
    }
    // A dead fast path degrades speed, never correctness: health follows the ledger.
    return {
      ok: ledger.ok,
      backend: this.kind,
      details: { ...ledger.details, ledger: ledger.backend, fastPath },
      ...(ledger.migrations ? { migrations: ledger.migrations } : {}),
    };
  }

  /** Pings every master that owns slots; throws naming those that do not answer (their sales go to the ledger). */
  private async pingMasters(): Promise<number> {
    const cluster = this.redis as Cluster;
    const connected = new Map(
      cluster.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]),
    );
    const owners = new Set(cluster.slots.map((nodes) => nodes?.[0]).filter((key): key is string => !!key));
    if (owners.size === 0) throw new Error('no Cluster master answers');
    const answers = await Promise.all(
      [...owners].map(async (key) =>
        (await connected
          .get(key)
          ?.ping()
          .catch(() => null)) === 'PONG'
          ? null
          : key,
      ),
    );
    const down = answers.filter((key): key is string => key !== null);
    if (down.length > 0)
      throw new Error(
        `Cluster master(s) ${down.join(', ')} not answering; their sales are sold by the ledger meanwhile`,
      );
    return owners.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.redis.quit().catch(() => {});
    this.redis.disconnect(); // a Sentinel client keeps its sentinel connections until disconnect()
    await this.ledger.close();
  }
}
