/**
 * What health() reports about each master: persistence, replication and eviction, read with
 * INFO and CONFIG GET. On a Cluster every master is asked — a single misconfigured master loses
 * the acknowledged claims of its slots, whichever master the first one is.
 */
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './scripts.js';

export interface MasterState {
  address: string;
  role: string;
  persistence: Record<string, string>;
  maxmemoryPolicy: string;
  /** Connected replicas and, for each, how many bytes of the replication stream it still lacks. */
  replicas: { address: string; state: string; lagBytes: number }[];
  minReplicasToWrite: number;
  version: string;
}

/** The masters; a Cluster client learns them only once it is ready (its first slots refresh). */
export async function mastersOf(client: RedisClient, cluster: boolean, timeoutMs = 10_000): Promise<Redis[]> {
  if (!cluster) return [client as Redis];
  const c = client as Cluster;
  if (c.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Cluster isn't ready after ${timeoutMs} ms`)), timeoutMs);
      c.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  return c.nodes('master');
}

function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

async function configOf(node: Redis, name: string): Promise<string> {
  try {
    return ((await node.config('GET', name)) as string[])[1] ?? 'unknown';
  } catch {
    return 'unknown (CONFIG is disabled)';
  }
}

export async function masterState(node: Redis): Promise<MasterState> {
  const info = infoFields(`${String(await node.info('replication'))}\n${String(await node.info('server'))}`);
  const offset = Number(info.get('master_repl_offset') ?? 0);
  const replicas: MasterState['replicas'] = [];
  for (const [key, value] of info) {
    if (!/^slave\d+$/.test(key)) continue;
    const fields = Object.fromEntries(value.split(',').map((pair) => pair.split('=') as [string, string]));
    replicas.push({
      address: `${fields.ip}:${fields.port}`,
      state: fields.state ?? 'unknown',
      lagBytes: Math.max(0, offset - Number(fields.offset ?? 0)),
    });
  }
  return {
    // The socket's peer: under Sentinel the options hold no address, the sentinels gave it.
    address: node.stream?.remoteAddress
      ? `${node.stream.remoteAddress}:${node.stream.remotePort}`
      : `${node.options.host ?? '?'}:${node.options.port ?? '?'}`,
    role: info.get('role') ?? 'unknown',
    persistence: {
      appendonly: await configOf(node, 'appendonly'),
      appendfsync: await configOf(node, 'appendfsync'),
      save: await configOf(node, 'save'),
    },
    maxmemoryPolicy: await configOf(node, 'maxmemory-policy'),
    replicas,
    minReplicasToWrite: Number(await configOf(node, 'min-replicas-to-write')) || 0,
    version: info.get('redis_version') ?? 'unknown',
  };
}

/** WAITAOF exists from Redis 7.2 on. */
export function hasWaitAof(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 7 || (major === 7 && minor >= 2);
}

/** The warnings a set of masters deserves, given the acknowledgement policy in force. */
export function replicationWarnings(masters: MasterState[], ackReplicas: number): string[] {
  const warnings: string[] = [];
  for (const m of masters) {
    const durable = m.persistence.appendonly === 'yes' && m.persistence.appendfsync === 'always';
    if (!durable && ackReplicas === 0) {
      warnings.push(
        m.persistence.appendonly === 'yes'
          ? `${m.address}: appendfsync=${m.persistence.appendfsync}: up to about a second of acknowledged claims can be lost in a crash`
          : `${m.address}: no AOF persistence: a Redis crash or restart loses every acknowledged claim (see docs/redis.md)`,
      );
    }
    if (m.replicas.length > 0 && ackReplicas === 0)
      warnings.push(
        `${m.address}: has ${m.replicas.length} replica(s) but acks=none: a failover can lose acknowledged claims (set ?acks=replicas:1, docs/operations.md)`,
      );
    const online = m.replicas.filter((r) => r.state === 'online').length;
    if (ackReplicas > online)
      warnings.push(
        `${m.address}: acks=replicas:${ackReplicas} but only ${online} replica(s) online: every write answers unavailable`,
      );
    if (!/^noeviction|unknown/.test(m.maxmemoryPolicy))
      warnings.push(`${m.address}: maxmemory-policy=${m.maxmemoryPolicy} can evict claims; use noeviction`);
  }
  return warnings;
}
