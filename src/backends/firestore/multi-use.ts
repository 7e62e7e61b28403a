/**
 * Multi-use codes on Firestore (one code, N uses, each use once per order). A multi-use code is
 * its own document beside the pool's single-use codes (`multi/{b64(code)}`): claims never see it
 * and the pool's counters do not count it. Each use is a document keyed by its order
 * (`uses/{b64(order)}`), so "once per order" is a point read in the redeem's transaction, and
 * `by/{b64(claimant)}` counts a claimant's uses for `usesPerClaimant`. The code document's `used`
 * is the one number every use of the code moves: Firestore serialises them on it.
 */
import { refusal } from '../../core/refusals.js';
import { randomUUID } from 'node:crypto';
import {
  FieldValue,
  type DocumentSnapshot,
  type Firestore,
  type Timestamp,
  type Transaction,
} from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import { unredeemedEvent } from '../../core/events.js';
import type { CodeInfo, CodeWindow, MultiUseCodeSpec, Violation } from '../../core/types.js';
import { judgeUnuse, judgeUse } from '../../core/model/pools.js';
import { multiUseCode, useOf } from '../shared/pool-rules.js';
import type { Layout, PoolRefs } from './layout.js';
import { iso, recordEvent, rulesOf, type PoolDoc } from './records.js';
import type { TxRunner } from './transactions.js';

export interface MultiDoc {
  code: string;
  /** Uses allowed in all, recorded so far, allowed per claimant (null: no limit). */
  max: number;
  used: number;
  per: number | null;
  vs: string | null;
  ve: string | null;
}

interface UseDoc {
  o: string;
  c: string | null;
  at: Timestamp;
}

/** A multi-use code as answered. */
export const toMultiCode = (pool: string, m: MultiDoc, byClaimant?: number): CodeInfo =>
  multiUseCode(
    pool,
    { code: m.code, max: m.max, used: m.used, perClaimant: m.per, startsAt: m.vs, expiresAt: m.ve },
    byClaimant,
  );

const toUse = (pool: string, m: MultiDoc, use: UseDoc): CodeInfo =>
  useOf(toMultiCode(pool, m), { claimant: use.c, at: iso(use.at)!, orderId: use.o });

/** `addMultiUseCode`: `already_exists` when the pool has the code, single- or multi-use. */
export async function addMultiUse(
  tx: Transaction,
  refs: PoolRefs,
  poolSnap: DocumentSnapshot,
  pool: string,
  spec: MultiUseCodeSpec,
): Promise<CodeInfo> {
  const [single, multi] = await tx.getAll(refs.code(spec.code), refs.multi(spec.code));
  if (single!.exists || multi!.exists) throw refusal('code_exists', { code: spec.code });
  const doc: MultiDoc = {
    code: spec.code,
    max: spec.uses,
    used: 0,
    per: spec.usesPerClaimant,
    vs: spec.startsAt,
    ve: spec.expiresAt,
  };
  tx.create(refs.multi(spec.code), doc);
  // imports read the multi-use codes only in pools that have some
  tx.update(poolSnap.ref, { multi: FieldValue.increment(1) });
  return toMultiCode(pool, doc);
}

/**
 * One use of a multi-use code for `orderId` (a retried order answers its use unchanged).
 * Compare-and-set, not a locking transaction: every redeemer of a popular code reads and writes the
 * same document, and locking transactions doing that deadlock on the emulator until its ~2 s lock
 * timeout (measured: 100 redeems from 4 processes did not finish in 280 s). Here the reads are one
 * lock-free snapshot (its read time is the server's now), and the writes commit only if the code
 * document is unchanged since (its update time), the use is new (`create`) and so is the
 * claimant's count; otherwise the attempt runs again on fresh reads.
 */
export function redeemUse(
  db: Firestore,
  runner: TxRunner,
  refs: PoolRefs,
  pool: string,
  code: string,
  claimant: string | null,
  orderId: string | null,
): Promise<CodeInfo> {
  if (orderId === null) throw refusal('order_required', { code });
  return runner.run(
    async (tx) => {
      const [poolSnap, mSnap, useSnap, bySnap] = await db.getAll(
        refs.pool,
        refs.multi(code),
        refs.use(code, orderId),
        ...(claimant !== null ? [refs.usesBy(code, claimant)] : []),
      );
      if (!poolSnap!.exists) throw notFound('pool', pool);
      if (!mSnap!.exists) throw notFound('code', code);
      const poolDoc = poolSnap!.data() as PoolDoc;
      const m = mSnap!.data() as MultiDoc;
      const prior = useSnap!.exists ? (useSnap!.data() as UseDoc) : null;
      const now = mSnap!.readTime;
      const mine = Number(bySnap?.get('n') ?? 0);
      const judged = judgeUse(
        rulesOf(poolDoc),
        { code, maxUses: m.max, perClaimant: m.per, uses: m.used, startsAt: m.vs, expiresAt: m.ve },
        {
          claimant,
          orderId,
          now: now.toDate().toISOString(),
          prior: prior && { claimant: prior.c },
          usesBy: () => mine,
        },
      );
      if (judged === 'replay') return toUse(pool, m, prior!);
      const use: UseDoc = { o: orderId, c: claimant, at: now };
      tx.update(mSnap!.ref, { used: m.used + 1 }, { lastUpdateTime: mSnap!.updateTime! });
      tx.create(refs.use(code, orderId), use);
      if (bySnap?.exists) tx.update(bySnap.ref, { n: mine + 1 }, { lastUpdateTime: bySnap.updateTime! });
      else if (claimant !== null) tx.create(refs.usesBy(code, claimant), { claimant, n: 1 });
      return toUse(pool, { ...m, used: m.used + 1 }, use);
    },
    undefined,
    { optimistic: true },
  );
}

