/**
 * The audit of one pool: every document of the pool read in one consistent read-only snapshot,
 * checked against I1 (one holder per code, holder documents agree with codes), I2 (limit,
 * idempotency keys), I4 (counter shards equal the codes) and I7 (one low-stock event per
 * recorded crossing).
 */
import { notFound } from '../../core/errors.js';
import type { PoolStats, Violation } from '../../core/types.js';
import { counterViolations, misListedViolation, overLimitViolation, unlistedViolation } from '../shared/pool-rules.js';
import type { Layout } from './layout.js';
import { auditMultiUse } from './multi-use.js';
import {
  claimableFrom,
  liveHold,
  sumShards,
  ZERO,
  type CodeDoc,
  type HolderDoc,
  type KeyDoc,
  type PoolDoc,
} from './records.js';
import type { TxRunner } from './transactions.js';

export async function auditPool(layout: Layout, runner: TxRunner, pool: string): Promise<Violation[]> {
  const refs = layout.pool(pool);
  const [poolSnap, codes, holders, keys, shards, events, multiUse] = await runner.snapshot(refs.pool, (tx) =>
    Promise.all([
      tx.get(refs.pool),
      tx.get(refs.codes),
      tx.get(refs.holders),
      tx.get(refs.keys),
      tx.get(refs.shards),
      tx.get(layout.events.where('pool', '==', pool).where('type', '==', 'pool.low_stock')),
      auditMultiUse(tx, refs, pool),
    ]),
  );
  if (!poolSnap.exists) throw notFound('pool', pool);
  const poolDoc = poolSnap.data() as PoolDoc;
  const nowMs = poolSnap.readTime.toMillis();
  const violations: Violation[] = [];
  const ledger: PoolStats = { ...ZERO };
  const records = new Map<string, CodeDoc>();
  const holderDocs = new Map<string, HolderDoc>();
  for (const h of holders.docs) {
    const doc = h.data() as HolderDoc;
    holderDocs.set(doc.claimant, doc);
  }
  for (const snap of codes.docs) {
    const rec = snap.data() as CodeDoc;
    const code = rec.code;
    records.set(code, rec);
    ledger[rec.s]++;
    ledger.total++;
    const holds = rec.s === 'claimed' || rec.s === 'redeemed';
    if (holds !== (rec.h !== null && rec.h !== undefined))
      violations.push({
        invariant: 'I1',
        pool,
        code,
        message: `code '${code}' is ${rec.s} but its holder is ${rec.h ?? 'missing'}`,
      });
    const placement = misplaced(rec, nowMs);
    if (placement)
      violations.push({ invariant: 'I1', pool, code, message: `code '${code}' is ${rec.s} but ${placement}` });
    if (liveHold(rec, nowMs) && rec.s !== 'free' && (rec.s !== 'claimed' || rec.hc !== rec.h))
      violations.push({
        invariant: 'I1',
        pool,
        code,
        claimant: rec.hc!,
        message: `code '${code}' is ${rec.s}${rec.h ? ` by '${rec.h}'` : ''} but held for checkout by '${rec.hc}'`,
      });
    if (holds && rec.h && !holderDocs.get(rec.h)?.held.some((e) => e.c === code))
      violations.push(unlistedViolation(pool, code, rec.h));
  }
  for (const [claimant, doc] of holderDocs) {
    if (doc.held.length > poolDoc.limit)
      violations.push(overLimitViolation(pool, claimant, doc.held.length, poolDoc.limit));
    if (doc.n !== doc.held.length)
      violations.push({
        invariant: 'I2',
        pool,
        claimant,
        expected: doc.held.length,
        actual: doc.n,
        message: `holder '${claimant}' counts ${doc.n} codes but lists ${doc.held.length}`,
      });
    const redeemed = doc.held.filter((e) => records.get(e.c)?.s === 'redeemed').length;
    if (doc.redeemed !== redeemed)
      violations.push({
        invariant: 'I2',
        pool,
        claimant,
        expected: redeemed,
        actual: doc.redeemed,
        message: `holder '${claimant}' counts ${doc.redeemed} redeemed codes, the codes say ${redeemed}`,
      });
    for (const { c: code } of doc.held) {
      const holder = records.get(code)?.h;
      if (holder !== claimant) violations.push(misListedViolation(pool, claimant, code, holder));
    }
  }
  for (const snap of keys.docs) {
    const owner = (snap.data() as KeyDoc).c;
    const key = Buffer.from(snap.id, 'base64url').toString('utf8');
    for (const [code, rec] of records) {
      if (rec.k === key && rec.h && rec.h !== owner)
        violations.push({
          invariant: 'I2',
          pool,
          code,
          claimant: owner,
          message: `idempotency key '${key}' of '${owner}' points at code '${code}' held by '${rec.h}'`,
        });
    }
  }
  violations.push(...multiUse);
  violations.push(...counterViolations(pool, sumShards(shards.docs), ledger));
  if (events.size !== poolDoc.lowEvents) {
    violations.push({
      invariant: 'I7',
      pool,
      expected: poolDoc.lowEvents,
      actual: events.size,
      message: `${poolDoc.lowEvents} low-stock crossings were recorded but the outbox holds ${events.size} low-stock events`,
    });
  }
  return violations;
}

/**
 * Where a code sits for claims, if wrong (as of the snapshot's time `nowMs`): only a free code has
 * a claim position (`fr`) or a due time (`pu`); a held free code, or one before its window, must
 * not have `fr` (a claim would hand it out). A parked code that is already due is fine (the next
 * claim brings it back), and so is `fr` on a code whose window has just closed (claims judge the
 * window too, and park it).
 */
function misplaced(rec: CodeDoc, nowMs: number): string | null {
  const hasFr = typeof rec.fr === 'number';
  if (rec.s !== 'free') return hasFr || rec.pu !== undefined ? 'has a claim position' : null;
  if (hasFr && rec.pu !== undefined) return 'is both claimable and parked';
  const from = claimableFrom(rec, nowMs);
  if (hasFr)
    return typeof from === 'number'
      ? `is in the claims while ${liveHold(rec, nowMs) ? 'held' : 'before its window'}`
      : null;
  if (rec.pu === undefined) return from === 'never' ? null : 'has no claim position';
  return null;
}
