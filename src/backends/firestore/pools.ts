/**
 * Coupon pools on Firestore. Every operation that changes state is ONE Firestore transaction that
 * reads what it judges (pool, code, holder, key — point reads) and writes everything it changes
 * (code, holder, key, counter shard, outbox event). Times (claimedAt, redeemedAt, windows) are the
 * server's: the transaction's read time, never the client's clock.
 */
import { refusal } from '../../core/refusals.js';
import { randomUUID } from 'node:crypto';
import { FieldPath, type DocumentReference, type DocumentSnapshot, type Transaction } from '@google-cloud/firestore';
import type { PoolBackend } from '../../core/pools/backend.js';
import { notFound } from '../../core/errors.js';
import type {
  ClaimManyResult,
  CodeInfo,
  CodeStatus,
  CodeWindow,
  ImportedCode,
  InsertResult,
  MultiUseCodeSpec,
  WindowedCode,
  OutboxEvent,
  Page,
  Pool,
  PoolPatch,
  PoolSpec,
  PoolStats,
  Violation,
} from '../../core/types.js';
import { judgeLimitChange, judgeRedeem, judgeRelease, judgeRevoke, judgeUnredeem } from '../../core/model/pools.js';
import { withWindow } from '../shared/imported-code.js';
import { auditPool } from './audit.js';
import { ClaimGrouper, type ClaimOptions } from './claim.js';
import { holdCode, releaseCodeHold, setWindow } from './code-lifecycle.js';
import { addMultiUse, redeemUse, toMultiCode, unredeemUse, usesOfClaimant, type MultiDoc } from './multi-use.js';
import type { Layout, PoolRefs } from './layout.js';
import { PoolDeletions, type PoolDeletionOptions, type TombstoneDoc } from './pool-deletion.js';
import {
  bumpCounters,
  eventPage,
  freeCode,
  iso,
  lifeOf,
  recordEvent,
  rulesOf,
  stateOf,
  sumShards,
  type Timestamp,
  toCode,
  toPool,
  type CodeDoc,
  type HolderDoc,
  type PoolDoc,
} from './records.js';
import { contended, witnessResolver, type Attempt, type TxRunner } from './transactions.js';
import { INITIAL_SHARDS, lowStockAfterDrop, readAnyCode, writeHolder } from './code-access.js';

/** A redeem's first step found a multi-use code. */
const MULTI_USE = Symbol('multi-use');
/** Codes per insert transaction. */
const INSERT_CHUNK = 500;

export class FirestorePools implements PoolBackend {
  readonly importConcurrency = 2;

  private readonly grouper: ClaimGrouper;
  private readonly deletions: PoolDeletions;

  constructor(
    private readonly layout: Layout,
    private readonly tx: TxRunner,
    claimOptions: ClaimOptions = {},
    deletionOptions: PoolDeletionOptions = {},
  ) {
    this.grouper = new ClaimGrouper(layout, tx, claimOptions);
    this.deletions = new PoolDeletions(layout, tx, deletionOptions);
  }

  private refs(pool: string): PoolRefs {
    return this.layout.pool(pool);
  }

  /**
   * One transaction reads the pool document and the pool's deletion tombstone: a pool still being
   * deleted answers a retriable conflict, one whose deleter died (lease expired) is taken over and
   * its deletion finished first — the pool document is then created in the transaction that drops
   * the tombstone, so the new pool starts empty (pool-deletion.ts).
   */
  async createPool(spec: PoolSpec): Promise<Pool> {
    const refs = this.refs(spec.name);
    const tombstone = this.layout.deletion(spec.name);
    const doc = (createdAt: Timestamp): PoolDoc => ({
      name: spec.name,
      limit: spec.perClaimantLimit,
      threshold: spec.lowStockThreshold,
      metadata: spec.metadata,
      startsAt: spec.startsAt,
      expiresAt: spec.expiresAt,
      maxr: spec.maxRedemptions,
      maxrc: spec.maxRedemptionsPerClaimant,
      public: spec.publicCodes,
      format: spec.codeFormat,
      createdAt,
      shards: INITIAL_SHARDS,
      armed: true,
      lowEvents: 0,
    });
    // each round is bounded (its transactions by TxRunner, its sweep by the documents left, as
    // nothing new appears under a deleted pool); the rounds are bounded like a transaction's
    // attempts: a creator whose takeovers keep being taken over answers `unavailable` (retriable:
    // no pool was created, and what it swept was the old pool's) instead of trying for ever
    const since = Date.now();
    for (let round = 1; ; round++) {
      const takenOver = await this.tx.run(async (tx) => {
        const [snap, dead] = await tx.getAll(refs.pool, tombstone);
        if (snap!.exists) throw refusal('pool_exists', { pool: spec.name });
        if (dead!.exists)
          return this.deletions.takeOver(tx, spec.name, dead!.data() as TombstoneDoc, dead!.readTime.toMillis());
        tx.create(refs.pool, doc(snap!.readTime));
        return null;
      });
      if (takenOver === null) break;
      // the previous deleter died: finish its work, then create with the tombstone's removal
      if (
        (await this.deletions.sweep(spec.name, takenOver)) &&
        (await this.deletions.end(spec.name, takenOver, (tx, r, now) => tx.create(r.pool, doc(now))))
      )
        break;
      // taken over again meanwhile (this process stalled past its lease): ask afresh, within the bound
      if (Date.now() - since > this.tx.deadlineMs) throw contended(round, since, this.tx.deadlineMs);
    }
    return this.getPool(spec.name);
  }

