/**
 * Deleting a pool on Firestore, safe against crashes and re-creation. A pool's tree (codes,
 * holders, keys, shards, multi-use codes and their uses) and its outbox events are unbounded, and a
 * transaction writes at most 500 documents, so the deletion cannot be one transaction. Instead:
 *
 * 1. `begin`: ONE transaction deletes the pool document and creates its tombstone
 *    `dibs/{prefix}/deletions/{b64(pool)}` holding the deleter's `owner` token and a lease `exp`
 *    (server ms). From then on every operation answers `not_found`, as they all read the pool
 *    document in their transaction.
 * 2. `sweep`: the documents go in bounded batches, each batch ONE transaction that reads the
 *    tombstone (still this owner's, or it stops), deletes up to BATCH documents found by a query
 *    inside the transaction and renews the lease. The deletes are fenced by the tombstone: a
 *    deleter whose lease was taken over can no longer delete anything.
 * 3. `end`: ONE transaction deletes the tombstone (still this owner's) — and, for a `createPool`
 *    that finished someone else's deletion, creates the new pool document in the same transaction.
 *
 * `createPool` reads the tombstone in the transaction that creates the pool document: a live lease
 * answers a retriable `conflict` ("still being deleted"), an expired one (its deleter died) is taken
 * over — a new owner and lease — and the creator sweeps what is left before it creates. So a pool
 * document and its tombstone never exist together, and a new pool never sees an old pool's documents.
 *
 * `finishExpired` (the `pools.finish-deletions` job) finishes deletions whose deleter died and whose
 * name is never created again: it takes an expired tombstone over exactly as `createPool` does (one
 * transaction, a new owner and lease), sweeps and deletes the tombstone without creating a pool —
 * within a budget of batches per run; a run that spends it gives its lease back, and a later run
 * (or a `createPool`) takes the deletion over and goes on.
 */
import { randomUUID } from 'node:crypto';
import type {
  CollectionReference,
  DocumentReference,
  DocumentSnapshot,
  Query,
  Transaction,
} from '@google-cloud/firestore';
import { DibsError, notFound } from '../../core/errors.js';
import type { Layout, PoolRefs } from './layout.js';
import { FieldValue, type Timestamp } from './records.js';
import type { TxRunner } from './transactions.js';

/** How long a deleter's lease lasts without renewal; every batch (well under a second) renews it. */
export const DELETE_LEASE_MS = 30_000;
/** Documents deleted per transaction (the tombstone's renewal makes it one write more; limit 500). */
export const DELETE_BATCH = 400;

export interface PoolDeletionOptions {
  /** The deleter's lease (default DELETE_LEASE_MS); tests shorten it to simulate a deleter that died. */
  leaseMs?: number;
  /** Documents per batch transaction (default DELETE_BATCH, at most 450). */
  batch?: number;
  /** Called before each batch transaction (tests: a throw here is a crash between two batches). */
  beforeBatch?: (batch: number) => void;
}

export interface TombstoneDoc {
  pool: string;
  /** The current deleter's token: only it may delete the pool's documents. */
  owner: string;
  /** Lease expiry, server ms. */
  exp: number;
  /** When the pool document was deleted. */
  at: Timestamp;
  /** Takeovers of an expired lease so far. */
  n: number;
}

/** The pool's collections that hold plain documents (multi-use codes are swept with their uses first). */
const PLAIN = ['codes', 'holders', 'keys', 'shards'] as const;
const LOST = Symbol('lease-lost');
/** The run's batch budget is spent (finishExpired): stop, the lease is given back. */
const PAUSED = Symbol('budget-spent');
type Outcome = true | typeof LOST | typeof PAUSED;

/** What `finishExpired` may do in one run. */
export interface FinishBudget {
  /** Expired tombstones looked at (taken over, in lease-expiry order). */
  deletions: number;
  /** Batch transactions in all (each deletes up to `batch` documents). */
  batches: number;
}

export interface FinishResult {
  /** Deletions finished: every document gone, tombstone deleted. */
  finished: number;
  /** Deletions taken over but not finished in this run (budget spent; a later run goes on). */
  paused: number;
}

/** The tombstone is there and `owner` still holds its lease: only then may it delete or renew. */
const ownedBy = (snap: DocumentSnapshot, owner: string) => snap.exists && (snap.data() as TombstoneDoc).owner === owner;

export const stillBeingDeleted = (pool: string, retryAfterMs: number) =>
  new DibsError('conflict', `pool '${pool}' is still being deleted; retry in a few seconds`, {
    field: 'name',
    retriable: true,
    details: { pool, retryAfterMs },
  });

