/**
 * Flash sales on Firestore. Every step — define, buy, reserve, confirm, cancel, expire, announce,
 * end — is ONE transaction (sale-step.ts) on the server's clock, judging every rule (window, cap,
 * per-customer limit, idempotency, hold expiry) with state read in that transaction:
 *
 * - the sale document holds `sold` and `held`; a buy or reservation writes both in the same
 *   transaction as the order or hold, so `sold + held ≤ cap` cannot be broken by concurrency
 *   (Firestore serialises conflicting transactions; a loser retries from its reads);
 * - the per-customer limit is the customer document (`o` ordered units + the active hold), read
 *   and written in the same transaction as the order;
 * - idempotency keys are documents of the sale, read and written in the same transaction.
 *
 * Hot spot: only steps that would change the sale take its lock. A buy or reservation first
 * judges itself on a consistent read-only snapshot (no locks): a refusal there (not live, sold
 * out, over the limit) is a true answer as of that snapshot and is returned at once, so the
 * thousands of refusals of a sold-out sale never queue on the sale document. Only a request
 * the snapshot would accept (or a replayed key) runs the transaction, which judges it again.
 *
 * Definitions: the SKU document lists the SKU's non-cancelled sales (the overlap preflight);
 * creating, updating or cancelling a sale reads and writes it in the same transaction.
 */
import { refusal } from '../../core/refusals.js';
import {
  FieldPath,
  type CollectionReference,
  type Query,
  type QueryDocumentSnapshot,
  type Transaction,
} from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import type { SaleBackend, SaleViolation } from '../../core/sales/backend.js';
import { assertPreflight, CHANNELS } from '../../core/sales/rules.js';
import type {
  ActivationResult,
  BuyResult,
  Cart,
  CartOrders,
  CartResult,
  CartSpec,
  Hold,
  HoldResult,
  Sale,
  SalePatch,
  SaleSpec,
  WishlistChannels,
  WishlistEntry,
} from '../../core/sales/types.js';
import type { OutboxEvent, Page } from '../../core/types.js';
import type { Layout } from './layout.js';
import { eventPage, type Timestamp } from './records.js';
import { auditSale } from './sale-audit.js';
import {
  emptyCustomer,
  isoMs,
  saleState,
  toHold,
  toOrder,
  toSale,
  toWish,
  type CustomerDoc,
  type HoldDoc,
  type OrderDoc,
  type SaleDoc,
  type SaleKeyDoc,
  type SkuDoc,
  type WishDoc,
} from './sale-records.js';
import { FirestoreCarts } from './carts.js';
import { buyIn, cancelIn, cancelledHold, confirmedHold, confirmIn, holdExpired, reserveIn } from './sale-ops.js';
import { listActiveHolds } from './sale-holds.js';
import { SaleQueue } from './sale-queue.js';
import { SaleTurns } from './sale-turns.js';
import { judgeBuy, judgeReserve } from '../../core/model/sales.js';
import { SaleStep, stepRun, STALE_LIMIT } from './sale-step.js';
import type { TxRunner } from './transactions.js';

/** Due sales one job run looks at per page. */
const JOB_PAGE = 100;

export class FirestoreSales implements SaleBackend {
  private readonly queue: SaleQueue;

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {
    // buys and carts of this process take turns on each sale (sale-turns.ts)
    const turns = new SaleTurns();
    this.queue = new SaleQueue(layout, runner, turns);
    this.carts = new FirestoreCarts(layout, runner, turns);
  }

  private readonly carts: FirestoreCarts;

  holdCart(spec: CartSpec): Promise<CartResult> {
    return this.carts.holdCart(spec);
  }

  confirmCart(cartId: string): Promise<CartOrders> {
    return this.carts.confirmCart(cartId);
  }

  cancelCart(cartId: string): Promise<Cart> {
    return this.carts.cancelCart(cartId);
  }

  getCart(cartId: string): Promise<Cart> {
    return this.carts.getCart(cartId);
  }

  // --- definitions ---

