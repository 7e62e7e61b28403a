/**
 * Redis backend (ioredis): single node `redis://host:6379/0`, TLS `rediss://…`, Cluster
 * `redis+cluster://host:7000,host:7001` and Sentinel `redis+sentinel://host:26379,host:26380/master/0`.
 * Query parameters: `prefix` (key prefix, default `dibs`), `commandTimeoutMs` (a command
 * unanswered this long fails as `unavailable`, default 15000), `acks=replicas:N` with
 * `acksTimeoutMs` (replica acknowledgement of every mutating step, see acks.ts),
 * `allowEviction=true` (open even when a master's maxmemory-policy may evict keys; see eviction.ts).
 * Every pool operation is one Lua script on the pool's slot (see scripts/*.lua).
 *
 * Durability is the server's: without AOF an acknowledged claim lives only in memory. `health()`
 * reports the persistence settings and warns when a crash could lose acknowledged claims.
 */
import type { Redis } from 'ioredis';
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
import { createRedisClient, isClusterUrl, isSentinelUrl } from './connect.js';
import { translateRedisError } from './errors.js';
import { allowEvictionParam, assertNoEviction, evictionPolicies } from './eviction.js';
import { ackPolicyFromUrl, acksOf, attachAcks, describePolicy } from './acks.js';
import { hasWaitAof, masterState, mastersOf, replicationWarnings } from './replication.js';
import { lockChannel } from './keys.js';
import { RedisLocks } from './locks.js';
import { RedisLimits } from './limits.js';
import { ReleaseSubscriber } from './subscriber.js';
import type { RedisClient } from './scripts.js';

export { translateRedisError } from './errors.js';

