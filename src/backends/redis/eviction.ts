/**
 * The eviction check at open. Under a `volatile-*` or `allkeys-*` maxmemory-policy, Redis deletes
 * keys when memory runs short — lease keys and holds (they have TTLs) first among them — and dibs
 * would then grant a lock a second holder, or hand a held code to someone else, with nothing in
 * the data to tell. Only `noeviction` (refuse writes when full: `unavailable` to callers) keeps
 * dibs' promises, so the store refuses to open on anything else unless the URL says
 * `allowEviction=true`. Read from INFO (often allowed where CONFIG is not), on every master.
 */
import type { Cluster, Redis } from 'ioredis';
import { DibsError } from '../../core/errors.js';
import { unavailableReply } from './errors.js';
import type { RedisClient } from './scripts.js';

export const ALLOW_EVICTION_PARAM = 'allowEviction';

/** `allowEviction` from the URL (removed from it): true only when explicitly `true`. */
export function allowEvictionParam(url: URL): boolean {
  const raw = url.searchParams.get(ALLOW_EVICTION_PARAM);
  url.searchParams.delete(ALLOW_EVICTION_PARAM);
  if (raw === null || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new DibsError('invalid_input', `store: ${ALLOW_EVICTION_PARAM} must be true or false`, { field: 'store' });
}

/**
 * One node's maxmemory-policy; 'unknown' when INFO does not say or is refused (a renamed or
 * ACL-denied command), which open treats like an evicting policy. A node that cannot be reached
 * or refuses to serve rejects (`unavailable` after translation).
 */
export async function evictionPolicyOf(node: Redis): Promise<string> {
  let info: string;
  try {
    info = await node.info('memory');
  } catch (error) {
    if ((error as Error)?.name === 'ReplyError' && !unavailableReply(error)) return 'unknown';
    throw error;
  }
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? 'unknown';
}

/** maxmemory-policy of every master ("host:port" → policy); a Cluster is waited for up to `readyMs`. */
export async function evictionPolicies(
  client: RedisClient,
  cluster: boolean,
  readyMs: number,
): Promise<Record<string, string>> {
  if (!cluster) {
    const node = client as Redis;
    return { [`${node.options.host}:${node.options.port}`]: await evictionPolicyOf(node) };
  }
  const c = client as Cluster;
  if (c.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Cluster isn't ready")), readyMs);
      c.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  const masters = c.nodes('master');
  const policies = await Promise.all(
    masters.map(async (node) => [`${node.options.host}:${node.options.port}`, await evictionPolicyOf(node)] as const),
  );
  return Object.fromEntries(policies);
}

/** Throws `invalid_input` (field `store`) naming the option when a master may evict keys and the URL did not accept it. */
export function assertNoEviction(policies: Record<string, string>, allowed: boolean): void {
  if (allowed) return;
  const evicting = Object.entries(policies).filter(([, policy]) => policy !== 'noeviction');
  if (evicting.length === 0) return;
  const which = evicting.map(([node, policy]) => `${node} has maxmemory-policy ${policy}`).join(', ');
  throw new DibsError(
    'invalid_input',
    `store: Redis ${which}: under memory pressure it may evict lease, hold and claim keys, and a lock or code would be granted twice. Set maxmemory-policy noeviction (full memory then answers unavailable), or add ${ALLOW_EVICTION_PARAM}=true to the store URL to accept the risk`,
    { field: 'store', details: { option: ALLOW_EVICTION_PARAM, maxmemoryPolicy: policies } },
  );
}
