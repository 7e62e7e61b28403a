/** Document shapes of the Firestore backend and their conversion to dibs' domain types. */
import {
  FieldPath,
  FieldValue,
  Timestamp,
  type DocumentSnapshot,
  type Query,
  type Transaction,
} from '@google-cloud/firestore';
import type { OutboxEvent } from '../../core/types.js';
import type { CodeFormat, CodeInfo, CodeStatus, Pool, PoolStats } from '../../core/types.js';
import type { Layout, PoolRefs } from './layout.js';
import type { CodeState, PoolRules } from '../../core/model/pools.js';

export interface PoolDoc {
  name: string;
  limit: number;
  threshold: number | null;
  metadata: Record<string, unknown>;
  startsAt: string | null;
  expiresAt: string | null;
  maxr: number | null;
  maxrc: number | null;
  public: boolean;
  format: CodeFormat | null;
  createdAt: Timestamp;
  /** Counter shards in use (shards/0 … shards/n-1); grows when claims contend. */
  shards: number;
  /** The low-stock alert fires at the next crossing (re-armed when free rises above the threshold). */
  armed: boolean;
  /** Low-stock events recorded so far (the audit compares it with the outbox). */
  lowEvents: number;
  /** Multi-use codes added (absent: none; imports then need not look for them). */
  multi?: number;
}

export interface CodeDoc {
  code: string;
  s: CodeStatus;
  h: string | null;
  k: string | null;
  ca: Timestamp | null;
  ra: Timestamp | null;
  o: string | null;
  /** Random float, present only while the code is free AND claimable now: claims look for candidates at a random point of it. */
  fr?: number;
  /** The code's own validity window (ISO UTC), when it has one. */
  vs?: string | null;
  ve?: string | null;
  /** A checkout hold: its claimant and its end (server time, ms); ignored once past. */
  hc?: string | null;
  hu?: number | null;
  /**
   * Parked: a free code kept out of claims (held, or before its window) until this server time
   * (ms); present only instead of `fr`. A free code with neither is past its window for good.
   */
  pu?: number;
  /** The id of the claim attempt that took it (claim.ts: how a commit whose answer was lost is settled). */
  st?: string;
}

/** What of a code outlives a change of its status: its window, and its hold while live. */
export interface CodeLife {
  vs?: string | null;
  ve?: string | null;
  hc?: string | null;
  hu?: number | null;
}

export interface HeldEntry {
  c: string;
  k: string | null;
}

export interface HolderDoc {
  claimant: string;
  held: HeldEntry[];
  /** held.length, indexed: the largest holding is one ordered query. */
  n: number;
  /** How many of the held codes are redeemed (maxRedemptionsPerClaimant). */
  redeemed: number;
}

export interface KeyDoc {
  c: string;
  n: number;
}

export const ZERO: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
const FIELDS = Object.keys(ZERO) as (keyof PoolStats)[];

export const iso = (t: Timestamp | null | undefined): string | null => (t ? t.toDate().toISOString() : null);

/** A code as answered; `nowMs` (the server's time) reports a live hold, when given. */
export function toCode(pool: string, doc: CodeDoc, nowMs?: number): CodeInfo {
  return {
    pool,
    code: doc.code,
    status: doc.s,
    claimant: doc.h ?? null,
    claimedAt: iso(doc.ca),
    redeemedAt: iso(doc.ra),
    orderId: doc.o ?? null,
    ...(doc.vs != null || doc.ve != null ? { startsAt: doc.vs ?? null, expiresAt: doc.ve ?? null } : {}),
    ...(nowMs !== undefined && liveHold(doc, nowMs)
      ? { hold: { claimant: doc.hc!, expiresAt: new Date(doc.hu!).toISOString() } }
      : {}),
  };
}

/** A code's own window as the core judges it (`windowState`). */
/** The pool and a code as the model judges them (core/model/pools.ts). */
export const rulesOf = (p: PoolDoc): PoolRules => ({
  name: p.name,
  perClaimantLimit: p.limit,
  publicCodes: p.public,
  startsAt: p.startsAt,
  expiresAt: p.expiresAt,
  maxRedemptions: p.maxr,
  maxRedemptionsPerClaimant: p.maxrc,
});
export const stateOf = (c: CodeDoc): CodeState => ({
  code: c.code,
  status: c.s,
  claimant: c.h,
  redeemedAt: iso(c.ra),
  order: c.o,
  hold: c.hc != null && c.hu != null ? { claimant: c.hc, until: new Date(c.hu).toISOString() } : null,
  startsAt: c.vs ?? null,
  expiresAt: c.ve ?? null,
});

export const windowOf = (doc: CodeLife) => ({ startsAt: doc.vs ?? null, expiresAt: doc.ve ?? null });

export const liveHold = (doc: CodeLife, nowMs: number): boolean => doc.hc != null && doc.hu != null && doc.hu > nowMs;

/** The window of a code (kept through every change of status); the hold only while live and `keepHold`. */
export function lifeOf(doc: CodeLife, nowMs: number, keepHold = true): CodeLife {
  const life: CodeLife = {};
  if (doc.vs != null) life.vs = doc.vs;
  if (doc.ve != null) life.ve = doc.ve;
  if (keepHold && liveHold(doc, nowMs)) Object.assign(life, { hc: doc.hc, hu: doc.hu });
  return life;
}

