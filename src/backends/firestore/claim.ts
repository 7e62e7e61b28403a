/**
 * The claim. Candidates are found OUTSIDE the transaction: free codes carry a random float `fr`,
 * and a query from a random point (wrapping to 0) returns a few of them. A query inside a
 * Firestore transaction would lock its whole range, so concurrent claims would collide; instead
 * the transaction point-reads the pool, each claimant's holder document and each idempotency key,
 * and writes the codes it takes (picked at random from those found), the holders, the keys and
 * one counter shard — every rule (one holder per code, the per-claimant limit, idempotency, the
 * window, stock) is judged and enforced in ONE step. The low-stock alert is settled right after
 * the commit (settleLowStock).
 *
 * The codes are judged as the query found them and written only if they are still exactly that
 * (a precondition on their update time), not read again under lock, and they are written in the
 * order of their paths. Why: Firestore breaks a deadlock only by its lock timeout (~2 s on the
 * emulator). Two claims that both read a code under lock and then both write it deadlock, and so
 * can two commits writing shared codes in different orders; random candidates of concurrent claims
 * overlap often enough that those waits serialise whole storms. With the precondition and one
 * write order, the loser of an overlap fails its precondition at once and its group looks again
 * (the storm measurements are in docs/firestore.md, "The claim").
 *
 * A candidate taken meanwhile makes the attempt start again with fresh candidates. Only when the
 * query found fewer free codes than wanted, but some (the pool is nearly empty), does the
 * transaction query the free codes itself, under lock, so `sold_out` and "fewer than wanted" are
 * always true answers; a query that found none saw the pool empty at its read time, which answers
 * `sold_out` without locking anything.
 *
 * Grouped claims: claims of one pool that wait in this process at the same time are served by one
 * transaction (ClaimGrouper, on shared/group-queue.ts, which says why and how), each decided
 * exactly as if alone, in arrival order. A repeat of a claimant or key (a double click) waits until
 * the group holding it has committed (hold-back), and then sees its holding.
 *
 * A commit whose answer was lost (transactions.ts) is settled on the first code the attempt
 * writes: every code a claim takes carries the attempt's id (`st`), and its write is conditional on
 * the code's update time. The code shows that id: the group committed, and its answers stand. It
 * moved without it: this attempt can never commit — unless the code is held by the claimant it was
 * meant for (a later write may have dropped the id): unknown, `unavailable`. Unchanged: a fence
 * write voids the attempt, and the group runs again.
 */
import { refusal } from '../../core/refusals.js';
import {
  FieldValue,
  type DocumentReference,
  type DocumentSnapshot,
  type QueryDocumentSnapshot,
  type Transaction,
} from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import type { ClaimManyResult } from '../../core/types.js';
import { windowState, outsideWindow } from '../../core/window.js';
import { judgeClaimKey, roomUnderLimit } from '../../core/model/pools.js';
import type { Layout, PoolRefs } from './layout.js';
import { lowStockAfterDrop, MAX_SHARDS, writeHolder } from './code-access.js';
import { earliestParked, parkStale, sweepDueCodes } from './code-lifecycle.js';
import {
  bumpCounters,
  claimableFrom,
  lifeOf,
  sumShards,
  type CodeDoc,
  type HeldEntry,
  type HolderDoc,
  type KeyDoc,
  type PoolDoc,
} from './records.js';
import { RETRY, witnessResolver, type TxRunner } from './transactions.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';

export interface ClaimOptions {
  /** Extra candidates fetched beyond the count wanted, to pick from at random (default 8). */
  spare?: number;
  /** Most claims served by one transaction (default 25; 1 turns grouping off). */
  groupMax?: number;
  /** Group transactions of one pool running at once in this process (default 2). */
  groupConcurrency?: number;
}

export interface ClaimRequest {
  pool: string;
  claimant: string;
  count: number;
  key: string | null;
}

type Outcome = { ok: true; value: ClaimManyResult } | { ok: false; error: unknown };

/**
 * Candidate free codes from a random point of `fr`, wrapping around to 0. Beside that query, the
 * earliest parked code (code-lifecycle.ts): once it is due by the server's clock, due codes are
 * brought back first and the candidates are looked for again.
 */