export class RedisBackend implements Backend {
  readonly kind = 'redis';
  readonly pools: RedisPools;
  readonly service: ServiceStore;
  readonly locks: RedisLocks;
  readonly counters: RedisCounters;
  readonly limits: RedisLimits;
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
    private readonly mode: 'single' | 'cluster' | 'sentinel' = cluster ? 'cluster' : 'single',
  ) {
    this.pools = translateErrors(new RedisPools(client, prefix), translateRedisError);
    this.service = translateErrors(new RedisServiceStore(client, prefix), translateRedisError);
    this.releaseSubscriber = new ReleaseSubscriber(client, lockChannel(prefix));
    this.locks = translateErrors(new RedisLocks(client, prefix, this.releaseSubscriber), translateRedisError);
    this.counters = translateErrors(new RedisCounters(client, prefix), translateRedisError);
    this.limits = translateErrors(new RedisLimits(client, prefix), translateRedisError);
    const sales = new RedisSales(client, prefix);
    this.sales = translateErrors(sales, translateRedisError);
    this.outbox = translateErrors(new RedisOutbox(client, prefix, sales), translateRedisError);
    this.forecasts = translateErrors(new RedisForecasts(client, prefix, sales), translateRedisError);
    this.waitingRooms = translateErrors(new RedisWaitingRooms(client, sales), translateRedisError);
  }

  async health(): Promise<Health> {
    try {
      const masters = await Promise.all((await mastersOf(this.client, this.cluster)).map(masterState));
      const acks = acksOf(this.client);
      const warnings = replicationWarnings(masters, acks?.replicas ?? 0);
      // A single-node URL that reaches a replica (a primary demoted by a failover, a DNS name not
      // yet moved) answers PING but refuses every write: not ready.
      const replica = this.mode === 'single' && (masters[0]!.role === 'slave' || masters[0]!.role === 'replica');
      const evicting = masters.find((m) => m.maxmemoryPolicy !== 'noeviction');
      const maxmemoryPolicy = (evicting ?? masters[0]!).maxmemoryPolicy;
      return {
        ok: !replica,
        backend: this.kind,
        details: {
          mode: this.mode,
          ...(replica
            ? {
                role: 'replica',
                error:
                  'connected to a read-only replica: every write answers unavailable (READONLY) until the URL reaches the primary',
              }
            : {}),
          prefix: this.prefix,
          // The first master's settings; `masters` has every one.
          persistence: masters[0]!.persistence,
          maxmemoryPolicy,
          ...(evicting
            ? {
                evictionWarning: `maxmemory-policy ${maxmemoryPolicy}${this.allowEviction ? ' (accepted by allowEviction=true)' : ''}: under memory pressure Redis may evict lease, hold and claim keys, and grant a lock or code twice`,
              }
            : {}),
          acks: describePolicy(acks),
          replication: masters
            .map(
              (m) =>
                `${m.address} ${m.role}, ${m.replicas.length} replica(s)${m.replicas.map((r) => ` ${r.address} ${r.state} lag ${r.lagBytes} B`).join(',')}`,
            )
            .join('; '),
          masters,
          ...(warnings.length ? { warning: warnings.join('; ') } : {}),
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
    await this.client.quit().catch(() => {});
    // QUIT ends the command connection only: a Sentinel client's failover detector keeps its
    // sentinel connections (and their reconnects) until disconnect().
    this.client.disconnect();
  }
}

/** Parameters dibs reads from the URL; the rest of the URL goes to ioredis untouched. */
function dibsParams(url: URL): { prefix: string; commandTimeout: number } {
  const prefix = url.searchParams.get('prefix') ?? 'dibs';
  if (!/^[\w.:-]{1,64}$/.test(prefix))
    throw new DibsError('invalid_input', 'store: prefix may use letters, digits, "_", ".", ":" and "-"', {
      field: 'store',
    });
  const timeout = url.searchParams.get('commandTimeoutMs');
  const commandTimeout = timeout === null ? CLIENT_OPTIONS.commandTimeout : Number(timeout);
  if (!Number.isInteger(commandTimeout) || commandTimeout < 100 || commandTimeout > 3_600_000)
    throw new DibsError('invalid_input', 'store: commandTimeoutMs must be a whole number of ms from 100 to 3600000', {
      field: 'store',
    });
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
  // default), so the store may run one request twice. Every mutating script answers a re-send as
  // its first run: from the state it left where the request carries a new id (an order, a lease
  // token, a claim's or release's request id kept in the code's record), else from its reply
  // remembered under a request id (resend.ts); docs/redis.md "Re-sent scripts" has the table.
  // (Turning the re-send off is worse: ioredis 6 then drops those commands without ever settling them.)
  autoResendUnfulfilledCommands: true,
  // Safety net: no command waits forever, whatever happens to the connection.
  commandTimeout: 15_000,
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
};

/**
 * Reads the nodes' settings at open. Right after 'ready' a Cluster may still replace a node's
 * connection (its slots refresh finds the replicas and the masters' announced addresses), and a
 * read on the old one fails with "Connection is closed": read again, a few times.
 */
async function readNodes<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (
        attempt >= 5 ||
        !/Connection is closed|Stream isn't writeable|ECONNRESET/.test((error as Error)?.message ?? '')
      )
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

export const openRedis: BackendFactory = async (url) => {
  const { prefix, commandTimeout } = dibsParams(url);
  const allowEviction = allowEvictionParam(url);
  const acks = ackPolicyFromUrl(url, commandTimeout);
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
    assertNoEviction(
      await readNodes(() => evictionPolicies(client, isCluster, CLIENT_OPTIONS.connectTimeout * 2)),
      allowEviction,
    );
  } catch (error) {
    client.disconnect();
    throw translateRedisError(error);
  }
  if (acks) {
    // WAITAOF only where every master has it and runs AOF; otherwise WAIT (see acks.ts).
    const masters = await readNodes(() =>
      mastersOf(client, isCluster).then((nodes) => Promise.all(nodes.map(masterState))),
    ).catch((error: unknown) => {
      client.disconnect();
      throw translateRedisError(error);
    });
    attachAcks(
      client,
      acks,
      acks.aof && masters.every((m) => hasWaitAof(m.version) && m.persistence.appendonly === 'yes'),
    );
  }
  return new RedisBackend(
    client,
    prefix,
    isCluster,
    allowEviction,
    isCluster ? 'cluster' : isSentinelUrl(url) ? 'sentinel' : 'single',
  );
};
