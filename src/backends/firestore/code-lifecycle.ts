/**
 * The rest of the coupon lifecycle on Firestore: checkout holds and a code's own
 * validity window. Each step is one transaction that point-reads the pool and the code and judges
 * by the transaction's read time (the server's clock).
 *
 * A free code that cannot be handed out now (held by a checkout, or before its window) carries no
 * `fr`, so the claims' candidate query never finds it; it is parked with `pu`, the server time at
 * which it may become claimable again. Claims look at the earliest `pu` beside their candidate
 * query and, once it is due, bring a bounded batch of due codes back (sweepDueCodes) — the same
 * idea as Redis' parked set. A free code past its window has neither: only `setCodeWindow` can
 * reopen it. A code whose window closes while it still has `fr` is skipped by the claim that finds
 * it (the window is always judged inside the claim's transaction as well) and parked right after
 * (parkStale).
 */
import { refusal } from '../../core/refusals.js';
import { FieldValue, type DocumentSnapshot, type Transaction } from '@google-cloud/firestore';
import type { CodeInfo, CodeWindow } from '../../core/types.js';
import { judgeHold, judgeReleaseHold } from '../../core/model/pools.js';
import type { PoolRefs } from './layout.js';
import { setMultiWindow } from './multi-use.js';
import { readAnyCode } from './code-access.js';
import {
  claimPosition,
  freeCode,
  lifeOf,
  rulesOf,
  stateOf,
  toCode,
  type CodeDoc,
  type CodeLife,
  type HolderDoc,
} from './records.js';

/** Most parked codes one sweep brings back (claims sweep again while more are due). */
const SWEEP_BATCH = 100;

/** Writes a code whose hold or window changed; a free one is placed for claims anew (`fr` / `pu`). */
function rewrite(tx: Transaction, refs: PoolRefs, rec: CodeDoc, life: CodeLife, nowMs: number): CodeDoc {
  const { vs: _vs, ve: _ve, hc: _hc, hu: _hu, ...rest } = rec;
  const next = rec.s === 'free' ? freeCode(rec.code, life, nowMs) : { ...rest, ...life };
  tx.set(refs.code(rec.code), next);
  return next;
}

/** A single-use code for a hold (a multi-use code has no one holder: `conflict`). */
async function readHoldable(tx: Transaction, refs: PoolRefs, pool: string, code: string) {
  const { poolDoc, rec, now } = await readAnyCode(tx, refs, pool, code);
  if (!rec) throw refusal('multi_use_not_holdable', { code });
  return { poolDoc, rec, now };
}

/** `hold`: see PoolBackend.hold. */
export async function holdCode(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  code: string,
  claimant: string,
  ttlMs: number,
): Promise<CodeInfo> {
  const { poolDoc, rec, now } = await readHoldable(tx, refs, pool, code);
  const nowMs = now.toMillis();
  // only a free public code needs the claimant's holdings: its redeemer will need room under the limit
  const holder =
    rec.s === 'free' && poolDoc.public
      ? ((await tx.get(refs.holder(claimant))).data() as HolderDoc | undefined)
      : undefined;
  judgeHold(rulesOf(poolDoc), stateOf(rec), claimant, now.toDate().toISOString(), () => holder?.n ?? 0);
  // holding again by the same claimant renews the hold
  return toCode(
    pool,
    rewrite(tx, refs, rec, { ...lifeOf(rec, nowMs, false), hc: claimant, hu: nowMs + ttlMs }, nowMs),
    nowMs,
  );
}

/** `releaseHold`: drops a live hold; a free code is claimable again at once (inside its window). */
export async function releaseCodeHold(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  code: string,
  claimant: string | null,
): Promise<CodeInfo> {
  const { rec, now } = await readHoldable(tx, refs, pool, code);
  const nowMs = now.toMillis();
  if (judgeReleaseHold(stateOf(rec), claimant, now.toDate().toISOString()) === 'none') return toCode(pool, rec, nowMs);
  return toCode(pool, rewrite(tx, refs, rec, lifeOf(rec, nowMs, false), nowMs), nowMs);
}

/** `setCodeWindow`: a free code leaves or rejoins the claims as its new window says. */
export async function setWindow(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  code: string,
  window: CodeWindow,
): Promise<CodeInfo> {
  const { rec, multi, now } = await readAnyCode(tx, refs, pool, code);
  if (!rec) return setMultiWindow(tx, refs, pool, multi!, window);
  const nowMs = now.toMillis();
  const { vs: _vs, ve: _ve, ...kept } = lifeOf(rec, nowMs);
  return toCode(pool, rewrite(tx, refs, rec, { ...kept, vs: window.startsAt, ve: window.expiresAt }, nowMs), nowMs);
}

/**
 * Brings parked codes whose due time has passed (by `nowMs`, a server read time) back to the
 * claims — or parks them later, or for good. Optimistic, not a transaction: each code is written
 * only if it is unchanged since this read (its update time), so concurrent sweeps of several
 * claims never lock each other (on the emulator, two transactions rewriting the same documents
 * deadlock until its lock timeout). A code changed meanwhile was placed by whoever changed it.
 */
export async function sweepDueCodes(refs: PoolRefs, nowMs: number): Promise<void> {
  await placeAgain((await refs.codes.where('pu', '<=', nowMs).orderBy('pu').limit(SWEEP_BATCH).get()).docs, nowMs);
}

/** Free codes a claim found with `fr` after their window closed: out of the claims (same rule as the sweep). */
export async function parkStale(snaps: readonly DocumentSnapshot[], nowMs: number): Promise<void> {
  await placeAgain(snaps, nowMs);
}

/** Each free code read as `snaps` placed for claims as of `nowMs`, if unchanged since that read. */
async function placeAgain(snaps: readonly DocumentSnapshot[], nowMs: number): Promise<void> {
  await Promise.allSettled(
    snaps.map((snap) => {
      const rec = snap.data() as CodeDoc;
      if (rec.s !== 'free') return null;
      const life = lifeOf(rec, nowMs);
      const place = claimPosition(life, nowMs);
      return snap.ref.update(
        {
          fr: place.fr ?? FieldValue.delete(),
          pu: place.pu ?? FieldValue.delete(),
          hc: life.hc ?? FieldValue.delete(),
          hu: life.hu ?? FieldValue.delete(),
        },
        { lastUpdateTime: snap.updateTime! },
      );
    }),
  );
}

/** The earliest due time of the pool's parked codes (null: none parked), read without a lock. */
export async function earliestParked(refs: PoolRefs): Promise<{ due: number | null; nowMs: number }> {
  const head = await refs.codes.orderBy('pu').limit(1).get();
  return { due: head.empty ? null : Number(head.docs[0]!.get('pu')), nowMs: head.readTime.toMillis() };
}