async function findCandidates(
  refs: PoolRefs,
  want: number,
): Promise<{ snaps: QueryDocumentSnapshot[]; exhaustive: boolean }> {
  const [found, parked] = await Promise.all([queryCandidates(refs, want), earliestParked(refs)]);
  if (parked.due === null || parked.due > parked.nowMs) return found;
  await sweepDueCodes(refs, parked.nowMs);
  return queryCandidates(refs, want);
}

async function queryCandidates(
  refs: PoolRefs,
  want: number,
): Promise<{ snaps: QueryDocumentSnapshot[]; exhaustive: boolean }> {
  const start = Math.random();
  const above = await refs.codes.where('fr', '>=', start).orderBy('fr').limit(want).get();
  let docs = above.docs;
  if (docs.length < want) {
    const wrapped = await refs.codes
      .where('fr', '<', start)
      .orderBy('fr')
      .limit(want - docs.length)
      .get();
    docs = [...docs, ...wrapped.docs];
  }
  return { snaps: docs, exhaustive: docs.length < want };
}

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/**
 * One transaction for a group of claims of one pool (pairwise distinct claimants and keys).
 * Answers one outcome per request, in order; business refusals are outcomes, not aborts, so the
 * other claims of the group still commit.
 */
export async function claimGroup(
  layout: Layout,
  runner: TxRunner,
  pool: string,
  requests: readonly ClaimRequest[],
  options: ClaimOptions = {},
): Promise<Outcome[]> {
  const refs = layout.pool(pool);
  const spare = options.spare ?? 8;
  const wanted = requests.reduce((sum, r) => sum + r.count, 0);
  let contended = 0;
  let shards = 0;
  let threshold: number | null = null;
  let took = false;
  // free codes found with `fr` whose window has closed: parked between attempts, outside any transaction
  let stale: DocumentSnapshot[] = [];
  let staleAt = 0;
  const outcomes = await runner.run<Outcome[]>(
    async (tx, _n, attempt) => {
      // an attempt that takes no code writes at most a forgotten key's deletion: harmless to repeat
      attempt.resolveWith(async () => 'rerun');
      if (stale.length > 0) {
        const leftOver = stale;
        stale = [];
        await parkStale(leftOver, staleAt);
      }
      const found = await findCandidates(refs, wanted + spare);
      const candidates = shuffled(found.snaps).slice(0, wanted);
      const reads: DocumentReference[] = [refs.pool];
      for (const r of requests) reads.push(refs.holder(r.claimant), ...(r.key ? [refs.key(r.key)] : []));
      const snaps = await tx.getAll(...reads);
      const poolSnap = snaps[0]!;
      if (!poolSnap.exists) throw notFound('pool', pool);
      const poolDoc = poolSnap.data() as PoolDoc;
      shards = poolDoc.shards;
      const now = poolSnap.readTime;
      const window = windowState(poolDoc, now.toDate().toISOString());

      // each request: its holder, its key, and how many codes it may take
      let at = 1;
      const plans = requests.map((r) => {
        const holder = snaps[at++]!.data() as HolderDoc | undefined;
        const keySnap = r.key ? snaps[at++]! : null;
        return {
          r,
          holder,
          keyDoc: keySnap?.exists ? (keySnap.data() as KeyDoc) : null,
          outcome: null as Outcome | null,
          want: 0,
          spentKey: false,
        };
      });
      for (const plan of plans) {
        const { r, holder, keyDoc } = plan;
        const held = holder?.held ?? [];
        if (r.key && keyDoc) {
          try {
            judgeClaimKey(r.key, { claimant: keyDoc.c, count: keyDoc.n }, r.claimant, r.count);
          } catch (error) {
            plan.outcome = { ok: false, error };
            continue;
          }
          const codes = held.filter((e) => e.k === r.key).map((e) => e.c);
          if (codes.length > 0) {
            plan.outcome = {
              ok: true,
              value: {
                pool,
                claimant: r.claimant,
                status: 'claimed',
                codes,
                held: held.map((e) => e.c),
                replayed: true,
              },
            };
            continue;
          }
          plan.spentKey = true; // its codes were all released: the key is forgotten
        }
        if (window !== 'open') {
          // a spent key stays forgotten whatever the claim that found it answers (as on every store)
          if (plan.spentKey) tx.delete(refs.key(r.key!));
          plan.outcome = { ok: false, error: outsideWindow(pool, poolDoc, window) };
          continue;
        }
        const room = roomUnderLimit(poolDoc.limit, held.length);
        if (room === 0) {
          if (plan.spentKey) tx.delete(refs.key(r.key!));
          plan.outcome = {
            ok: true,
            value: {
              pool,
              claimant: r.claimant,
              status: 'already-held',
              codes: [],
              held: held.map((e) => e.c),
              replayed: false,
            },
          };
          continue;
        }
        plan.want = Math.min(r.count, room);
      }
      const need = plans.reduce((sum, p) => sum + p.want, 0);
      const nowMs = now.toMillis();
      staleAt = nowMs;
      let free = claimable(candidates, nowMs, stale);
      if (free.length < need) {
        if (!found.exhaustive) return RETRY; // taken meanwhile (or closed): look again
        // Nearly empty: the free codes as they are now, read under lock. Not when the query found
        // none at all: that strongly consistent read already saw an empty pool, which is then the
        // true answer as of that instant — and a sold-out crowd must not range-lock the codes.
        if (found.snaps.length > 0) {
          const locked = (await tx.get(refs.codes.where('fr', '>=', 0).orderBy('fr').limit(need))).docs;
          free = claimable(locked, nowMs, stale);
          // some were past their window (parked before the next attempt): look again for the rest
          if (free.length < need && locked.length === need) return RETRY;
        }
      }
      threshold = poolDoc.armed ? poolDoc.threshold : null;
      free.sort((a, b) => (a.ref.path < b.ref.path ? -1 : 1)); // one lock order for every commit (see the header)

      // writes: codes, holders, keys, counters
      let takenInAll = 0;
      for (const plan of plans) {
        if (plan.outcome) continue;
        const { r, holder } = plan;
        const mine = free.splice(0, plan.want);
        if (mine.length === 0) {
          if (plan.spentKey) tx.delete(refs.key(r.key!));
          plan.outcome = { ok: false, error: refusal('pool_sold_out', { pool }) };
          continue;
        }
        const taken = mine.map((s) => (s.data() as CodeDoc).code);
        for (const snap of mine) {
          const rec = snap.data() as CodeDoc;
          replaceIfUnchanged(tx, snap, {
            code: rec.code,
            s: 'claimed',
            h: r.claimant,
            k: r.key,
            ca: now,
            ra: null,
            o: null,
            st: attempt.id,
            ...lifeOf(rec, nowMs, false),
          } satisfies CodeDoc);
        }
        if (takenInAll === 0) {
          const witness = mine[0]!;
          attempt.resolveWith(
            witnessResolver({
              ref: witness.ref,
              guard: witness.updateTime!,
              mine: (back) => (back.get('st') === attempt.id ? { committed: true } : null),
              moved: (back) => (back.get('h') === r.claimant ? 'unknown' : 'rerun'),
            }),
          );
        }
        const nextHeld: HeldEntry[] = [...(holder?.held ?? []), ...taken.map((c) => ({ c, k: r.key }))];
        writeHolder(tx, refs.holder(r.claimant), holder, r.claimant, () => nextHeld, 0);
        if (r.key) tx.set(refs.key(r.key), { c: r.claimant, n: r.count } satisfies KeyDoc);
        takenInAll += taken.length;
        plan.outcome = {
          ok: true,
          value: {
            pool,
            claimant: r.claimant,
            status: 'claimed',
            codes: taken,
            held: nextHeld.map((e) => e.c),
            replayed: false,
          },
        };
      }
      bumpCounters(tx, refs, poolDoc.shards, { claimed: takenInAll, free: -takenInAll });
      took = takenInAll > 0;
      return plans.map((p) => p.outcome!);
    },
    () => contended++,
    { optimistic: true },
  );
  if (stale.length > 0) await parkStale(stale, staleAt);
  if (contended >= 3 && shards > 0 && shards < MAX_SHARDS) void addShards(layout, refs.pool, shards).catch(() => {});
  if (took && threshold !== null) await settleLowStock(layout, runner, pool, threshold);
  return outcomes;
}