export class PoolDeletions {
  readonly leaseMs: number;
  private readonly batch: number;
  private batches = 0;

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
    private readonly options: PoolDeletionOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? DELETE_LEASE_MS;
    this.batch = Math.min(options.batch ?? DELETE_BATCH, 450);
  }

  /** The whole deletion: `begin`, `sweep`, `end`. A deleter whose lease was taken over leaves the rest to its successor. */
  async delete(name: string): Promise<void> {
    const owner = await this.begin(name);
    if (await this.sweep(name, owner)) await this.end(name, owner);
  }

  /** Step 1: the pool document goes and its tombstone appears, in one transaction; the owner token. not_found without a pool. */
  async begin(name: string): Promise<string> {
    const refs = this.layout.pool(name);
    const tombstone = this.layout.deletion(name);
    const owner = randomUUID();
    await this.runner.run(async (tx) => {
      const [pool] = await tx.getAll(refs.pool, tombstone);
      if (!pool!.exists) throw notFound('pool', name);
      tx.delete(refs.pool);
      // (a tombstone cannot exist beside a pool document: createPool removes it in the transaction that creates the pool)
      tx.set(tombstone, {
        pool: name,
        owner,
        exp: pool!.readTime.toMillis() + this.leaseMs,
        at: pool!.readTime,
        n: 0,
      } satisfies TombstoneDoc);
    });
    return owner;
  }

  /**
   * In the transaction of a pool's creation (which read `tombstone`, found, at its read time
   * `nowMs`): a live lease refuses (retriable), an expired one is taken over; the new owner token.
   */
  takeOver(tx: Transaction, name: string, tombstone: TombstoneDoc, nowMs: number): string {
    const owner = this.takeOverIfExpired(tx, name, tombstone, nowMs);
    if (owner === null) throw stillBeingDeleted(name, tombstone.exp - nowMs);
    return owner;
  }

  /** `takeOver`'s rule without the refusal: null while the lease is live. */
  private takeOverIfExpired(tx: Transaction, name: string, tombstone: TombstoneDoc, nowMs: number): string | null {
    if (tombstone.exp > nowMs) return null;
    const owner = randomUUID();
    tx.update(this.layout.deletion(name), { owner, exp: nowMs + this.leaseMs, n: FieldValue.increment(1) });
    return owner;
  }

  /**
   * The background step: deletions whose lease expired by the server's clock (their deleter died),
   * oldest lease first, each taken over in one transaction (a live lease — renewed meanwhile — or a
   * tombstone already gone is left alone), swept and ended without creating a pool; at most
   * `budget.deletions` tombstones and `budget.batches` batch transactions per run.
   */
  async finishExpired(budget: FinishBudget): Promise<FinishResult> {
    const result: FinishResult = { finished: 0, paused: 0 };
    if (budget.deletions <= 0 || budget.batches <= 0) return result;
    // the query's read time is the server's clock; ordered by expiry, the expired tombstones come first
    const page = await this.layout.deletions.orderBy('exp').limit(budget.deletions).get();
    const nowMs = page.readTime.toMillis();
    const left = { batches: budget.batches };
    for (const doc of page.docs) {
      if ((doc.get('exp') as number) > nowMs) break;
      if (left.batches <= 0) break;
      const outcome = await this.finish(doc.get('pool') as string, left);
      if (outcome === 'finished') result.finished++;
      else if (outcome === 'paused') result.paused++;
    }
    return result;
  }

  /**
   * One deletion whose deleter died: the takeover transaction (the tombstone read in it, the same
   * rule as createPool's), the sweep and the tombstone's removal. `skipped` when there was nothing
   * to take over (no tombstone, a live lease) or the lease was taken over in turn.
   */
  async finish(
    name: string,
    budget: { batches: number } = { batches: Infinity },
  ): Promise<'finished' | 'paused' | 'skipped'> {
    const tombstone = this.layout.deletion(name);
    const owner = await this.runner.run(async (tx) => {
      const snap = await tx.get(tombstone);
      if (!snap.exists) return null;
      return this.takeOverIfExpired(tx, name, snap.data() as TombstoneDoc, snap.readTime.toMillis());
    });
    if (owner === null) return 'skipped';
    const outcome = await this.sweepWithin(name, owner, budget);
    if (outcome === PAUSED) {
      await this.release(name, owner);
      return 'paused';
    }
    if (outcome === LOST) return 'skipped';
    return (await this.end(name, owner)) ? 'finished' : 'skipped';
  }

  /** Gives an unfinished deletion's lease back (still this owner's): the next run or createPool takes it over at once. */
  private async release(name: string, owner: string): Promise<void> {
    const tombstone = this.layout.deletion(name);
    await this.runner.run(async (tx) => {
      const snap = await tx.get(tombstone);
      if (!ownedBy(snap, owner)) return;
      tx.update(tombstone, { exp: snap.readTime.toMillis() });
    });
  }

  /**
   * Step 2: everything under the pool document, then the pool's outbox events, in fenced batches.
   * True when all is gone; false when the lease was taken over (the new owner finishes).
   */
  async sweep(name: string, owner: string): Promise<boolean> {
    return (await this.sweepWithin(name, owner, { batches: Infinity })) === true;
  }

  /** `sweep` within a budget of batch transactions (spent as they run): PAUSED when it runs out first. */
  private async sweepWithin(name: string, owner: string, budget: { batches: number }): Promise<Outcome> {
    const refs = this.layout.pool(name);
    // multi-use codes: each one's uses and per-claimant counts, the code itself with its last ones.
    // Bounded, as every loop of the sweep: each round deletes what its page found (or stops: lease
    // lost, budget spent), and nothing new appears under a deleted pool (sweepQuery says why), so
    // the rounds are at most the documents there were over the batch size.
    for (;;) {
      const page = await refs.multis.select().limit(this.batch).get();
      for (const multi of page.docs) {
        const outcome = await this.sweepMulti(name, owner, multi.ref, budget);
        if (outcome !== true) return outcome;
      }
      if (page.size < this.batch) break;
    }
    const known = new Set<string>(['multi', ...PLAIN]);
    const collections: CollectionReference[] = PLAIN.map((c) => refs[c]);
    // any other subcollection (a future one, or one written by hand) goes too, so nothing is inherited
    for (const c of await refs.pool.listCollections()) if (!known.has(c.id)) collections.push(c);
    for (const collection of collections) {
      const outcome = await this.sweepQuery(name, owner, collection, budget);
      if (outcome !== true) return outcome;
    }
    return this.sweepQuery(name, owner, this.layout.events.where('pool', '==', name), budget);
  }

  /** Step 3: the tombstone goes (still this owner's), with `then` in the same transaction. False when the lease was taken over. */
  async end(
    name: string,
    owner: string,
    then?: (tx: Transaction, refs: PoolRefs, now: Timestamp) => void,
  ): Promise<boolean> {
    const refs = this.layout.pool(name);
    const tombstone = this.layout.deletion(name);
    return this.runner.run(async (tx) => {
      const [snap, pool] = await tx.getAll(tombstone, refs.pool);
      if (!ownedBy(snap!, owner)) return false;
      if (pool!.exists) throw new DibsError('internal', `pool '${name}' exists beside its deletion tombstone`);
      tx.delete(tombstone);
      then?.(tx, refs, snap!.readTime);
      return true;
    });
  }

  /** Deletes what `query` finds, a batch per transaction, until it finds nothing. */
  private async sweepQuery(name: string, owner: string, query: Query, budget: { batches: number }): Promise<Outcome> {
    // nothing there: no batch spent (so every batch of a budget deletes something, and runs that
    // start over after a pause make progress). Nothing new appears under a deleted pool: every
    // write to it is in a transaction that reads the pool document.
    if ((await query.select().limit(1).get()).empty) return true;
    for (;;) {
      const done = await this.step(name, owner, budget, async (tx) => {
        const page = await tx.get(query.select().limit(this.batch));
        for (const d of page.docs) tx.delete(d.ref);
        return page.size < this.batch;
      });
      if (done !== false) return done;
    }
  }

  /**
   * A multi-use code: its uses and per-claimant counts, and the code document in the transaction
   * that finds the last of them — a redeem racing the deletion writes a use only together with the
   * code document (guarded by its update time), so no use outlives its code.
   */
  private async sweepMulti(
    name: string,
    owner: string,
    multi: DocumentReference,
    budget: { batches: number },
  ): Promise<Outcome> {
    const half = Math.floor(this.batch / 2);
    // bounded: each round deletes its page, and a use is written only with a guarded update of
    // its code document that counts it (multi-use.ts), so while the code document is there at
    // most the uses the code allows appear, and none once this loop's last round deleted it
    for (;;) {
      const done = await this.step(name, owner, budget, async (tx) => {
        const [uses, by] = await Promise.all([
          tx.get(multi.collection('uses').select().limit(half)),
          tx.get(multi.collection('by').select().limit(half)),
        ]);
        for (const d of [...uses.docs, ...by.docs]) tx.delete(d.ref);
        const last = uses.size < half && by.size < half;
        if (last) tx.delete(multi);
        return last;
      });
      if (done !== false) return done;
    }
  }

  /** One batch (one of the budget's): the tombstone must still be this owner's; the lease is renewed with the batch's deletes. */
  private async step(
    name: string,
    owner: string,
    budget: { batches: number },
    work: (tx: Transaction) => Promise<boolean>,
  ): Promise<boolean | typeof LOST | typeof PAUSED> {
    const tombstone = this.layout.deletion(name);
    if (budget.batches <= 0) return PAUSED;
    budget.batches--;
    this.options.beforeBatch?.(++this.batches);
    return this.runner.run(async (tx) => {
      const snap = await tx.get(tombstone);
      if (!ownedBy(snap, owner)) return LOST;
      const done = await work(tx);
      tx.update(tombstone, { exp: snap.readTime.toMillis() + this.leaseMs });
      return done;
    });
  }
}