  async createSale(spec: SaleSpec): Promise<Sale> {
    return this.runner.run(async (tx) => {
      const refs = this.layout.sale(spec.id);
      const [saleSnap, skuSnap] = await tx.getAll(refs.sale, this.layout.sku(spec.sku));
      if (saleSnap!.exists) throw alreadyExists(spec.id);
      const now = isoMs(saleSnap!.readTime.toMillis());
      const sku = skuSnap!.data() as SkuDoc | undefined;
      assertPreflight(spec, { now, sameSku: sameSku(sku, spec.id), committed: 0 });
      const doc: SaleDoc = {
        id: spec.id,
        sku: spec.sku,
        starts: spec.startsAt,
        ends: spec.endsAt,
        cap: spec.cap,
        limit: spec.perCustomerLimit,
        meta: spec.metadata,
        cancelled: null,
        created: now,
        sold: 0,
        held: 0,
        announced: null,
        ended: null,
        soldout: false,
        ad: Date.parse(spec.startsAt),
        ed: Date.parse(spec.endsAt),
      };
      tx.set(refs.sale, { ...doc });
      tx.set(this.layout.sku(spec.sku), {
        sku: spec.sku,
        sales: { ...(sku?.sales ?? {}), [spec.id]: { s: spec.startsAt, e: spec.endsAt } },
      } satisfies SkuDoc);
      return toSale(doc, now, 0);
    });
  }

  async getSale(id: string): Promise<Sale> {
    return this.runner.read(async (tx) => {
      const snap = await tx.get(this.layout.sale(id).sale);
      if (!snap.exists) throw notFound('sale', id);
      const doc = snap.data() as SaleDoc;
      const now = snap.readTime.toMillis();
      return toSale(doc, isoMs(now), doc.held - (await this.staleUnits(tx, doc, now)));
    });
  }

  /** Units of active holds already expired but not marked yet (read-only steps). */
  private async staleUnits(tx: Transaction, doc: SaleDoc, now: number): Promise<number> {
    if (doc.ne === undefined || doc.ne > now) return 0;
    const stale = await tx.get(this.layout.holds.where('sale', '==', doc.id).where('ae', '<=', now));
    return stale.docs.reduce((sum, d) => sum + (d.get('q') as number), 0);
  }

  async listSales({ limit, after, sku }: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>> {
    return this.runner.read(async (tx) => {
      let docs: SaleDoc[];
      let readTime: Timestamp;
      if (sku) {
        // a SKU has few sales: all of them, ordered here (no composite index)
        const snap = await tx.get(this.layout.sales.where('sku', '==', sku));
        readTime = snap.readTime;
        docs = snap.docs
          .map((d) => d.data() as SaleDoc)
          .filter((d) => after === undefined || d.id > after)
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .slice(0, limit + 1);
      } else {
        let query: Query = this.layout.sales.orderBy(FieldPath.documentId()).limit(limit + 1);
        if (after !== undefined) query = query.startAfter(after);
        const snap = await tx.get(query);
        readTime = snap.readTime;
        docs = snap.docs.map((d) => d.data() as SaleDoc);
      }
      const now = readTime.toMillis();
      const items: Sale[] = [];
      for (const doc of docs.slice(0, limit))
        items.push(toSale(doc, isoMs(now), doc.held - (await this.staleUnits(tx, doc, now))));
      return { items, nextCursor: docs.length > limit ? items[items.length - 1]!.id : null };
    });
  }

  async updateSale(id: string, patch: SalePatch): Promise<Sale> {
    return stepRun(this.runner, async (tx, box) => {
      const step = (box.step = await SaleStep.open(tx, this.layout, id));
      const sale = step.sale;
      if (sale.cancelled !== null) throw cancelledSale(id);
      const [skuSnap] = await step.prepare([], [this.layout.sku(sale.sku)]);
      const sku = skuSnap!.data() as SkuDoc | undefined;
      const spec: SaleSpec = {
        id,
        sku: sale.sku,
        startsAt: patch.startsAt ?? sale.starts,
        endsAt: patch.endsAt ?? sale.ends,
        cap: patch.cap === undefined ? sale.cap : patch.cap,
        perCustomerLimit: patch.perCustomerLimit ?? sale.limit,
        metadata: patch.metadata ?? sale.meta,
      };
      assertPreflight(spec, {
        now: step.nowIso,
        sameSku: sameSku(sku, id),
        committed: sale.sold + sale.held,
        existing: { startsAt: sale.starts },
      });
      if (spec.perCustomerLimit < sale.limit) {
        const units = await mostUnits(step, this.layout.sale(id).customers, spec.perCustomerLimit);
        if (units > spec.perCustomerLimit)
          throw refusal('sale_limit_below_units', { sale: id, requested: spec.perCustomerLimit, units });
      }
      const doc = step.touchSale();
      Object.assign(doc, {
        starts: spec.startsAt,
        ends: spec.endsAt,
        cap: spec.cap,
        limit: spec.perCustomerLimit,
        meta: spec.metadata,
      });
      if (doc.announced === null) doc.ad = Date.parse(spec.startsAt);
      if (doc.ended === null) doc.ed = Date.parse(spec.endsAt);
      // a cap lowered to exactly what is sold sells the sale out in this step, as a last order would
      if (spec.cap !== null && spec.cap > 0 && doc.sold >= spec.cap && !doc.soldout) {
        doc.soldout = true;
        step.event('sale.sold_out', `sale.sold_out:${id}`, { sale: id, sku: doc.sku, sold: doc.sold, cap: spec.cap });
      }
      step.set(this.layout.sku(sale.sku), {
        sku: sale.sku,
        sales: { ...(sku?.sales ?? {}), [id]: { s: spec.startsAt, e: spec.endsAt } },
      } satisfies SkuDoc);
      return toSale(doc, step.nowIso, doc.held);
    });
  }

  async cancelSale(id: string): Promise<Sale> {
    return stepRun(this.runner, async (tx, box) => {
      const step = (box.step = await SaleStep.open(tx, this.layout, id));
      if (step.sale.cancelled !== null) {
        await step.prepare([]);
        return toSale(step.sale, step.nowIso, step.sale.held);
      }
      // every active hold (stale or not) is cancelled, with its customer's pointer
      const active = (await tx.get(this.layout.holds.where('sale', '==', id).where('ae', '>=', 0))).docs.map((d) =>
        step.adoptHold(d.data() as HoldDoc),
      );
      const [skuSnap] = await step.prepare([...new Set(active.map((h) => h.c))], [this.layout.sku(step.sale.sku)]);
      for (const hold of active) if (hold.s === 'active') step.dropActive(hold, 'cancelled');
      const sale = step.touchSale();
      sale.cancelled = step.nowIso;
      sale.held = 0;
      delete sale.ne;
      delete sale.ad;
      const sku = skuSnap!.data() as SkuDoc | undefined;
      if (sku) {
        const { [id]: _gone, ...rest } = sku.sales;
        step.set(this.layout.sku(sale.sku), { sku: sale.sku, sales: rest } satisfies SkuDoc);
      }
      return toSale(sale, step.nowIso, 0);
    });
  }

  // --- buying and holds ---

  async buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    await this.refusedOnSnapshot(saleId, customer, quantity, key, 'buy');
    return this.queue.submit(saleId, {
      customers: [customer],
      keys: key !== null ? [key] : [],
      run: (step) => buyIn(step, customer, quantity, key),
    });
  }