/**
 * Writes `next` in place of the code as `snap` saw it, only if it has not changed since (else the
 * commit fails its precondition and the group runs again): fields `next` lacks (`fr`, an ended
 * hold) are deleted, as a `set` would.
 */
function replaceIfUnchanged(tx: Transaction, snap: DocumentSnapshot, next: CodeDoc): void {
  const update: Record<string, unknown> = { ...next };
  for (const field of Object.keys(snap.data() ?? {})) if (!(field in next)) update[field] = FieldValue.delete();
  tx.update(snap.ref, update, { lastUpdateTime: snap.updateTime! });
}

/**
 * The snapshots that may be handed out now: free, with a claim position, not held, inside the
 * code's own window (by the transaction's read time). A free code that still has `fr` but is no
 * longer claimable (its window closed since it was placed) goes to `stale`, for the caller to park
 * once its transaction has ended. Parking it inside the claim's transaction made every concurrent
 * claim that found it write it: they deadlocked on the emulator until its lock timeout, over and
 * over (claims gave up after 120 s in the lifecycle storm).
 */
function claimable(snaps: readonly DocumentSnapshot[], nowMs: number, stale: DocumentSnapshot[]): DocumentSnapshot[] {
  const out: DocumentSnapshot[] = [];
  for (const snap of snaps) {
    if (!snap.exists) continue;
    const rec = snap.data() as CodeDoc;
    if (rec.s !== 'free' || typeof rec.fr !== 'number') continue;
    if (claimableFrom(rec, nowMs) === 'now') out.push(snap);
    else if (!stale.some((s) => s.ref.isEqual(snap.ref))) stale.push(snap);
  }
  return out;
}

