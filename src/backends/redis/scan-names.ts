/**
 * Names of a kind of key (lock keys, counters) in name order, one page at a time, by SCAN — Redis
 * keeps no ordered index of them (a lock's or counter's keys live in its own slot, so no script
 * could keep one in a Cluster). Every page walks the whole keyspace of every node that holds keys
 * (each master of a Cluster) with `SCAN … MATCH … COUNT`, keeping only the `limit + 1` smallest
 * names after the cursor: memory stays bounded by the page, time grows with the database's key
 * count (not with the page). Fine for an admin listing; not a hot path.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Page } from '../../core/types.js';
import type { RedisClient } from './scripts.js';

/** Keys asked of one SCAN call: large enough to make few round trips, small enough not to stall the server. */
const SCAN_COUNT = 1000;

/** Escapes glob metacharacters so a literal prefix can start a MATCH pattern. */
export const globLiteral = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

export async function scanNames(
  client: RedisClient,
  pattern: string,
  nameOf: (key: string) => string | null,
  { limit, after }: { limit: number; after?: string },
): Promise<Page<string>> {
  const nodes: Redis[] = client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
  const smallest: string[] = []; // sorted, at most limit + 1, no duplicates
  const keep = (name: string) => {
    if (after !== undefined && name <= after) return;
    if (smallest.length > limit && name >= smallest[limit]!) return;
    let lo = 0;
    let hi = smallest.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (smallest[mid]! < name) lo = mid + 1;
      else hi = mid;
    }
    if (smallest[lo] === name) return;
    smallest.splice(lo, 0, name);
    if (smallest.length > limit + 1) smallest.pop();
  };
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (const key of keys) {
        const name = nameOf(key);
        if (name !== null) keep(name);
      }
    } while (cursor !== '0');
  }
  const items = smallest.slice(0, limit);
  return { items, nextCursor: smallest.length > limit ? items.at(-1)! : null };
}