  async reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
  ): Promise<HoldResult> {
    await this.refusedOnSnapshot(saleId, customer, quantity, key, 'reserve');
    return this.queue.submit(saleId, {
      customers: [customer],
      keys: key !== null ? [key] : [],
      run: (step) => reserveIn(step, customer, quantity, ttlMs, key),
    });
  }

  /**
   * Judges a buy or reservation on a consistent read-only snapshot (no locks). Throws the refusal
   * the step would give at that instant; returns when the step must decide (it would be accepted,
   * or the key was used before). While holds may have expired unseen, stock is judged as if no
   * unit were held, so a stock refusal here is still certain.
   */
  private async refusedOnSnapshot(
    saleId: string,
    customer: string,
    quantity: number,
    key: string | null,
    kind: SaleKeyDoc['k'],
  ): Promise<void> {
    const refusal = await this.runner.read(async (tx) => {
      const refs = this.layout.sale(saleId);
      const snaps = await tx.getAll(refs.sale, refs.customer(customer), ...(key !== null ? [refs.key(key)] : []));
      const [saleSnap, custSnap, keySnap] = snaps;
      if (!saleSnap!.exists) return notFound('sale', saleId);
      if (keySnap?.exists) return null;
      const now = saleSnap!.readTime.toMillis();
      // holds may have expired since the sale was written: `held` is an upper bound, so only a
      // refusal that holds with no holds at all (held = 0) is certain here
      const stored = saleSnap!.data() as SaleDoc;
      const sale = stored.ne !== undefined && stored.ne <= now ? { ...stored, held: 0 } : stored;
      const cust = (custSnap!.data() as CustomerDoc | undefined) ?? emptyCustomer(customer);
      const own = cust.h !== null && cust.he > now ? cust.hq : 0;
      try {
        if (kind === 'buy') judgeBuy(saleState(sale), isoMs(now), customer, cust.o + own, quantity);
        else judgeReserve(saleState(sale), isoMs(now), customer, cust.o + own, own, quantity);
        return null;
      } catch (error) {
        return error;
      }
    });
    if (refusal) throw refusal;
  }

  /**
   * A hold's sale never changes, and confirmed, cancelled and expired are final states: the hold
   * is read first (no transaction); a final one is answered from that read, an active one is
   * confirmed or cancelled in a step of its sale.
   */
  private async holdOf(holdId: string): Promise<HoldDoc> {
    const snap = await this.layout.hold(holdId).get();
    if (!snap.exists) throw notFound('hold', holdId);
    return snap.data() as HoldDoc;
  }

  async confirmHold(holdId: string): Promise<BuyResult> {
    const hold = await this.holdOf(holdId);
    if (hold.s === 'confirmed') {
      const order = (await this.layout.sale(hold.sale).order(hold.o!).get()).data() as OrderDoc;
      return { order: toOrder(hold.sale, order), replayed: true };
    }
    if (hold.s === 'cancelled') throw cancelledHold(holdId);
    if (hold.cart) throw refusal('hold_in_cart', { hold: holdId, cart: hold.cart });
    if (hold.s === 'expired') throw holdExpired(hold);
    return this.queue.submit(hold.sale, {
      customers: [hold.c],
      holds: [holdId],
      run: (step) => confirmIn(step, holdId),
    });
  }

  async cancelHold(holdId: string): Promise<Hold> {
    const hold = await this.holdOf(holdId);
    if (hold.s === 'confirmed') throw confirmedHold(hold);
    if (hold.cart) throw refusal('hold_in_cart', { hold: holdId, cart: hold.cart });
    if (hold.s !== 'active') return toHold(hold);
    return this.queue.submit(hold.sale, {
      customers: [hold.c],
      holds: [holdId],
      run: (step) => cancelIn(step, holdId),
    });
  }

  async getHold(holdId: string): Promise<Hold> {
    const snap = await this.layout.hold(holdId).get();
    if (!snap.exists) throw notFound('hold', holdId);
    const hold = snap.data() as HoldDoc;
    // expired holds stop counting at once, even before a step marks them
    return toHold(hold.s === 'active' && hold.e <= snap.readTime.toMillis() ? { ...hold, s: 'expired' } : hold);
  }

  listHolds(saleId: string, options: { limit: number; customer?: string }): Promise<Hold[]> {
    return this.runner.read((tx) => listActiveHolds(tx, this.layout, saleId, options));
  }

  // --- jobs ---

  /**
   * Sales whose job field (`ad`, `ed`, `ne`) is due by the server's clock, soonest first: a query
   * ordered by the field, filtered by the query's own read time.
   */
  private async *dueSales(field: 'ad' | 'ed' | 'ne'): AsyncIterable<string> {
    let after: QueryDocumentSnapshot | null = null;
    // bounded: a forward pass over the sales in the field's order; `ad` and `ed` are deleted by
    // the step that handles them (a sale comes once), and the `ne` pass stops at its `limit`
    for (;;) {
      let query = this.layout.sales.orderBy(field).limit(JOB_PAGE);
      if (after !== null) query = query.startAfter(after);
      const page = await query.get();
      const now = page.readTime.toMillis();
      const due = page.docs.filter((d) => (d.get(field) as number) <= now);
      for (const d of due) yield d.id;
      if (due.length < JOB_PAGE) return;
      after = due[due.length - 1]!;
    }
  }

  async expireHolds(limit: number): Promise<number> {
    let expired = 0;
    for await (const id of this.dueSales('ne')) {
      if (expired >= limit) break;
      expired += await stepRun(
        this.runner,
        async (tx, box) => {
          const step = (box.step = await SaleStep.open(tx, this.layout, id, 'optimistic'));
          await step.prepare([], [], Math.min(STALE_LIMIT, limit - expired));
          return step.expired.length;
        },
        'optimistic',
      );
    }
    return expired;
  }

  async activateDue(): Promise<ActivationResult> {
    const result: ActivationResult = { sales: [], notifications: 0 };
    for await (const id of this.dueSales('ad')) {
      const sent = await stepRun(
        this.runner,
        async (tx, box) => {
          const step = (box.step = await SaleStep.open(tx, this.layout, id, 'optimistic'));
          const sale = step.sale;
          if (sale.ad === undefined || sale.ad > step.now) return null; // announced meanwhile (another process)
          await step.prepare([]);
          step.touchSale();
          delete sale.ad;
          // a cancelled sale is never announced; one that ended before anyone ran the job neither
          if (sale.cancelled !== null || step.now >= Date.parse(sale.ends)) return null;
          const wishes = await step.query(this.layout.sku(sale.sku).collection('wishes').orderBy('customer'));
          sale.announced = step.nowIso;
          const about = { sale: id, sku: sale.sku, startsAt: sale.starts, endsAt: sale.ends, metadata: sale.meta };
          step.event('sale.live', `sale.live:${id}`, about);
          let n = 0;
          for (const w of wishes.docs) {
            const wish = w.data() as WishDoc;
            for (const channel of CHANNELS) {
              const to = wish.ch[channel];
              if (to === undefined) continue;
              step.event('sale.live.notify', `sale.live:${id}:${wish.customer}:${channel}`, {
                ...about,
                customer: wish.customer,
                channel,
                to,
              });
              n++;
            }
          }
          return n;
        },
        'optimistic',
      );
      if (sent === null) continue;
      result.sales.push(id);
      result.notifications += sent;
    }
    return result;
  }

  async endDue(): Promise<string[]> {
    const ended: string[] = [];
    for await (const id of this.dueSales('ed')) {
      const done = await stepRun(
        this.runner,
        async (tx, box) => {
          const step = (box.step = await SaleStep.open(tx, this.layout, id, 'optimistic'));
          const sale = step.sale;
          if (sale.ed === undefined || sale.ed > step.now) return false;
          await step.prepare([]);
          step.touchSale();
          delete sale.ed;
          sale.ended = step.nowIso;
          // its unexpired holds stay confirmable until they expire
          if (sale.cancelled === null)
            step.event('sale.ended', `sale.ended:${id}`, { sale: id, sku: sale.sku, sold: sale.sold, cap: sale.cap });
          return true;
        },
        'optimistic',
      );
      if (done) ended.push(id);
    }
    return ended;
  }

  // --- wishlists ---

  async addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    const ref = this.layout.wish(sku, customer);
    return this.runner.run(async (tx) => {
      const snap = await tx.get(ref);
      const doc: WishDoc = {
        customer,
        ch: channels,
        at: (snap.data() as WishDoc | undefined)?.at ?? isoMs(snap.readTime.toMillis()),
      };
      tx.set(ref, { ...doc });
      return toWish(sku, doc);
    });
  }

  async removeFromWishlist(sku: string, customer: string): Promise<void> {
    const ref = this.layout.wish(sku, customer);
    await this.runner.run(async (tx) => {
      if (!(await tx.get(ref)).exists) throw notFound('wish', `${sku}/${customer}`);
      tx.delete(ref);
    });
  }

  async listWishlist(sku: string, { limit, after }: { limit: number; after?: string }): Promise<Page<WishlistEntry>> {
    let query = this.layout
      .sku(sku)
      .collection('wishes')
      .orderBy('customer')
      .limit(limit + 1);
    if (after !== undefined) query = query.startAfter(after);
    const page = await query.get();
    const items = page.docs.slice(0, limit).map((d) => toWish(sku, d.data() as WishDoc));
    return { items, nextCursor: page.size > limit ? items[items.length - 1]!.customer : null };
  }

  // --- audit and events ---

  auditSale(id: string): Promise<SaleViolation[]> {
    return auditSale(this.layout, this.runner, id);
  }

  async listSaleEvents({
    after,
    limit,
    sale,
  }: {
    after?: string;
    limit: number;
    sale?: string;
  }): Promise<OutboxEvent[]> {
    const events = sale ? this.layout.events.where('sale', '==', sale) : this.layout.events.where('src', '==', 'sale');
    return eventPage(events, limit, after);
  }
}

