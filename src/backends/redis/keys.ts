/**
 * Key layout. Every key of one pool shares the hash tag `{prefix:pool}`, so each script touches
 * exactly one Cluster slot. The pool registry (for listing) is one sorted set in its own slot.
 */
export interface PoolKeys {
  pool: string;
  free: string;
  all: string;
  codes: string;
  held: string;
  claimKeys: string;
  events: string;
}

export function poolKeys(prefix: string, pool: string): PoolKeys {
  const tag = `{${prefix}:${pool}}`;
  return {
    pool: `${tag}:pool`,
    free: `${tag}:free`,
    all: `${tag}:all`,
    codes: `${tag}:codes`,
    held: `${tag}:held`,
    claimKeys: `${tag}:keys`,
    events: `${tag}:events`,
  };
}

export const registryKey = (prefix: string) => `{${prefix}}:pools`;

/**
 * Keys of one lock/semaphore key, sharing the tag `{prefix:lock:key}` (one slot per lock; different
 * locks spread over the Cluster). The fence counter outlives every lease so fences only grow.
 */
export function lockKeys(prefix: string, key: string): { holders: string; fence: string; tokens: string } {
  const tag = `{${prefix}:lock:${key}}`;
  return { holders: `${tag}:holders`, fence: `${tag}:fence`, tokens: `${tag}:tokens` };
}

/** Pub/sub channel on which releases of this prefix are announced (message = lock key). */
export const lockChannel = (prefix: string) => `{${prefix}}:lock-released`;

/** One hash per sharded counter (its shards are fields, so the exact total is one-slot, one-step). */
export const counterKey = (prefix: string, name: string) => `{${prefix}:counter:${name}}`;
