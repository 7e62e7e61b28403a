import { createHash } from 'node:crypto';
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
  /** Free codes kept out of `free` for now (zset, score = epoch ms when they may return, +inf: never by
   *  themselves): codes on a checkout hold, before their own window, after it. */
  parked: string;
  /** Multi-use codes (hash code -> JSON {m=max uses, p=per claimant, u=uses, vs/ve=window}). */
  multi: string;
  /** Uses of multi-use codes (hash "code\norder" -> JSON {c=claimant, at}). */
  uses: string;
  /** Uses per claimant (hash "code\nclaimant" -> count). */
  usesBy: string;
  /** held code -> claimed at (forecasts), and the "empty soon" watch of the pool */
  claimed: string;
  watch: string;
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
    parked: `${tag}:parked`,
    multi: `${tag}:multi`,
    uses: `${tag}:uses`,
    usesBy: `${tag}:usesby`,
    claimed: `${tag}:claimed`,
    watch: `${tag}:watch`,
  };
}

export const registryKey = (prefix: string) => `{${prefix}}:pools`;

/**
 * Keys of one lock/semaphore key, sharing the tag `{prefix:lock:key}` (one slot per lock; different
 * locks spread over the Cluster). The fence counter outlives every lease so fences only grow.
 */
export function lockKeys(prefix: string, key: string): { holders: string; fence: string; tokens: string } {
  // Companion keys (`<key>\x1f<part>`: the waiter registrations and the fair line) share the
  // key's own tag, so one script may read both (a user key never contains a control character).
  const split = key.indexOf('\u001f');
  const tag = `{${prefix}:lock:${split < 0 ? key : key.slice(0, split)}}`;
  const base = split < 0 ? tag : `${tag}:${key.slice(split + 1)}`;
  return { holders: `${base}:holders`, fence: `${base}:fence`, tokens: `${base}:tokens` };
}

/** Pub/sub channel on which releases of this prefix are announced (message = lock key). */
export const lockChannel = (prefix: string) => `{${prefix}}:lock-released`;

/** One hash per sharded counter (its shards are fields, so the exact total is one-slot, one-step). */
export const counterKey = (prefix: string, name: string) => `{${prefix}:counter:${name}}`;

/**
 * Tiered mode: one sale's fast-path state (current grant, units left, limit, end), the units each
 * customer was given here and the idempotency keys decided here — one slot per sale.
 */
export function tieredSaleKeys(prefix: string, sale: string): { state: string; customers: string; keys: string } {
  const tag = `{${prefix}:tsale:${sale}}`;
  return { state: `${tag}:state`, customers: `${tag}:customers`, keys: `${tag}:keys` };
}

/**
 * Flash sales. Every sale of one SKU, that SKU's overlap index and its wishlist live in one
 * "sale group" — a hash tag `{prefix:sg:gggg}` whose 4 hex digits are derived from the SKU — so
 * the preflight's overlap check, every buy/reserve/confirm step and the announcement of a sale
 * together with one notification per wishlister are each one script on one Cluster slot. A hold
 * id carries its group (`hold_<gggg><random>`), so a hold is found without any index. The
 * registry of sale ids (for listing, and id → group) is in the prefix's own slot.
 *
 * A SKU that starts with a `{tag}` is grouped by the tag alone, as Redis Cluster hashes a key by
 * its tag: sales whose SKUs share a tag share a group (one slot), so one cart can hold them all.
 */
export function saleGroupOf(sku: string): string {
  const tag = /^\{([^}]+)\}/.exec(sku)?.[1];
  return createHash('sha1')
    .update(tag ?? sku)
    .digest('hex')
    .slice(0, 4);
}

export const saleTag = (prefix: string, group: string) => `{${prefix}:sg:${group}}`;

export function saleRegistry(prefix: string): { ids: string; groupOf: string; groups: string } {
  return { ids: `{${prefix}}:sales`, groupOf: `{${prefix}}:sale-group-of`, groups: `{${prefix}}:sale-groups` };
}

/** The per-sale keys, inside the group tag (the scripts build the same names from the tag). */
export const saleKey = (
  tag: string,
  kind:
    | 'sale'
    | 'events'
    | 'sku'
    | 'skuall'
    | 'wish'
    | 'wishx'
    | 'active'
    | 'cust'
    | 'orders'
    | 'keys'
    | 'hs'
    | 'ot'
    | 'watch'
    | 'room'
    | 'tickets'
    | 'tnum'
    | 'tplace'
    | 'vq'
    | 'dord'
    | 'adm',
  id: string,
) => `${tag}:${kind}:${id}`;

/** Delivery state of one event stream (outbox_lib.lua), beside the stream in its slot. */
export const outboxKeys = (stream: string): [string, string, string, string, string] => [
  stream,
  `${stream}:obq`,
  `${stream}:obp`,
  `${stream}:obi`,
  `${stream}:obx`,
];

/**
 * The id of an event in the outbox: `<p|s>~<pool or sale>~<stream id>` — which stream it is in and
 * where (names use letters, digits, "._-~", so the id is URL-safe). Sale events are listed under
 * the same id; pool events are listed under their stream id (the older pool API).
 */
export const outboxEventId = (kind: 'p' | 's', name: string, streamId: string) => `${kind}~${name}~${streamId}`;

/** The hash of rate-limit definitions (name → JSON), in its own slot. */
export const limitDefinitionsKey = (prefix: string) => `{${prefix}}:limits`;

/**
 * The state of one (limit, key): its own slot, so one limit's keys spread over the Cluster. The
 * tag is a digest, so braces or length of the user's key never change which part is hashed.
 */
export function limitStateKey(prefix: string, name: string, key: string): string {
  return `{${prefix}:limit:${createHash('sha1').update(`${name}\n${key}`).digest('base64url').slice(0, 20)}}`;
}