function sameSku(sku: SkuDoc | undefined, id: string): { id: string; startsAt: string; endsAt: string }[] {
  return Object.entries(sku?.sales ?? {})
    .filter(([other]) => other !== id)
    .map(([other, w]) => ({ id: other, startsAt: w.s, endsAt: w.e }));
}

const alreadyExists = (id: string) => refusal('sale_exists', { sale: id });
const cancelledSale = (id: string) => refusal('sale_cancelled', { sale: id });

/**
 * The most units one customer has (orders and live hold) when someone has more than `limit`, else
 * at most `limit`: read in the update's transaction from the customer with the most orders beyond
 * `limit` (the refusal names the most, as on every store) and those with a live hold (as many as
 * there are live holds). Every buy and
 * reservation writes the sale document this transaction reads, so none slips in between.
 */
async function mostUnits(step: SaleStep, customers: CollectionReference, limit: number): Promise<number> {
  const [ordered, holding] = await Promise.all([
    step.query(customers.where('o', '>', limit).orderBy('o', 'desc').limit(1)),
    step.query(customers.where('he', '>', step.now)),
  ]);
  const units = (c: CustomerDoc) => c.o + (c.h !== null && c.he > step.now ? c.hq : 0);
  return Math.max(0, ...[...ordered.docs, ...holding.docs].map((d) => units(d.data() as CustomerDoc)));
}