  async getPool(name: string): Promise<Pool> {
    const refs = this.refs(name);
    return this.tx.read(async (tx) => {
      const [snap, shards] = await Promise.all([tx.get(refs.pool), tx.get(refs.shards)]);
      if (!snap.exists) throw notFound('pool', name);
      return toPool(snap.data() as PoolDoc, sumShards(shards.docs));
    });
  }

  async listPools({ limit, after }: { limit: number; after?: string }): Promise<Page<Pool>> {
    let query = this.layout.pools.orderBy(FieldPath.documentId()).limit(limit + 1);
    if (after) query = query.startAfter(after);
    const page = await query.get();
    const docs = page.docs.slice(0, limit);
    const items = await Promise.all(
      docs.map(async (d) => toPool(d.data() as PoolDoc, sumShards((await this.refs(d.id).shards.get()).docs))),
    );
    return { items, nextCursor: page.docs.length > limit ? docs[docs.length - 1]!.id : null };
  }

  async updatePool(name: string, patch: PoolPatch): Promise<Pool> {
    const refs = this.refs(name);
    await this.tx.run(async (tx) => {
      const snap = await tx.get(refs.pool);
      if (!snap.exists) throw notFound('pool', name);
      const pool = snap.data() as PoolDoc;
      if (patch.perClaimantLimit !== undefined && patch.perClaimantLimit < pool.limit) {
        const top = await tx.get(refs.holders.orderBy('n', 'desc').limit(1));
        judgeLimitChange(patch.perClaimantLimit, top.empty ? 0 : Number(top.docs[0]!.get('n')));
      }
      const update: Partial<PoolDoc> = {};
      if (patch.perClaimantLimit !== undefined) update.limit = patch.perClaimantLimit;
      if (patch.lowStockThreshold !== undefined) {
        update.threshold = patch.lowStockThreshold;
        // as after a refill: above the (new) threshold the alert is armed again
        if (
          patch.lowStockThreshold === null ||
          sumShards((await tx.get(refs.shards)).docs).free > patch.lowStockThreshold
        )
          update.armed = true;
      }
      if (patch.metadata !== undefined) update.metadata = patch.metadata;
      if (patch.startsAt !== undefined) update.startsAt = patch.startsAt;
      if (patch.expiresAt !== undefined) update.expiresAt = patch.expiresAt;
      if (patch.maxRedemptions !== undefined) update.maxr = patch.maxRedemptions;
      if (patch.maxRedemptionsPerClaimant !== undefined) update.maxrc = patch.maxRedemptionsPerClaimant;
      if (patch.publicCodes !== undefined) update.public = patch.publicCodes;
      if (patch.codeFormat !== undefined) update.format = patch.codeFormat;
      if (Object.keys(update).length > 0) tx.update(refs.pool, update);
    });
    return this.getPool(name);
  }

  /** The pool document and its deletion tombstone in one transaction, then the rest in fenced batches (pool-deletion.ts). */
  async deletePool(name: string): Promise<void> {
    await this.deletions.delete(name);
  }

  /** Deletions whose deleter died (lease expired): taken over as createPool does, swept, tombstone deleted (pool-deletion.ts). */
  finishDeletions(budget: { deletions: number; batches: number }): Promise<{ finished: number; paused: number }> {
    return this.deletions.finishExpired(budget);
  }