/**
 * The low-stock alert, settled AFTER a claim committed instead of inside it. Judging the crossing
 * inside the claim meant reading every counter shard there: each claim then held a read lock on
 * all shards while writing one, so concurrent claims deadlocked on each other's shards until the
 * pool crossed (measured on the emulator: 512 claims of 4 instances, 92 s and 110 attempts with a
 * threshold vs 19 s and 36 attempts without). Now a claim first reads the shards without a lock —
 * strongly consistent, so it sees its own commit — and only at or below the threshold runs a small
 * transaction that re-reads pool and shards and records the crossing exactly once (the pool's
 * `armed` flag). If the crossing claim's process dies right after its commit, the next claim of the
 * pool (which still finds the alert armed) records it. A failure here never fails the claim, which
 * has committed.
 */
async function settleLowStock(layout: Layout, runner: TxRunner, pool: string, threshold: number): Promise<void> {
  const refs = layout.pool(pool);
  try {
    if (sumShards((await refs.shards.get()).docs).free > threshold) return;
    await runner.run(async (tx) => {
      const [poolSnap, shards] = await Promise.all([tx.get(refs.pool), tx.get(refs.shards)]);
      if (!poolSnap.exists) return;
      lowStockAfterDrop(tx, layout, refs, poolSnap.data() as PoolDoc, sumShards(shards.docs).free, poolSnap.readTime);
    });
  } catch {
    // settled by the next claim of this pool
  }
}

/**
 * Claims that keep colliding spread their counter writes over more shards (doubling, up to
 * MAX_SHARDS). Shards are only ever added and the stats sum every shard document, so sums stay exact.
 */
async function addShards(layout: Layout, poolRef: DocumentReference, seen: number): Promise<void> {
  await layout.db.runTransaction(
    async (tx: Transaction) => {
      const snap = await tx.get(poolRef);
      if (!snap.exists || Number(snap.get('shards')) !== seen) return;
      tx.update(poolRef, { shards: Math.min(seen * 2, MAX_SHARDS) });
    },
    { maxAttempts: 1 },
  );
}

/** Serves the claims waiting in this process for one pool in groups (see the header). */
export class ClaimGrouper {
  private readonly queue: GroupQueue<ClaimRequest, ClaimManyResult>;

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
    private readonly options: ClaimOptions = {},
  ) {
    this.queue = new GroupQueue(
      {
        max: options.groupMax ?? 25,
        concurrency: options.groupConcurrency ?? 2,
        identify: (request) => request,
        holdBack: true,
      },
      (pool, group) => this.run(pool, group),
    );
  }

  claim(request: ClaimRequest): Promise<ClaimManyResult> {
    return this.queue.add(request.pool, request);
  }

  private async run(pool: string, group: readonly Waiting<ClaimRequest, ClaimManyResult>[]): Promise<void> {
    const outcomes = await claimGroup(
      this.layout,
      this.runner,
      pool,
      group.map((w) => w.request),
      this.options,
    );
    outcomes.forEach((o, i) => (o.ok ? group[i]!.resolve(o.value) : group[i]!.reject(o.error)));
  }
}
