/**
 * One sale step inside ONE Firestore transaction: the sale document is read first (its read time
 * is the step's clock — the server's, never the client's), then everything else the step needs in
 * as few rounds as possible, then every write at once (Firestore wants all reads before writes).
 *
 * Lazy expiry: a sale records `ne`, a lower bound of its active holds' expiries. When the step's
 * clock has reached it, the step queries the sale's stale holds (`ae <= now`, composite index
 * sale + ae) and expires them in the same transaction — hold expired, customer's pointer cleared,
 * `held` lowered, one `hold.expired` event each — so an expired hold never counts against a buyer.
 *
 * Several requests can share one step (sale-queue.ts): every document a request reads goes through
 * the step's cache (customers, keys, holds, orders), so a request sees what the requests before
 * it in the same transaction changed, exactly as if each had run alone in that order.
 *
 * Business refusals found after the reads are returned as outcomes (stepRun): the step still
 * commits the expiries it made, as Redis' scripts and the SQL steps do, and the caller throws.
 *
 * A commit whose answer was lost (transactions.ts) is settled on the sale document, which every
 * step writes: each write counts the steps (`sq`) and keeps the ids of the last STEP_RING of them
 * (`sts`). Read back, the step's id is there: it committed, and its answers stand. The document is
 * as the step read it: a fence (a step of its own, conditional on that update time) voids the
 * attempt, which then runs again. It moved without the id while the ring still covers the step
 * after the one read (`sq` at most STEP_RING further): another step took that place, so this one
 * can never commit and runs again. Otherwise (more than STEP_RING steps since, or a sale document
 * written afresh, without the count) the outcome is unknown: `unavailable`.
 */