  /** Each code with its own window when it has one: a code outside it is stored parked (see claimPosition). */
  async insertCodes(pool: string, entries: readonly ImportedCode[]): Promise<InsertResult> {
    const codes = entries.map(withWindow);
    const refs = this.refs(pool);
    if (codes.length === 0) {
      if (!(await refs.pool.get()).exists) throw notFound('pool', pool);
      return { inserted: 0, duplicates: 0 };
    }
    const result: InsertResult = { inserted: 0, duplicates: 0 };
    for (let i = 0; i < codes.length; i += INSERT_CHUNK) {
      const chunk = codes.slice(i, i + INSERT_CHUNK);
      const part = await this.tx.run(async (tx) => {
        // a code repeated inside the batch keeps its first occurrence's window
        const firsts = new Map<string, WindowedCode>();
        for (const c of chunk) if (!firsts.has(c.code)) firsts.set(c.code, c);
        const [snap, ...existing] = await tx.getAll(refs.pool, ...[...firsts.keys()].map((c) => refs.code(c)));
        if (!snap!.exists) throw notFound('pool', pool);
        const poolDoc = snap!.data() as PoolDoc;
        const nowMs = snap!.readTime.toMillis();
        let fresh = [...firsts.values()].filter((_, j) => !existing[j]!.exists);
        // a code the pool has as a multi-use code is a duplicate too (read only where there are some)
        if (poolDoc.multi && fresh.length > 0) {
          const multis = await tx.getAll(...fresh.map((c) => refs.multi(c.code)));
          fresh = fresh.filter((_, j) => !multis[j]!.exists);
        }
        // a refill re-arms the low-stock alert once free is above the threshold again
        const rearm =
          fresh.length > 0 &&
          !poolDoc.armed &&
          (poolDoc.threshold === null ||
            sumShards((await tx.get(refs.shards)).docs).free + fresh.length > poolDoc.threshold);
        for (const c of fresh)
          tx.create(refs.code(c.code), freeCode(c.code, { vs: c.startsAt, ve: c.expiresAt }, nowMs));
        bumpCounters(tx, refs, poolDoc.shards, { total: fresh.length, free: fresh.length });
        if (rearm) tx.update(refs.pool, { armed: true });
        return { inserted: fresh.length, duplicates: chunk.length - fresh.length };
      });
      result.inserted += part.inserted;
      result.duplicates += part.duplicates;
    }
    return result;
  }

  claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    return this.grouper.claim({ pool, claimant, count, key });
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    const refs = this.refs(pool);
    return this.tx.run(async (tx, _n, attempt) => {
      const { poolDoc, rec, now, codeTime } = await readCode(tx, refs, pool, code);
      judgeRelease(stateOf(rec), claimant);
      const holderRef = refs.holder(rec.h!);
      const holder = (await tx.get(holderRef)).data() as HolderDoc | undefined;
      const rearm =
        !poolDoc.armed &&
        (poolDoc.threshold === null || sumShards((await tx.get(refs.shards)).docs).free + 1 > poolDoc.threshold);
      writeHolder(tx, holderRef, holder, rec.h!, (held) => held.filter((e) => e.c !== code), 0);
      // release ends a hold; the code's window stays, and decides whether claims see it again
      const next = freeCode(code, lifeOf(rec, now.toMillis(), false), now.toMillis());
      writeCode(tx, attempt, refs.code(code), next, codeTime);
      bumpCounters(tx, refs, poolDoc.shards, { claimed: -1, free: 1 });
      if (rearm) tx.update(refs.pool, { armed: true });
      return toCode(pool, next);
    });
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    const refs = this.refs(pool);
    const single = await this.tx.run<CodeInfo | typeof MULTI_USE>(async (tx, _n, attempt) => {
      const { poolDoc, rec, now, codeTime } = await readAnyCode(tx, refs, pool, code);
      if (!rec) {
        attempt.resolveWith(async () => 'rerun'); // nothing written here
        return MULTI_USE; // redeemed by its own compare-and-set step, without this transaction's locks
      }
      // the would-be holder's document and the counters are read before the model judges (a
      // transaction reads before it decides); the model asks for them only when it needs them
      const holderIfAny = rec.s === 'free' && poolDoc.public ? claimant : rec.s === 'redeemed' ? null : rec.h;
      const holderRef = holderIfAny !== null ? refs.holder(holderIfAny) : null;
      const holder = holderRef ? ((await tx.get(holderRef)).data() as HolderDoc | undefined) : undefined;
      const mayBeDirect = rec.s === 'free' && poolDoc.public;
      const needCounters =
        rec.s !== 'redeemed' && (poolDoc.maxr !== null || (mayBeDirect && poolDoc.threshold !== null && poolDoc.armed));
      const counters = needCounters ? sumShards((await tx.get(refs.shards)).docs) : null;
      const judged = judgeRedeem(rulesOf(poolDoc), stateOf(rec), {
        claimant,
        orderId,
        now: now.toDate().toISOString(),
        heldBy: () => holder?.n ?? 0,
        redeemed: () => ({ pool: counters?.redeemed ?? 0, claimant: holder?.redeemed ?? 0 }),
      });
      if (judged.kind === 'replay') return toCode(pool, rec); // the same checkout again: its answer, unchanged
      const { direct, holder: holderName } = judged;
      // the redeem consumes the hold
      const next: CodeDoc = {
        code,
        s: 'redeemed',
        h: holderName,
        k: direct ? null : rec.k,
        ca: direct ? now : rec.ca,
        ra: now,
        o: orderId ?? null,
        ...lifeOf(rec, now.toMillis(), false),
      };
      writeCode(tx, attempt, refs.code(code), next, codeTime);
      writeHolder(tx, holderRef!, holder, holderName, (held) => (direct ? [...held, { c: code, k: null }] : held), 1);
      bumpCounters(tx, refs, poolDoc.shards, direct ? { free: -1, redeemed: 1 } : { claimed: -1, redeemed: 1 });
      if (direct && counters) lowStockAfterDrop(tx, this.layout, refs, poolDoc, counters.free - 1, now);
      return toCode(pool, next);
    });
    return single === MULTI_USE ? redeemUse(this.layout.db, this.tx, refs, pool, code, claimant, orderId) : single;
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    const refs = this.refs(pool);
    return this.tx.run(async (tx, _n, attempt) => {
      const { poolDoc, rec, multi, now, codeTime } = await readAnyCode(tx, refs, pool, code);
      if (!rec) return unredeemUse(tx, this.layout, refs, pool, now, multi!, orderId);
      judgeUnredeem(stateOf(rec), orderId);
      const holderRef = refs.holder(rec.h!);
      const holder = (await tx.get(holderRef)).data() as HolderDoc | undefined;
      recordEvent(tx, this.layout, pool, now, 'code.unredeemed', `code.unredeemed:${pool}:${code}:${randomUUID()}`, {
        pool,
        code,
        claimant: rec.h,
        orderId: rec.o ?? null,
        redeemedAt: iso(rec.ra),
        unredeemedAt: iso(now),
      });
      const next: CodeDoc = { ...rec, s: 'claimed', ra: null, o: null };
      writeCode(tx, attempt, refs.code(code), next, codeTime);
      writeHolder(tx, holderRef, holder, rec.h!, (held) => held, -1);
      bumpCounters(tx, refs, poolDoc.shards, { redeemed: -1, claimed: 1 });
      return toCode(pool, next);
    });
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    const refs = this.refs(pool);
    return this.tx.run(async (tx, _n, attempt) => {
      const { poolDoc, rec, now, codeTime } = await readCode(tx, refs, pool, code);
      judgeRevoke(stateOf(rec));
      const holderRef = rec.h ? refs.holder(rec.h) : null;
      const holder = holderRef ? ((await tx.get(holderRef)).data() as HolderDoc | undefined) : undefined;
      const counters =
        rec.s === 'free' && poolDoc.threshold !== null && poolDoc.armed
          ? sumShards((await tx.get(refs.shards)).docs)
          : null;
      if (holderRef)
        writeHolder(
          tx,
          holderRef,
          holder,
          rec.h!,
          (held) => held.filter((e) => e.c !== code),
          rec.s === 'redeemed' ? -1 : 0,
        );
      const next: CodeDoc = {
        code,
        s: 'revoked',
        h: null,
        k: null,
        ca: null,
        ra: null,
        o: null,
        ...lifeOf(rec, now.toMillis(), false),
      };
      writeCode(tx, attempt, refs.code(code), next, codeTime);
      bumpCounters(tx, refs, poolDoc.shards, { revoked: 1, [rec.s]: -1 });
      if (counters) lowStockAfterDrop(tx, this.layout, refs, poolDoc, counters.free - 1, now);
      return toCode(pool, next);
    });
  }

  async hold(pool: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo> {
    return this.tx.run((tx) => holdCode(tx, this.refs(pool), pool, code, claimant, ttlMs));
  }

  async releaseHold(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.tx.run((tx) => releaseCodeHold(tx, this.refs(pool), pool, code, claimant));
  }

  async setCodeWindow(pool: string, code: string, window: CodeWindow): Promise<CodeInfo> {
    return this.tx.run((tx) => setWindow(tx, this.refs(pool), pool, code, window));
  }

  async addMultiUseCode(pool: string, spec: MultiUseCodeSpec): Promise<CodeInfo> {
    const refs = this.refs(pool);
    return this.tx.run(async (tx) => {
      const poolSnap = await tx.get(refs.pool);
      if (!poolSnap.exists) throw notFound('pool', pool);
      return addMultiUse(tx, refs, poolSnap, pool, spec);
    });
  }

  async clock(): Promise<string> {
    return (await this.layout.root.get()).readTime.toDate().toISOString();
  }

  async getCode(pool: string, code: string, claimant?: string | null): Promise<CodeInfo> {
    const refs = this.refs(pool);
    const [poolSnap, codeSnap, multiSnap] = await this.layout.db.getAll(refs.pool, refs.code(code), refs.multi(code));
    if (!poolSnap!.exists) throw notFound('pool', pool);
    if (multiSnap!.exists)
      return toMultiCode(
        pool,
        multiSnap!.data() as MultiDoc,
        claimant ? await usesOfClaimant(refs, code, claimant) : undefined,
      );
    if (!codeSnap!.exists) throw notFound('code', code);
    return toCode(pool, codeSnap!.data() as CodeDoc, codeSnap!.readTime.toMillis());
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    const refs = this.refs(pool);
    return this.tx.read(async (tx) => {
      const [poolSnap, holderSnap] = await tx.getAll(refs.pool, refs.holder(claimant));
      if (!poolSnap!.exists) throw notFound('pool', pool);
      const held = (holderSnap!.data() as HolderDoc | undefined)?.held ?? [];
      if (held.length === 0) return [];
      const docs = await tx.getAll(...held.map((e) => refs.code(e.c)));
      return docs.filter((d) => d.exists).map((d) => toCode(pool, d.data() as CodeDoc, d.readTime.toMillis()));
    });
  }

  async stats(pool: string): Promise<PoolStats> {
    return (await this.getPool(pool)).stats;
  }

  async *exportCodes(
    pool: string,
    { status, batchSize }: { status?: CodeStatus; batchSize: number },
  ): AsyncIterable<CodeInfo[]> {
    const refs = this.refs(pool);
    if (!(await refs.pool.get()).exists) throw notFound('pool', pool);
    let after: DocumentSnapshot | null = null;
    // bounded: each page starts after the last document of the one before (a cursor that only
    // moves forward over a finite collection), and no page is retried
    for (;;) {
      let query = (status ? refs.codes.where('s', '==', status) : refs.codes)
        .orderBy(FieldPath.documentId())
        .limit(batchSize);
      if (after) query = query.startAfter(after);
      const page = await query.get();
      if (page.empty) return;
      after = page.docs[page.docs.length - 1]!;
      yield page.docs.map((d) => toCode(pool, d.data() as CodeDoc));
      if (page.docs.length < batchSize) return;
    }
  }

  audit(pool: string): Promise<Violation[]> {
    return auditPool(this.layout, this.tx, pool);
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const events = pool ? this.layout.events.where('pool', '==', pool) : this.layout.events;
    return eventPage(events, limit, after || undefined);
  }
}

/** Reads the pool and one single-use code in a transaction (not_found for either); `now` is the server's read time. */
export async function readCode(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  code: string,
): Promise<{ poolDoc: PoolDoc; rec: CodeDoc; now: Timestamp; codeTime: Timestamp | null }> {
  const found = await readAnyCode(tx, refs, pool, code);
  if (!found.rec) throw notFound('code', code);
  return { ...found, rec: found.rec };
}

/**
 * Writes a single-use code's next state under the attempt's id (`st`) and settles a commit whose
 * answer is lost on it (transactions.ts): the code shows the id — applied, the answer stands; the
 * code as the step read it — fenced, run again; moved without the id — a later step may have
 * replaced it: unknown, `unavailable`.
 */
function writeCode(
  tx: Transaction,
  attempt: Attempt<unknown>,
  ref: DocumentReference,
  next: CodeDoc,
  readAt: Timestamp | null,
): void {
  tx.set(ref, { ...next, st: attempt.id });
  if (readAt === null) return; // no code document was read: nothing to settle on (unknown)
  attempt.resolveWith(
    witnessResolver({
      ref,
      guard: readAt,
      mine: (back) => (back.get('st') === attempt.id ? { committed: true } : null),
      moved: () => 'unknown',
    }),
  );
}