/** Gives the use of `orderId` back, recorded as a `code.unredeemed` event. */
export async function unredeemUse(
  tx: Transaction,
  layout: Layout,
  refs: PoolRefs,
  pool: string,
  now: Timestamp,
  m: MultiDoc,
  orderId: string | null,
): Promise<CodeInfo> {
  const useSnap = orderId === null ? null : await tx.get(refs.use(m.code, orderId));
  const use = judgeUnuse(m.code, orderId, useSnap?.exists ? (useSnap.data() as UseDoc) : null);
  tx.delete(useSnap!.ref);
  tx.update(refs.multi(m.code), { used: FieldValue.increment(-1) });
  if (use.c !== null) tx.set(refs.usesBy(m.code, use.c), { n: FieldValue.increment(-1) }, { merge: true });
  const event = unredeemedEvent(pool, m.code, use.c ?? '', orderId, iso(use.at)!, iso(now)!, randomUUID());
  recordEvent(tx, layout, pool, now, event.type, event.idempotencyKey, event.payload);
  return toMultiCode(pool, { ...m, used: m.used - 1 });
}

/** `setCodeWindow` of a multi-use code. */
export function setMultiWindow(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  m: MultiDoc,
  window: CodeWindow,
): CodeInfo {
  tx.update(refs.multi(m.code), { vs: window.startsAt, ve: window.expiresAt });
  return toMultiCode(pool, { ...m, vs: window.startsAt, ve: window.expiresAt });
}

/** A claimant's uses of a multi-use code (for `getCode(pool, code, claimant)`). */
export async function usesOfClaimant(refs: PoolRefs, code: string, claimant: string): Promise<number> {
  return Number((await refs.usesBy(code, claimant).get()).get('n') ?? 0);
}

/** Audit of the multi-use codes, from the caller's read-only snapshot: counted = recorded ≤ allowed, per claimant too. */
export async function auditMultiUse(tx: Transaction, refs: PoolRefs, pool: string): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const snap of (await tx.get(refs.multis)).docs) {
    const m = snap.data() as MultiDoc;
    const [uses, by] = await Promise.all([tx.get(snap.ref.collection('uses')), tx.get(snap.ref.collection('by'))]);
    if (uses.size !== m.used)
      violations.push({
        invariant: 'I2',
        pool,
        code: m.code,
        expected: uses.size,
        actual: m.used,
        message: `multi-use code '${m.code}' counts ${m.used} uses but ${uses.size} are recorded`,
      });
    if (uses.size > m.max)
      violations.push({
        invariant: 'I2',
        pool,
        code: m.code,
        expected: m.max,
        actual: uses.size,
        message: `multi-use code '${m.code}' was used ${uses.size} times, ${m.max} allowed`,
      });
    const perClaimant = new Map<string, number>();
    for (const u of uses.docs) {
      const c = (u.data() as UseDoc).c;
      if (c !== null) perClaimant.set(c, (perClaimant.get(c) ?? 0) + 1);
    }
    for (const b of by.docs) {
      const { claimant, n } = b.data() as { claimant: string; n: number };
      if ((perClaimant.get(claimant) ?? 0) !== n)
        violations.push({
          invariant: 'I2',
          pool,
          code: m.code,
          claimant,
          expected: perClaimant.get(claimant) ?? 0,
          actual: n,
          message: `'${claimant}' counts ${n} uses of '${m.code}' but ${perClaimant.get(claimant) ?? 0} are recorded`,
        });
    }
    if (m.per !== null) {
      for (const [claimant, n] of perClaimant) {
        if (n > m.per)
          violations.push({
            invariant: 'I2',
            pool,
            code: m.code,
            claimant,
            expected: m.per,
            actual: n,
            message: `'${claimant}' used '${m.code}' ${n} times, ${m.per} allowed`,
          });
      }
    }
  }
  return violations;
}
