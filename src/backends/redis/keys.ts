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