import {
  FieldValue,
  type DocumentReference,
  type DocumentSnapshot,
  type Query,
  type QuerySnapshot,
  type Transaction,
} from '@google-cloud/firestore';
import { isDibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { Layout, SaleRefs } from './layout.js';
import { writeEvent, type Timestamp } from './records.js';
import {
  emptyCustomer,
  isoMs,
  type CustomerDoc,
  type HoldDoc,
  type OrderDoc,
  type SaleDoc,
  type SaleKeyDoc,
} from './sale-records.js';
import { stillAsRead, witnessResolver, type Attempt, type TxRunner } from './transactions.js';

/** Step ids a sale document keeps (see the header). */
export const STEP_RING = 32;

/** Most stale holds one step expires (the rest: the next step, or the sweep). */
export const STALE_LIMIT = 200;

export type StepMode = 'tx' | 'optimistic';

interface Event {
  type: string;
  key: string;
  payload: Record<string, unknown>;
}

export class SaleStep {
  readonly refs: SaleRefs;
  readonly now: number;
  readonly nowIso: string;
  /** Holds this step expired. */
  readonly expired: HoldDoc[] = [];
  prepared = false;
  private saleDirty = false;
  private readonly customers = new Map<string, { doc: CustomerDoc; dirty: boolean }>();
  private readonly holds = new Map<string, { doc: HoldDoc; dirty: boolean }>();
  private readonly keys = new Map<string, SaleKeyDoc | null>();
  private readonly orders = new Map<string, OrderDoc>();
  private readonly writes: [DocumentReference, Record<string, unknown>][] = [];
  private readonly events: Event[] = [];

  private constructor(
    readonly tx: Transaction,
    readonly layout: Layout,
    readonly sale: SaleDoc,
    /** The sale document as read: its update time guards an optimistic step's commit. */
    readonly saleSnap: DocumentSnapshot,
    readonly mode: StepMode,
  ) {
    this.refs = layout.sale(sale.id);
    this.steps = sale.sq ?? 0;
    this.ring = [...(sale.sts ?? [])];
    this.readTime = saleSnap.readTime;
    this.now = this.readTime.toMillis();
    this.nowIso = isoMs(this.now);
  }

  readonly readTime: Timestamp;
  /** The step count and ring as read (see the header). */
  private readonly steps: number;
  private readonly ring: string[];

  /**
   * Reads the sale (`not_found` if there is none). `tx`: every read is a transactional read
   * (locks until commit). `optimistic`: reads are plain snapshot reads made after the sale's, and
   * the commit carries the precondition that the sale document is still the one read — every
   * change to a sale's state writes its sale document, so nothing the step read can have moved
   * (run it with TxRunner's `optimistic` option: a failed precondition is retried).
   */
  static async open(tx: Transaction, layout: Layout, id: string, mode: StepMode = 'tx'): Promise<SaleStep> {
    const ref = layout.sale(id).sale;
    const snap = mode === 'tx' ? await tx.get(ref) : await ref.get();
    if (!snap.exists) throw notFound('sale', id);
    return new SaleStep(tx, layout, snap.data() as SaleDoc, snap, mode);
  }

  private getAll(refs: DocumentReference[]): Promise<DocumentSnapshot[]> {
    if (refs.length === 0) return Promise.resolve([]);
    return this.mode === 'tx' ? this.tx.getAll(...refs) : this.layout.db.getAll(...refs);
  }

  private get(ref: DocumentReference): Promise<DocumentSnapshot> {
    return this.mode === 'tx' ? this.tx.get(ref) : ref.get();
  }

  /** A query read (public: request bodies may need one, e.g. the wishlist of an announcement). */
  query(query: Query): Promise<QuerySnapshot> {
    return this.mode === 'tx' ? this.tx.get(query) : query.get();
  }

  /** A hold the step read itself, so the stale pass works on the same record. */
  adoptHold(doc: HoldDoc): HoldDoc {
    const known = this.holds.get(doc.id);
    if (known) return known.doc;
    this.holds.set(doc.id, { doc, dirty: false });
    return doc;
  }

  /** Reads the given customers and `extra` documents and runs the stale pass; returns the `extra` snapshots. */
  async prepare(
    customers: readonly string[],
    extra: readonly DocumentReference[] = [],
    staleLimit = STALE_LIMIT,
  ): Promise<DocumentSnapshot[]> {
    return this.prefetch({ customers, extra, staleLimit });
  }

  /**
   * Reads in one round the customers, idempotency keys, holds and `extra` documents given and,
   * when holds may be stale, the stale holds (then their customers); expires those holds (in
   * memory, written at commit). Returns the `extra` snapshots.
   */
  async prefetch(want: {
    customers?: readonly string[];
    keys?: readonly string[];
    holds?: readonly string[];
    extra?: readonly DocumentReference[];
    staleLimit?: number;
  }): Promise<DocumentSnapshot[]> {
    const staleLimit = want.staleLimit ?? STALE_LIMIT;
    const customers = [...new Set(want.customers ?? [])].filter((c) => !this.customers.has(c));
    const keys = [...new Set(want.keys ?? [])].filter((k) => !this.keys.has(k));
    const holds = [...new Set(want.holds ?? [])].filter((h) => !this.holds.has(h));
    const extra = want.extra ?? [];
    const stale = this.sale.ne !== undefined && this.sale.ne <= this.now;
    const byId = this.layout.holds.where('sale', '==', this.sale.id);
    const refs = [
      ...customers.map((c) => this.refs.customer(c)),
      ...keys.map((k) => this.refs.key(k)),
      ...holds.map((h) => this.layout.hold(h)),
      ...extra,
    ];
    const [snaps, staleSnap, nextSnap] = await Promise.all([
      this.getAll(refs),
      stale ? this.query(byId.where('ae', '<=', this.now).orderBy('ae').limit(staleLimit)) : null,
      stale ? this.query(byId.where('ae', '>', this.now).orderBy('ae').limit(1)) : null,
    ]);
    let at = 0;
    for (const c of customers)
      this.customers.set(c, {
        doc: (snaps[at++]!.data() as CustomerDoc | undefined) ?? emptyCustomer(c),
        dirty: false,
      });
    for (const k of keys) this.keys.set(k, (snaps[at++]!.data() as SaleKeyDoc | undefined) ?? null);
    for (const _ of holds) {
      const doc = snaps[at++]!.data() as HoldDoc | undefined;
      if (doc) this.adoptHold(doc);
    }
    if (staleSnap && nextSnap) {
      const staleHolds = staleSnap.docs
        .map((d) => this.adoptHold(d.data() as HoldDoc))
        .filter((h) => h.s === 'active' && h.e <= this.now);
      await this.loadCustomers(staleHolds.map((h) => h.c));
      for (const hold of staleHolds) this.expire(hold);
      const full = staleSnap.size >= staleLimit;
      const next = nextSnap.docs[0]?.get('ae') as number | undefined;
      // More stale holds than one step takes: stay due, so the next step (or the sweep) goes on.
      this.sale.ne = full ? this.now : next;
      if (this.sale.ne === undefined) delete this.sale.ne;
      this.saleDirty = true;
    }
    this.prepared = true;
    return snaps.slice(at);
  }

  /** Reads the customers not read yet (no write has been issued: every write waits for commit). */
  async loadCustomers(customers: readonly string[]): Promise<void> {
    const missing = [...new Set(customers)].filter((c) => !this.customers.has(c));
    if (missing.length === 0) return;
    const snaps = await this.getAll(missing.map((c) => this.refs.customer(c)));
    missing.forEach((c, i) =>
      this.customers.set(c, { doc: (snaps[i]!.data() as CustomerDoc | undefined) ?? emptyCustomer(c), dirty: false }),
    );
  }

  /** An idempotency key of the sale as this step sees it (null: unused). */
  async key(key: string): Promise<SaleKeyDoc | null> {
    if (!this.keys.has(key))
      this.keys.set(key, ((await this.get(this.refs.key(key))).data() as SaleKeyDoc | undefined) ?? null);
    return this.keys.get(key)!;
  }

  putKey(key: string, doc: SaleKeyDoc): void {
    this.keys.set(key, doc);
    this.set(this.refs.key(key), { ...doc });
  }

  /** A hold as this step sees it (undefined: no such hold). */
  async hold(id: string): Promise<HoldDoc | undefined> {
    const known = this.holds.get(id);
    if (known) return known.doc;
    const doc = (await this.get(this.layout.hold(id))).data() as HoldDoc | undefined;
    return doc ? this.adoptHold(doc) : undefined;
  }

  /** An order of the sale as this step sees it. */
  async order(id: string): Promise<OrderDoc> {
    const known = this.orders.get(id);
    if (known) return known;
    const doc = (await this.get(this.refs.order(id))).data() as OrderDoc | undefined;
    if (!doc) throw new Error(`order '${id}' of sale '${this.sale.id}' is missing`);
    this.orders.set(id, doc);
    return doc;
  }

  customer(c: string): CustomerDoc {
    const entry = this.customers.get(c);
    if (!entry) throw new Error(`customer '${c}' was not read by this step`);
    return entry.doc;
  }

  /** Units the customer has in the sale: ordered + their active, unexpired hold; and that hold's units. */
  unitsOf(c: string): { units: number; own: number } {
    const doc = this.customer(c);
    const own = doc.h !== null && doc.he > this.now ? doc.hq : 0;
    return { units: doc.o + own, own };
  }

  touchCustomer(c: string): CustomerDoc {
    const entry = this.customers.get(c)!;
    entry.dirty = true;
    return entry.doc;
  }

  touchSale(): SaleDoc {
    this.saleDirty = true;
    return this.sale;
  }

  putHold(doc: HoldDoc): void {
    this.holds.set(doc.id, { doc, dirty: true });
  }

  /** An active hold leaves the active state (confirmed, cancelled, expired): its index field and the customer's pointer. */
  dropActive(hold: HoldDoc, status: HoldDoc['s']): void {
    hold.s = status;
    delete hold.ae;
    this.putHold(hold);
    const entry = this.customers.get(hold.c);
    if (entry && entry.doc.h === hold.id) {
      entry.doc.h = null;
      entry.doc.hq = 0;
      entry.doc.he = 0;
      entry.dirty = true;
    }
    this.touchSale().held -= hold.q;
  }

  /** Expires an active hold whose time has come (recorded once: it leaves the active state). */
  expire(hold: HoldDoc): void {
    this.dropActive(hold, 'expired');
    this.expired.push(hold);
    this.event('hold.expired', `hold.expired:${hold.id}`, {
      sale: hold.sale,
      hold: hold.id,
      customer: hold.c,
      quantity: hold.q,
      expiresAt: isoMs(hold.e),
    });
  }

  event(type: string, key: string, payload: Record<string, unknown>): void {
    this.events.push({ type, key, payload });
  }

  set(ref: DocumentReference, data: Record<string, unknown>): void {
    this.writes.push([ref, data]);
  }

  /** A new order (sold, the customer's units, sale.sold_out once when the cap is reached). */
  insertOrder(c: string, q: number, holdId: string | null): OrderDoc {
    const order: OrderDoc = { id: newId('ord'), c, q, h: holdId, at: this.nowIso };
    this.set(this.refs.order(order.id), { ...order });
    this.orders.set(order.id, order);
    this.touchCustomer(c).o += q;
    const sale = this.touchSale();
    sale.sold += q;
    if (sale.cap !== null && sale.sold >= sale.cap && !sale.soldout) {
      sale.soldout = true;
      this.event('sale.sold_out', `sale.sold_out:${sale.id}`, {
        sale: sale.id,
        sku: sale.sku,
        sold: sale.sold,
        cap: sale.cap,
      });
    }
    return order;
  }

  /** Whether the step changed anything (its commit then writes the sale document, guarded). */
  private writesAny(): boolean {
    return (
      this.saleDirty ||
      this.writes.length > 0 ||
      this.events.length > 0 ||
      [...this.customers.values(), ...this.holds.values()].some((e) => e.dirty)
    );
  }

  /**
   * Whether the refusals this step judged stand, the carts' rule (carts.ts). An optimistic step
   * reads the sale document first and everything else after it, so its reads are one state only
   * if nothing that touches the sale committed in between; a step that writes has its commit
   * guarded by the sale document, which checks exactly that. A step that writes nothing commits
   * nothing that could check it: its sale document is read once more, and if it moved — every
   * change to a sale's customers, holds, keys, tickets or room writes it — the refusals may rest
   * on two states mixed (e.g. a customer's units read after a concurrent order, judged against a
   * per-customer limit read before a concurrent raise: neither state refused) and the step must
   * judge again. A locking step ('tx') reads one state: its refusals stand.
   */
  async refusalsStand(): Promise<boolean> {
    if (this.mode === 'tx' || this.writesAny()) return true;
    return stillAsRead([this.saleSnap]);
  }

  /** This step's count and ring, with `id` as its newest entry. */
  private counted(id: string): { sq: number; sts: string[] } {
    return { sq: this.steps + 1, sts: [...this.ring, id].slice(-STEP_RING) };
  }

  /**
   * Writes everything the step changed, counted on the sale document under `attempt`'s id, and
   * tells `attempt` how to settle a commit whose answer is lost (see the header).
   */
  commit(attempt: Attempt<unknown>): void {
    if (!this.writesAny()) {
      attempt.resolveWith(async () => 'rerun'); // nothing written
      return;
    }
    Object.assign(this.sale, this.counted(attempt.id));
    attempt.resolveWith(
      witnessResolver({
        ref: this.refs.sale,
        guard: this.saleSnap.updateTime!,
        mine: (back) => ((back.get('sts') as string[] | undefined)?.includes(attempt.id) ? { committed: true } : null),
        moved: (back) => {
          const sq = Number(back.get('sq') ?? 0);
          return sq > this.steps && sq - this.steps <= STEP_RING ? 'rerun' : 'unknown';
        },
        fence: (fenceId) => this.counted(fenceId),
      }),
    );
    if (this.mode === 'tx') this.tx.set(this.refs.sale, { ...this.sale });
    else {
      // the guard: every write of the step commits only if the sale is still the one read
      const { ad, ed, ne, ...rest } = this.sale;
      const optional = { ad: ad ?? FieldValue.delete(), ed: ed ?? FieldValue.delete(), ne: ne ?? FieldValue.delete() };
      this.tx.update(this.refs.sale, { ...rest, ...optional }, { lastUpdateTime: this.saleSnap.updateTime! });
    }
    for (const [c, entry] of this.customers) if (entry.dirty) this.tx.set(this.refs.customer(c), { ...entry.doc });
    for (const [id, entry] of this.holds) if (entry.dirty) this.tx.set(this.layout.hold(id), { ...entry.doc });
    for (const [ref, data] of this.writes) this.tx.set(ref, data);
    this.events.forEach((e, seq) =>
      writeEvent(
        this.tx,
        this.layout,
        { sale: this.sale.id, src: 'sale' },
        this.readTime,
        e.type,
        e.key,
        e.payload,
        seq,
      ),
    );
  }
}

/**
 * Runs a sale step in one transaction (TxRunner: contention retries the whole body). A DibsError
 * thrown after the step's reads is a refusal: what the step expired is still committed, then
 * the error is thrown. `body` must decide every refusal before it changes anything else.
 */
export async function stepRun<T>(
  runner: TxRunner,
  body: (tx: Transaction, box: { step?: SaleStep }) => Promise<T>,
  mode: StepMode = 'tx',
): Promise<T> {
  const outcome = await runner.run<{ ok: true; value: T } | { ok: false; error: unknown }>(
    async (tx, _n, attempt) => {
      const box: { step?: SaleStep } = {};
      try {
        const value = await body(tx, box);
        box.step?.commit(attempt);
        return { ok: true as const, value };
      } catch (error) {
        if (!isDibsError(error) || !box.step?.prepared) throw error;
        box.step.commit(attempt);
        return { ok: false as const, error };
      }
    },
    undefined,
    { optimistic: mode === 'optimistic' },
  );
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