/**
 * When a free code may be handed out: `'now'`, a later server time (ms: its hold ends or its
 * window opens), or `'never'` (its window has closed). The same rule as Redis' parked set.
 */
export function claimableFrom(life: CodeLife, nowMs: number): 'now' | 'never' | number {
  if (life.ve != null && nowMs >= Date.parse(life.ve)) return 'never';
  let from: number | null = null;
  if (liveHold(life, nowMs)) from = life.hu!;
  if (life.vs != null && nowMs < Date.parse(life.vs)) from = Math.max(from ?? 0, Date.parse(life.vs));
  return from ?? 'now';
}

/** The claim position of a free code: `fr` while claimable, else `pu` (due time) or neither (closed for good). */
export function claimPosition(life: CodeLife, nowMs: number): { fr?: number; pu?: number } {
  const from = claimableFrom(life, nowMs);
  if (from === 'now') return { fr: Math.random() };
  return from === 'never' ? {} : { pu: from };
}

export function toPool(doc: PoolDoc, stats: PoolStats): Pool {
  return {
    name: doc.name,
    perClaimantLimit: doc.limit,
    lowStockThreshold: doc.threshold,
    metadata: doc.metadata ?? {},
    startsAt: doc.startsAt,
    expiresAt: doc.expiresAt,
    maxRedemptions: doc.maxr,
    maxRedemptionsPerClaimant: doc.maxrc,
    publicCodes: doc.public,
    codeFormat: doc.format,
    createdAt: iso(doc.createdAt)!,
    stats,
  };
}

/** A free code with its window (and live hold), placed for claims as of `nowMs` (server time). */
export function freeCode(code: string, life: CodeLife = {}, nowMs = 0): CodeDoc {
  return { code, s: 'free', h: null, k: null, ca: null, ra: null, o: null, ...life, ...claimPosition(life, nowMs) };
}

/** Sum of the counter shards. */
export function sumShards(docs: readonly DocumentSnapshot[]): PoolStats {
  const total = { ...ZERO };
  for (const doc of docs) for (const f of FIELDS) total[f] += Number(doc.get(f) ?? 0);
  return total;
}

/** Adds `deltas` to one random shard: a blind increment, so concurrent claims never conflict on counters. */
export function bumpCounters(tx: Transaction, refs: PoolRefs, shards: number, deltas: Partial<PoolStats>): void {
  const update: Record<string, FieldValue> = {};
  for (const [field, delta] of Object.entries(deltas)) if (delta) update[field] = FieldValue.increment(delta);
  if (Object.keys(update).length > 0)
    tx.set(refs.shard(Math.floor(Math.random() * Math.max(1, shards))), update, { merge: true });
}

/**
 * An outbox event id: 26 digits — the server's time in µs (17), a sequence number inside the
 * step (3: events of one step keep their order) and a random tail (6: steps with the same read
 * time never collide). Ids sort as text and as numbers in time order.
 */
export function eventId(at: Timestamp, seq = 0): string {
  const micros = BigInt(at.seconds) * 1_000_000n + BigInt(Math.floor(at.nanoseconds / 1000));
  const tail = String(Math.floor(Math.random() * 1_000_000)).padStart(6, '0');
  return `${micros.toString().padStart(17, '0')}${String(seq % 1000).padStart(3, '0')}${tail}`;
}

export const EVENT_ID = /^\d{26}$/;

/**
 * Writes an outbox event in the caller's transaction. `p` (creation, ms) and `d` (due, ms) make it
 * pending for the outbox (outbox.ts); `source` is `{pool}` or `{sale, src: 'sale'}`.
 */
export function writeEvent(
  tx: Transaction,
  layout: Layout,
  source: Record<string, string>,
  at: Timestamp,
  type: string,
  key: string,
  payload: Record<string, unknown>,
  seq = 0,
): void {
  const ms = at.toMillis();
  tx.set(layout.events.doc(eventId(at, seq)), { ...source, type, key, payload, at, p: ms, d: ms, a: 0 });
}

export function recordEvent(
  tx: Transaction,
  layout: Layout,
  pool: string,
  at: Timestamp,
  type: string,
  key: string,
  payload: Record<string, unknown>,
): void {
  writeEvent(tx, layout, { pool }, at, type, key, payload);
}

/** A page of outbox events of `query`, in document id order (the event ids), after the event id `after`. */
export async function eventPage(query: Query, limit: number, after: string | undefined): Promise<OutboxEvent[]> {
  let page = query.orderBy(FieldPath.documentId()).limit(limit);
  if (after !== undefined) page = page.startAfter(after);
  return (await page.get()).docs.map((d) => ({
    id: d.id,
    type: d.get('type') as string,
    idempotencyKey: d.get('key') as string,
    payload: d.get('payload') as Record<string, unknown>,
    createdAt: iso(d.get('at') as Timestamp)!,
  }));
}

export { FieldValue, Timestamp };
