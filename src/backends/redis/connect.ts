/**
 * A Redis client from a store URL: one node (`redis://`, `rediss://`) or a Cluster
 * (`redis+cluster://host:port,host:port`, whose host list registry.ts' parseStoreUrl moved into
 * the `nodes` parameter). Shared by the Redis backend and tiered mode's fast path, which want
 * different failure behaviour (queue and retry vs. fail at once), hence the options.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { DibsError } from '../../core/errors.js';
import type { RedisClient } from './scripts.js';

export const isClusterUrl = (url: URL) => url.protocol === 'redis+cluster:';

export interface ClientOptions {
  /** Options of the connection (on a Cluster: of each node's connection). */
  node: RedisOptions;
  /** Cluster only: the Cluster's own options (redirections, offline queue, reconnects). */
  cluster?: Omit<ClusterOptions, 'redisOptions'>;
}

/** Creates the client; the caller connects (single nodes are created with `lazyConnect` as given). */
export function createRedisClient(url: URL, options: ClientOptions): RedisClient {
  if (!isClusterUrl(url)) return new Redis(url.toString(), options.node);
  const nodes = (url.searchParams.get('nodes') ?? '').split(',').filter(Boolean).map((hostPort) => {
    const [host, port] = hostPort.split(':');
    return { host: host!, port: Number(port ?? 6379) };
  });
  if (nodes.length === 0) throw new DibsError('invalid_input', 'store: redis+cluster://host:port,host:port needs at least one node', { field: 'store' });
  const password = url.password ? decodeURIComponent(url.password) : undefined;
  return new Cluster(nodes, { ...options.cluster, redisOptions: { ...options.node, ...(password ? { password } : {}) } });
}
