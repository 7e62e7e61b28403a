/**
 * Redis backend (ioredis): single node `redis://host:6379/0`, TLS `rediss://…`, and Cluster
 * `redis+cluster://host:7000,host:7001`. Query parameters: `prefix` (key prefix, default `dibs`),
 * `commandTimeoutMs` (a command unanswered this long fails as `unavailable`, default 15000),
 * `allowEviction=true` (open even when a master's maxmemory-policy may evict keys; see eviction.ts).
 * Every pool operation is one Lua script on the pool's slot (see scripts/*.lua).
 *
 * Durability is the server's: without AOF an acknowledged claim lives only in memory. `health()`
 * reports the persistence settings and warns when a crash could lose acknowledged claims.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Backend, BackendFactory } from '../../core/backend.js';
import { DibsError } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import type { ServiceStore } from '../../core/service-store.js';
import { translateErrors } from '../shared/translate-errors.js';
import { RedisPools } from './pools.js';
import { RedisSales } from './sales.js';
import { RedisOutbox } from './outbox.js';
import { RedisForecasts } from './forecasts.js';
import { RedisWaitingRooms } from './waiting-rooms.js';
import { RedisServiceStore } from './service.js';
import { RedisCounters } from './counters.js';
import { createRedisClient, isClusterUrl } from './connect.js';
import { translateRedisError } from './errors.js';
import { allowEvictionParam, assertNoEviction, evictionPolicies, evictionPolicyOf } from './eviction.js';
import { lockChannel } from './keys.js';
import { RedisLocks } from './locks.js';
import { ReleaseSubscriber } from './subscriber.js';
import type { RedisClient } from './scripts.js';

export { translateRedisError } from './errors.js';

export class RedisBackend implements Backend {
  readonly kind = 'redis';
  readonly pools: RedisPools;
  readonly service: ServiceStore;
  readonly locks: RedisLocks;
  readonly counters: RedisCounters;
  readonly sales: RedisSales;
  readonly outbox: RedisOutbox;
  readonly forecasts: RedisForecasts;
  readonly waitingRooms: RedisWaitingRooms;
  /** The dedicated pub/sub connection for lock wake-ups; created on first use. */
  readonly releaseSubscriber: ReleaseSubscriber;
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    readonly prefix: string,
    private readonly cluster: boolean,
    /** The URL accepted an evicting maxmemory-policy (allowEviction=true): health warns while it is one. */
    private readonly allowEviction = false,
  ) {
    this.pools = translateErrors(new RedisPools(client, prefix), translateRedisError);
    this.service = translateErrors(new RedisServiceStore(client, prefix), translateRedisError);
    this.releaseSubscriber = new ReleaseSubscriber(client, lockChannel(prefix));
    this.locks = translateErrors(new RedisLocks(client, prefix, this.releaseSubscriber), translateRedisError);
    this.counters = translateErrors(new RedisCounters(client, prefix), translateRedisError);
    const sales = new RedisSales(client, prefix);
    this.sales = translateErrors(sales, translateRedisError);
    this.outbox = translateErrors(new RedisOutbox(client, prefix, sales), translateRedisError);
    this.forecasts = translateErrors(new RedisForecasts(client, prefix, sales), translateRedisError);
    this.waitingRooms = translateErrors(new RedisWaitingRooms(client, sales), translateRedisError);
  }

  async health(): Promise<Health> {
    try {
      const node = this.cluster ? (this.client as Cluster).nodes('master')[0]! : (this.client as Redis);
      await node.ping();
      const persistence = await persistenceOf(node);
      const durable = persistence.appendonly === 'yes' && persistence.appendfsync === 'always';
      const maxmemoryPolicy = await evictionPolicyOf(node).catch(() => 'unknown');
      const evicting = maxmemoryPolicy !== 'noeviction';
      // A single-node URL that reaches a replica (a primary demoted by a failover, a DNS name not
      // yet moved) answers PING but refuses every write: not ready.
      const role = this.cluster ? 'master' : await roleOf(node);
      const replica = role === 'slave' || role === 'replica';
      return {
        ok: !replica,
        backend: this.kind,
        details: {
          mode: this.cluster ? 'cluster' : 'single',
          ...(replica ? { role: 'replica', error: 'connected to a read-only replica: every write answers unavailable (READONLY) until the URL reaches the primary' } : {}),
          prefix: this.prefix,
          persistence,
          maxmemoryPolicy,
          ...(evicting
            ? { evictionWarning: `maxmemory-policy ${maxmemoryPolicy}${this.allowEviction ? ' (accepted by allowEviction=true)' : ''}: under memory pressure Redis may evict lease, hold and claim keys, and grant a lock or code twice` }
            : {}),
          ...(durable
            ? {}
            : {
                warning:
                  persistence.appendonly === 'yes'
                    ? `appendfsync=${persistence.appendfsync}: up to about a second of acknowledged claims can be lost in a crash`
                    : 'no AOF persistence: a Redis crash or restart loses every acknowledged claim (see docs/redis.md)',
              }),
        },
      };
    } catch (error) {
      return { ok: false, backend: this.kind, details: { error: (error as Error).message } };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.releaseSubscriber.close();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

/** The node's replication role (ROLE's first element), or 'unknown' when ROLE is refused. */
async function roleOf(node: Redis): Promise<string> {
  try {
    const reply = (await node.call('ROLE')) as unknown[];
    return String(reply[0]);
  } catch {
    return 'unknown';
  }
}

async function persistenceOf(node: Redis): Promise<Record<string, string>> {
  try {
    const values = (await node.config('GET', 'appendonly')) as string[];
    const more = (await node.config('GET', 'appendfsync')) as string[];
    const save = (await node.config('GET', 'save')) as string[];
    return { appendonly: values[1] ?? 'unknown', appendfsync: more[1] ?? 'unknown', save: save[1] ?? '' };
  } catch {
    return { appendonly: 'unknown (CONFIG is disabled)', appendfsync: 'unknown', save: 'unknown' };
  }
}

/** Parameters dibs reads from the URL; the rest of the URL goes to ioredis untouched. */
function dibsParams(url: URL): { prefix: string; commandTimeout: number } {
  const prefix = url.searchParams.get('prefix') ?? 'dibs';
  if (!/^[\w.:-]{1,64}$/.test(prefix)) throw new DibsError('invalid_input', 'store: prefix may use letters, digits, "_", ".", ":" and "-"', { field: 'store' });
  const timeout = url.searchParams.get('commandTimeoutMs');
  const commandTimeout = timeout === null ? CLIENT_OPTIONS.commandTimeout : Number(timeout);
  if (!Number.isInteger(commandTimeout) || commandTimeout < 100 || commandTimeout > 3_600_000) throw new DibsError('invalid_input', 'store: commandTimeoutMs must be a whole number of ms from 100 to 3600000', { field: 'store' });
  url.searchParams.delete('prefix');
  url.searchParams.delete('commandTimeoutMs');
  return { prefix, commandTimeout };
}

const CLIENT_OPTIONS = {
  // Fail a command after a couple of reconnect attempts instead of queueing it for long:
  // callers get a retriable `unavailable` quickly and decide themselves.
  maxRetriesPerRequest: 2,
  connectTimeout: 5000,
  // A script in flight when the connection drops is re-sent after reconnecting (ioredis'
  // default). Claims with an idempotency key replay and limit-1 claims answer already-held, so
  // this is safe; an unkeyed claim under a limit above one may take a second code for one
  // request — use idempotency keys for exactly-once. (Turning the re-send off is worse: ioredis
  // 6 then drops those commands without ever settling them.)
  autoResendUnfulfilledCommands: true,
  // Safety net: no command waits forever, whatever happens to the connection.
  commandTimeout: 15_000,
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
};

export const openRedis: BackendFactory = async (url) => {
  const { prefix, commandTimeout } = dibsParams(url);
  const allowEviction = allowEvictionParam(url);
  const isCluster = isClusterUrl(url);
  const node = { ...CLIENT_OPTIONS, commandTimeout };
  const client = isCluster
    ? createRedisClient(url, { node, cluster: { clusterRetryStrategy: CLIENT_OPTIONS.retryStrategy } })
    : createRedisClient(url, { node: { ...node, lazyConnect: true } });
  if (!isCluster) {
    await (client as Redis).connect().catch((error: unknown) => {
      client.disconnect();
      throw translateRedisError(error);
    });
  }
  // Connection errors surface on the commands that meet them (as `unavailable`); without a
  // listener ioredis would also print every reconnect failure.
  client.on('error', () => {});
  try {
    assertNoEviction(await evictionPolicies(client, isCluster, CLIENT_OPTIONS.connectTimeout * 2), allowEviction);
  } catch (error) {
    client.disconnect();
    throw translateRedisError(error);
  }
  return new RedisBackend(client, prefix, isCluster, allowEviction);
};
