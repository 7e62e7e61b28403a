/**
 * A Redis client from a store URL: one node (`redis://`, `rediss://`), a Cluster
 * (`redis+cluster://host:port,host:port`) or a Sentinel-managed master
 * (`redis+sentinel://host:port,host:port/masterName/db`); registry.ts' parseStoreUrl moved the
 * host list of the last two into the `nodes` parameter. Shared by the Redis backend and tiered mode's fast path, which want
 * different failure behaviour (queue and retry vs. fail at once), hence the options.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { DibsError } from '../../core/errors.js';
import type { RedisClient } from './scripts.js';

export const isClusterUrl = (url: URL) => url.protocol === 'redis+cluster:';
export const isSentinelUrl = (url: URL) => url.protocol === 'redis+sentinel:';

function nodesOf(url: URL, defaultPort: number): { host: string; port: number }[] {
  return (url.searchParams.get('nodes') ?? '')
    .split(',')
    .filter(Boolean)
    .map((hostPort) => {
      const [host, port] = hostPort.split(':');
      return { host: host!, port: Number(port ?? defaultPort) };
    });
}

/**
 * Sentinel: ioredis asks the sentinels for the master, and (failoverDetector) listens for their
 * +switch-master to drop the old master's connection at once. A demoted master still connected
 * answers writes with READONLY: such a write did nothing, so the command is re-sent after a
 * reconnect, which finds the new master (2 = reconnect and re-send).
 */
function sentinelClient(url: URL, options: ClientOptions): Redis {
  const sentinels = nodesOf(url, 26379);
  const [name, db] = url.pathname.split('/').filter(Boolean);
  if (sentinels.length === 0 || !name)
    throw new DibsError(
      'invalid_input',
      'store: redis+sentinel://host:port,host:port/masterName/db needs sentinels and a master name',
      { field: 'store' },
    );
  const password = url.password ? decodeURIComponent(url.password) : undefined;
  const sentinelPassword = url.searchParams.get('sentinelPassword') ?? undefined;
  url.searchParams.delete('sentinelPassword');
  return new Redis({
    ...options.node,
    sentinels,
    name,
    db: Number(db ?? 0),
    failoverDetector: true,
    reconnectOnError: (error) => (/^READONLY/.test(error.message) ? 2 : false),
    ...(password ? { password } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
  });
}

export interface ClientOptions {
  /** Options of the connection (on a Cluster: of each node's connection). */
  node: RedisOptions;
  /** Cluster only: the Cluster's own options (redirections, offline queue, reconnects). */
  cluster?: Omit<ClusterOptions, 'redisOptions'>;
}

/** Creates the client; the caller connects (single nodes are created with `lazyConnect` as given). */
export function createRedisClient(url: URL, options: ClientOptions): RedisClient {
  if (isSentinelUrl(url)) return sentinelClient(url, options);
  if (!isClusterUrl(url)) return new Redis(url.toString(), options.node);
  const nodes = nodesOf(url, 6379);
  if (nodes.length === 0)
    throw new DibsError('invalid_input', 'store: redis+cluster://host:port,host:port needs at least one node', {
      field: 'store',
    });
  const password = url.password ? decodeURIComponent(url.password) : undefined;
  return new Cluster(nodes, {
    ...options.cluster,
    redisOptions: { ...options.node, ...(password ? { password } : {}) },
  });
}
