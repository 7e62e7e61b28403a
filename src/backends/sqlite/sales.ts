import { refusal } from '../../core/refusals.js';
import { judgeCustomerLimitChange, judgeSaleKey } from '../../core/model/sales.js';
import { DibsError, notFound } from '../../core/errors.js';
import { newTimeLedId } from '../../core/ids.js';
import type { SaleBackend, SaleViolation } from '../../core/sales/backend.js';
import {
  assertPreflight,
  ledgerViolations,
  overLimitViolations,
  saleStatus,
  soldOutEventViolation,
} from '../../core/sales/rules.js';
import type {
  ActivationResult,
  BuyResult,
  Cart,
  CartOrders,
  CartResult,
  CartSpec,
  Hold,
  HoldResult,
  Order,
  Sale,
  SalePatch,
  SaleSpec,
  WishlistChannels,
  WishlistEntry,
} from '../../core/sales/types.js';
import { CHANNELS } from '../../core/sales/rules.js';
import type { OutboxEvent, Page } from '../../core/types.js';
import { holdFromRow, orderFromRow, type HoldRowOf, type OrderRowOf, type SaleKeyRow } from '../shared/sale-rows.js';
import { roomCounterViolations, ticketsByStatus } from '../shared/room-audit.js';
import { sqlCartViolations } from '../shared/sql-cart-audit.js';
import { loadQueries } from '../shared/sql-files.js';
import { read, write, prepareAll, toEvent, type Db, type SqliteOptions, type Statements } from './database.js';
import { SqliteCarts } from './carts.js';

const Q = loadQueries(new URL('./sales.sql', import.meta.url), [
  'now',
  'later',
  'saleById',
  'saleStep',
  'holdStep',
  'insertSale',
  'sameSku',
  'listSales',
  'listSalesBySku',
  'updateSale',
  'cancelSale',
  'cancelSaleHolds',
  'zeroHeld',
  'staleHolds',
  'staleHoldsAnySale',
  'setHoldStatus',
  'moveSale',
  'unitsOfCustomer',
  'activeHoldOf',
  'activeHolds',
  'holdById',
  'insertHold',
  'replaceHold',
  'insertOrder',
  'orderById',
  'orderOfHold',
  'saleKey',
  'insertSaleKey',
  'insertEvent',
  'activeHeldUnits',
  'auditLedger',
  'roomCounters',
  'roomTickets',
  'customersOverLimit',
  'confirmedWithoutOrder',
  'eventsAfter',
  'saleEventsAfter',
  'upsertWish',
  'deleteWish',
  'listWishes',
  'wishesOfSku',
  'salesToAnnounce',
  'markAnnounced',
  'salesToEnd',
  'markEnded',
  'hasWaitingRoom',
]);

export interface SaleRow {
  id: string;
  sku: string;
  starts_at: string;
  ends_at: string;
  cap: number | null;
  per_customer_limit: number;
  metadata: string;
  cancelled_at: string | null;
  created_at: string;
  sold: number;
  held: number;
  /** Units granted to a tiered fast path and not sold yet (migration 011). */
  escrow: number;
}

type HoldRow = HoldRowOf<string>;

export type OrderRow = OrderRowOf<string>;

type KeyRow = SaleKeyRow;

/** sales.sql `saleStep`: the sale and everything a buy or reservation decides on, in one read. */
interface StepRow extends SaleRow {
  clock: string;
  later: string;
  has_room: 0 | 1;
  has_stale: 0 | 1;
  own_ordered: number;
  own_hold: string | null;
  own_held: number;
  own_cart: string | null;
}

/** sales.sql `holdStep`: a hold with the clock and what its confirmation decides on. */
interface HoldStepRow extends HoldRow {
  clock: string;
  has_stale: 0 | 1;
  sale_cancelled_at: string | null;
}

export class SqliteSales implements SaleBackend {
  private readonly stmt: Statements<typeof Q>;
  private readonly carts: SqliteCarts;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.stmt = prepareAll(db, Q);
    this.carts = new SqliteCarts(db, options, this);
  }

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

  async createSale(spec: SaleSpec): Promise<Sale> {
    return write(this.db, this.options, () => {
      const now = this.now();
      if (this.stmt.saleById.get(spec.id)) throw refusal('sale_exists', { sale: spec.id });
      assertPreflight(spec, { now, sameSku: this.sameSku(spec.sku, spec.id), committed: 0 });
      this.stmt.insertSale.run({ ...spec, metadata: JSON.stringify(spec.metadata), now });
      return this.toSale(this.sale(spec.id), now);
    });
  }

  async getSale(id: string): Promise<Sale> {
    // One read transaction: counters and holds from the same snapshot.
    return read(this.options, () => this.db.transaction(() => this.toSale(this.sale(id), this.now())).deferred());
  }

  async listSales({ limit, after, sku }: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>> {
    return read(this.options, () => {
      const now = this.now();
      const rows = (
        sku
          ? this.stmt.listSalesBySku.all(sku, after ?? '', limit + 1)
          : this.stmt.listSales.all(after ?? '', limit + 1)
      ) as SaleRow[];
      const items = rows.slice(0, limit).map((r) => this.toSale(r, now));
      return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
    });
  }

  async updateSale(id: string, patch: SalePatch): Promise<Sale> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const row = this.sale(id);
      if (row.cancelled_at !== null) throw refusal('sale_cancelled', { sale: id });
      this.expireStale(row, now);
      const current = this.sale(id);
      const spec: SaleSpec = {
        id,
        sku: row.sku,
        startsAt: patch.startsAt ?? row.starts_at,
        endsAt: patch.endsAt ?? row.ends_at,
        cap: patch.cap === undefined ? row.cap : patch.cap,
        perCustomerLimit: patch.perCustomerLimit ?? row.per_customer_limit,
        metadata: patch.metadata ?? (JSON.parse(row.metadata) as Record<string, unknown>),
      };
      assertPreflight(spec, {
        now,
        sameSku: this.sameSku(row.sku, id),
        committed: current.sold + current.held + current.escrow,
        existing: { startsAt: row.starts_at },
      });
      if (spec.perCustomerLimit < row.per_customer_limit) {
        const over = this.stmt.customersOverLimit.all({ sale: id, now, limit: spec.perCustomerLimit }) as {
          units: number;
        }[];
        judgeCustomerLimitChange(id, spec.perCustomerLimit, Math.max(0, ...over.map((c) => c.units)));
      }
      this.stmt.updateSale.run({ ...spec, metadata: JSON.stringify(spec.metadata) });
      // a cap lowered to exactly what is sold sells the sale out in this step, as a last order would
      if (spec.cap !== null && spec.cap > 0 && current.sold >= spec.cap)
        this.event(
          'sale.sold_out',
          `sale.sold_out:${id}`,
          id,
          { sale: id, sku: row.sku, sold: current.sold, cap: spec.cap },
          now,
        );
      return this.toSale(this.sale(id), now);
    });
  }

  async cancelSale(id: string): Promise<Sale> {
    return write(this.db, this.options, () => {
      const now = this.now();
      this.sale(id);
      if (this.stmt.cancelSale.run({ id, now }).changes > 0) {
        this.stmt.cancelSaleHolds.run(id);
        this.stmt.zeroHeld.run(id);
      }
      return this.toSale(this.sale(id), now);
    });
  }

  async buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    return write(this.db, this.options, () => {
      const first = this.step(saleId, customer, 0);
      const now = first?.clock ?? this.now();
      const replay = this.replay(saleId, key, 'buy', customer, quantity);
      if (replay) return { order: toOrder(this.order(replay.result_id)), replayed: true };
      const row = this.liveStep(saleId, customer, first, now);
      // a sale with a waiting room sells only through admitted tickets (reserve, then confirm)
      if (row.has_room) throw refusal('sale_ticket_required', { sale: saleId });
      this.judgeLimit(row, customer, row.own_ordered + row.own_held, quantity);
      if (row.cap !== null) {
        const available = row.cap - row.sold - row.held - row.escrow;
        if (quantity > available) throw refusal('sale_sold_out', { sale: saleId, available: Math.max(0, available) });
      }
      const order = this.insertOrder(row, customer, quantity, null, now);
      if (key !== null)
        this.stmt.insertSaleKey.run({ sale: saleId, key, kind: 'buy', customer, quantity, resultId: order.id });
      return { order: toOrder(order), replayed: false };
    });
  }

  async reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
  ): Promise<HoldResult> {
    return write(this.db, this.options, () => this.reserveStep(saleId, customer, quantity, ttlMs, key, false));
  }

  /**
   * The body of a reservation, run inside the caller's write transaction. `viaTicket`: the
   * waiting room has already checked an admitted ticket in this same transaction.
   */
  reserveStep(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
    viaTicket: boolean,
  ): HoldResult {
    {
      const first = this.step(saleId, customer, ttlMs);
      const now = first?.clock ?? this.now();
      const replay = this.replay(saleId, key, 'reserve', customer, quantity);
      if (replay) return { hold: toHold(this.hold(replay.result_id)), replayed: true };
      const row = this.liveStep(saleId, customer, first, now);
      if (!viaTicket && row.has_room) throw refusal('sale_ticket_required', { sale: saleId });
      if (row.own_cart) throw refusal('hold_in_cart', { hold: row.own_hold!, cart: row.own_cart });
      const ownUnits = row.own_held;
      this.judgeLimit(row, customer, row.own_ordered + ownUnits, quantity - ownUnits);
      if (row.cap !== null) {
        // Everyone else's holds count; the customer's own hold is being replaced.
        const available = row.cap - row.sold - row.escrow - (row.held - ownUnits);
        if (quantity > available) throw refusal('sale_sold_out', { sale: saleId, available: Math.max(0, available) });
      }
      // The expiry is @ttlMs past the clock of the step's first read (`later`), as `now` is.
      const expiresAt = first!.later;
      const hold = (
        row.own_hold !== null
          ? this.stmt.replaceHold.get({ id: row.own_hold, quantity, expiresAt })
          : this.stmt.insertHold.get({ id: newTimeLedId('hold'), sale: saleId, customer, quantity, expiresAt, now })
      ) as HoldRow;
      this.stmt.moveSale.run({ id: saleId, sold: 0, held: quantity - ownUnits });
      if (key !== null)
        this.stmt.insertSaleKey.run({ sale: saleId, key, kind: 'reserve', customer, quantity, resultId: hold.id });
      return { hold: toHold(hold), replayed: false };
    }
  }

  /** @internal Whether the sale sells only through its waiting room. */
  hasWaitingRoom(saleId: string): boolean {
    return this.stmt.hasWaitingRoom.get(saleId) !== undefined;
  }

  /** @internal Records an idempotency key's result, inside the caller's write. */
  insertKey(
    saleId: string,
    key: string,
    kind: KeyRow['kind'],
    customer: string,
    quantity: number,
    resultId: string,
  ): void {
    this.stmt.insertSaleKey.run({ sale: saleId, key, kind, customer, quantity, resultId });
  }

  /** Sale row after expiring stale holds, with its derived status — for the waiting room's admission step. */
  snapshot(saleId: string, now: string): { row: SaleRow; status: Sale['status']; held: number } {
    const before = this.sale(saleId);
    this.expireStale(before, now);
    const row = this.sale(saleId);
    const status = saleStatus(
      { startsAt: row.starts_at, endsAt: row.ends_at, cancelledAt: row.cancelled_at, cap: row.cap, sold: row.sold },
      now,
    );
    return { row, status, held: row.held };
  }

  clock(): string {
    return this.now();
  }

  async confirmHold(holdId: string): Promise<BuyResult> {
    return write(this.db, this.options, () => {
      const hold = this.stmt.holdStep.get({ id: holdId }) as HoldStepRow | undefined;
      if (!hold) throw notFound('hold', holdId);
      const now = hold.clock;
      if (hold.status === 'confirmed')
        return { order: toOrder(this.stmt.orderOfHold.get(holdId) as OrderRow), replayed: true };
      if (hold.status === 'cancelled') throw refusal('hold_cancelled', { hold: holdId });
      if (hold.cart_id) throw refusal('hold_in_cart', { hold: holdId, cart: hold.cart_id });
      // The expiry sweep (and a second look at the hold) only when some hold of the sale is stale.
      let current: HoldRow = hold;
      if (hold.has_stale) {
        this.expireStale(this.sale(hold.sale_id), now);
        current = this.hold(holdId);
      }
      if (current.status === 'expired') throw refusal('hold_expired', { hold: holdId, expiresAt: current.expires_at });
      if (hold.sale_cancelled_at !== null) throw refusal('sale_not_live', { sale: hold.sale_id, status: 'cancelled' });
      // One counter update: the held units become sold ones.
      const order = this.insertOrder(
        { id: hold.sale_id },
        current.customer,
        current.quantity,
        holdId,
        now,
        undefined,
        null,
        current.quantity,
      );
      this.stmt.setHoldStatus.run({ id: holdId, status: 'confirmed', orderId: order.id });
      return { order: toOrder(order), replayed: false };
    });
  }

  async cancelHold(holdId: string): Promise<Hold> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const hold = this.hold(holdId);
      if (hold.status === 'confirmed') throw refusal('hold_confirmed', { hold: holdId, order: hold.order_id });
      if (hold.cart_id) throw refusal('hold_in_cart', { hold: holdId, cart: hold.cart_id });
      this.expireStale(this.sale(hold.sale_id), now);
      if (this.hold(holdId).status === 'active') {
        this.stmt.setHoldStatus.run({ id: holdId, status: 'cancelled', orderId: null });
        this.stmt.moveSale.run({ id: hold.sale_id, sold: 0, held: -hold.quantity });
      }
      return toHold(this.hold(holdId));
    });
  }

  async getHold(holdId: string): Promise<Hold> {
    return read(this.options, () => {
      const hold = this.hold(holdId);
      // Expired holds stop counting at once, even before the sweep marks them.
      return toHold(hold.status === 'active' && hold.expires_at <= this.now() ? { ...hold, status: 'expired' } : hold);
    });
  }

  async listHolds(saleId: string, { limit, customer }: { limit: number; customer?: string }): Promise<Hold[]> {
    return read(this.options, () =>
      this.db
        .transaction(() => {
          this.sale(saleId); // not_found for an unknown sale
          return (
            this.stmt.activeHolds.all({ sale: saleId, now: this.now(), customer: customer ?? null, limit }) as HoldRow[]
          ).map(toHold);
        })
        .deferred(),
    );
  }

  async expireHolds(limit: number): Promise<number> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const stale = this.stmt.staleHoldsAnySale.all(now, limit) as HoldRow[];
      for (const hold of stale) this.expireHold(hold, now);
      return stale.length;
    });
  }

  async addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    return write(this.db, this.options, () =>
      toWish(
        this.stmt.upsertWish.get({ sku, customer, channels: JSON.stringify(channels), now: this.now() }) as WishRow,
      ),
    );
  }

  async removeFromWishlist(sku: string, customer: string): Promise<void> {
    await write(this.db, this.options, () => {
      if (this.stmt.deleteWish.run(sku, customer).changes === 0) throw notFound('wish', `${sku}/${customer}`);
    });
  }

  async listWishlist(sku: string, { limit, after }: { limit: number; after?: string }): Promise<Page<WishlistEntry>> {
    return read(this.options, () => {
      const rows = this.stmt.listWishes.all(sku, after ?? '', limit + 1) as WishRow[];
      const items = rows.slice(0, limit).map(toWish);
      return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.customer : null };
    });
  }

  async activateDue(): Promise<ActivationResult> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const result: ActivationResult = { sales: [], notifications: 0 };
      for (const sale of this.stmt.salesToAnnounce.all({ now }) as SaleRow[]) {
        if (this.stmt.markAnnounced.run({ id: sale.id, now }).changes === 0) continue;
        result.sales.push(sale.id);
        const about = {
          sale: sale.id,
          sku: sale.sku,
          startsAt: sale.starts_at,
          endsAt: sale.ends_at,
          metadata: JSON.parse(sale.metadata) as unknown,
        };
        this.event('sale.live', `sale.live:${sale.id}`, sale.id, about, now);
        for (const wish of this.stmt.wishesOfSku.all(sale.sku) as WishRow[]) {
          const channels = JSON.parse(wish.channels) as WishlistChannels;
          for (const channel of CHANNELS) {
            const to = channels[channel];
            if (to === undefined) continue;
            this.event(
              'sale.live.notify',
              `sale.live:${sale.id}:${wish.customer}:${channel}`,
              sale.id,
              { ...about, customer: wish.customer, channel, to },
              now,
            );
            result.notifications++;
          }
        }
      }
      return result;
    });
  }

  async endDue(): Promise<string[]> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const ended: string[] = [];
      for (const sale of this.stmt.salesToEnd.all({ now }) as SaleRow[]) {
        if (this.stmt.markEnded.run({ id: sale.id, now }).changes === 0) continue;
        this.expireStale(sale, now);
        // Holds of an ended sale can still be confirmed until they expire; nothing else changes.
        if (sale.cancelled_at === null)
          this.event(
            'sale.ended',
            `sale.ended:${sale.id}`,
            sale.id,
            { sale: sale.id, sku: sale.sku, sold: this.sale(sale.id).sold, cap: sale.cap },
            now,
          );
        ended.push(sale.id);
      }
      return ended;
    });
  }

  async auditSale(id: string): Promise<SaleViolation[]> {
    return read(this.options, () =>
      this.db
        .transaction(() => {
          const now = this.now();
          const row = this.sale(id);
          const violations: SaleViolation[] = [];
          const ledger = this.stmt.auditLedger.get({ sale: id }) as {
            ordered: number;
            active: number;
            soldOutEvents: number;
          };
          const live = (this.stmt.activeHeldUnits.get(id, now) as { n: number }).n;
          violations.push(...ledgerViolations(id, row, { ...ledger, live }));
          const over = this.stmt.customersOverLimit.all({ sale: id, now, limit: row.per_customer_limit }) as {
            customer: string;
            units: number;
          }[];
          violations.push(...overLimitViolations(id, row.per_customer_limit, over));
          for (const h of this.stmt.confirmedWithoutOrder.all(id) as { id: string }[]) {
            violations.push({ invariant: 'I4', sale: id, message: `hold '${h.id}' is confirmed but has no order` });
          }
          const soldOutWrong = soldOutEventViolation(id, row.cap, row.sold, ledger.soldOutEvents);
          if (soldOutWrong) violations.push(soldOutWrong);
          violations.push(...sqlCartViolations(id, this.carts.auditRows(id), now));
          const counters = this.stmt.roomCounters.get(id) as Record<string, number> | undefined;
          if (counters) {
            const tickets = this.stmt.roomTickets.all(id) as { status: string; n: number }[];
            violations.push(...roomCounterViolations(id, counters, ticketsByStatus(tickets)));
          }
          return violations;
        })
        .deferred(),
    );
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
    const from = after === undefined ? 0 : Number(after);
    if (!Number.isSafeInteger(from))
      throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    return read(this.options, () => {
      const rows = (
        sale ? this.stmt.saleEventsAfter.all(sale, from, limit) : this.stmt.eventsAfter.all(from, limit)
      ) as { id: number; type: string; idempotency_key: string; payload: string; created_at: string }[];
      return rows.map(toEvent);
    });
  }

  // --- helpers, all inside a transaction ---

  /** @internal */
  now(): string {
    return (this.stmt.now.get() as { now: string }).now;
  }

  private sale(id: string, line?: number): SaleRow {
    const row = this.stmt.saleById.get(id) as SaleRow | undefined;
    if (!row) throw line === undefined ? notFound('sale', id) : refusal('cart_line_no_sale', { sale: id, line });
    return row;
  }

  private hold(id: string): HoldRow {
    const row = this.stmt.holdById.get(id) as HoldRow | undefined;
    if (!row) throw notFound('hold', id);
    return row;
  }

  private order(id: string): OrderRow {
    return this.stmt.orderById.get(id) as OrderRow;
  }

  private sameSku(sku: string, id: string) {
    return this.stmt.sameSku.all(sku, id) as { id: string; startsAt: string; endsAt: string }[];
  }

  /** The sale, after expiring its stale holds, if it is live now; otherwise `not_live`/`sold_out`. */
  /** @internal (also used by grants.ts inside its write step) */
  liveSale(id: string, now: string, line?: number): SaleRow {
    const before = this.sale(id, line);
    const row = this.expireStale(before, now) > 0 ? this.sale(id) : before;
    const status = saleStatus(
      { startsAt: row.starts_at, endsAt: row.ends_at, cancelledAt: row.cancelled_at, cap: row.cap, sold: row.sold },
      now,
    );
    if (status !== 'live')
      throw refusal('sale_not_live', { sale: id, status, ...(line === undefined ? {} : { line }) });
    return row;
  }

  // --- cart steps (carts.ts), inside its write transaction ---

  /** @internal The store clock plus `ttlMs`. */
  later(ttlMs: number): string {
    return (this.stmt.later.get(ttlMs) as { at: string }).at;
  }

  /** @internal */
  activeHoldOf(saleId: string, customer: string): { id: string } | undefined {
    return this.stmt.activeHoldOf.get(saleId, customer) as HoldRow | undefined;
  }

  /** @internal */
  moveHeld(saleId: string, units: number): void {
    this.stmt.moveSale.run({ id: saleId, sold: 0, held: units });
  }

  /** @internal */
  orderOf(id: string): Order {
    return toOrder(this.order(id));
  }

  /** @internal An active, unexpired cart line becomes an order (the cart checked both). */
  confirmLine(holdId: string, now: string): void {
    const hold = this.hold(holdId);
    const order = this.insertOrder(
      { id: hold.sale_id },
      hold.customer,
      hold.quantity,
      holdId,
      now,
      undefined,
      null,
      hold.quantity,
    );
    this.stmt.setHoldStatus.run({ id: holdId, status: 'confirmed', orderId: order.id });
  }

  /** @internal An active cart line is released. */
  releaseLine(holdId: string): void {
    const hold = this.hold(holdId);
    this.stmt.setHoldStatus.run({ id: holdId, status: 'cancelled', orderId: null });
    this.stmt.moveSale.run({ id: hold.sale_id, sold: 0, held: -hold.quantity });
  }

  /** Expires the sale's active holds past their expiry; returns how many. */
  private expireStale(row: { id: string }, now: string): number {
    const stale = this.stmt.staleHolds.all(row.id, now) as HoldRow[];
    for (const hold of stale) this.expireHold(hold, now);
    return stale.length;
  }

  /** sales.sql `saleStep` for `customer`; undefined for an unknown sale. */
  private step(id: string, customer: string, ttlMs: number): StepRow | undefined {
    return this.stmt.saleStep.get({ id, customer, ttlMs }) as StepRow | undefined;
  }

  /**
   * The step's sale if it is live at `now` (as liveSale): `first` is the step's first read; only
   * when it saw stale holds are they expired and the sale read again (counters, own hold).
   */
  private liveStep(id: string, customer: string, first: StepRow | undefined, now: string): StepRow {
    if (!first) throw notFound('sale', id);
    let row = first;
    if (first.has_stale && this.expireStale(first, now) > 0) row = this.step(id, customer, 0)!;
    const status = saleStatus(
      { startsAt: row.starts_at, endsAt: row.ends_at, cancelledAt: row.cancelled_at, cap: row.cap, sold: row.sold },
      now,
    );
    if (status !== 'live') throw refusal('sale_not_live', { sale: id, status });
    return row;
  }

  private expireHold(hold: HoldRow, now: string): void {
    this.stmt.setHoldStatus.run({ id: hold.id, status: 'expired', orderId: null });
    this.stmt.moveSale.run({ id: hold.sale_id, sold: 0, held: -hold.quantity });
    this.event(
      'hold.expired',
      `hold.expired:${hold.id}`,
      hold.sale_id,
      {
        sale: hold.sale_id,
        hold: hold.id,
        customer: hold.customer,
        quantity: hold.quantity,
        expiresAt: hold.expires_at,
      },
      now,
    );
  }

  /** @internal */
  assertWithinLimit(row: SaleRow, customer: string, more: number, line?: number): void {
    const { ordered, held } = this.stmt.unitsOfCustomer.get({ sale: row.id, customer }) as {
      ordered: number;
      held: number;
    };
    this.judgeLimit(row, customer, ordered + held, more, line);
  }

  /** `units`: what the customer has ordered and holds in the sale already; `more`: what the step adds. */
  private judgeLimit(row: SaleRow, customer: string, units: number, more: number, line?: number): void {
    if (units + more > row.per_customer_limit)
      throw refusal('sale_limit', {
        sale: row.id,
        customer,
        units,
        quantity: more,
        limit: row.per_customer_limit,
        ...(line === undefined ? {} : { line }),
      });
  }

  /**
   * @internal `grantId`: the tiered fast-path grant the order consumed; `fromHeld`: units of a
   * confirmed hold that stop counting as held in the same counter update.
   */
  insertOrder(
    row: { id: string },
    customer: string,
    quantity: number,
    holdId: string | null,
    now: string,
    id = newTimeLedId('ord'),
    grantId: number | null = null,
    fromHeld = 0,
  ): OrderRow {
    const order = this.stmt.insertOrder.get({ id, sale: row.id, customer, quantity, holdId, now, grantId }) as OrderRow;
    const after = this.stmt.moveSale.get({ id: row.id, sold: quantity, held: -fromHeld }) as {
      sold: number;
      cap: number | null;
    };
    if (after.cap !== null && after.sold >= after.cap) {
      // The SKU only for the rare sold-out event, read then rather than carried by every caller.
      const { sku } = this.sale(row.id);
      this.event(
        'sale.sold_out',
        `sale.sold_out:${row.id}`,
        row.id,
        { sale: row.id, sku, sold: after.sold, cap: after.cap },
        now,
      );
    }
    return order;
  }

  private event(type: string, key: string, sale: string, payload: Record<string, unknown>, now: string): void {
    this.stmt.insertEvent.run({ type, key, sale, payload: JSON.stringify(payload), now });
  }

  /** The stored result of an idempotency key, or null for a fresh key; a mismatched reuse is a conflict. */
  /** @internal */
  replay(saleId: string, key: string | null, kind: KeyRow['kind'], customer: string, quantity: number): KeyRow | null {
    if (key === null) return null;
    const row = this.stmt.saleKey.get(saleId, key) as KeyRow | undefined;
    if (!row) return null;
    judgeSaleKey(key, row, kind, customer, quantity);
    return row;
  }

  private toSale(row: SaleRow, now: string): Sale {
    const held = (this.stmt.activeHeldUnits.get(row.id, now) as { n: number }).n;
    return {
      id: row.id,
      sku: row.sku,
      startsAt: row.starts_at,
      endsAt: row.ends_at,
      cap: row.cap,
      perCustomerLimit: row.per_customer_limit,
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      status: saleStatus(
        { startsAt: row.starts_at, endsAt: row.ends_at, cancelledAt: row.cancelled_at, cap: row.cap, sold: row.sold },
        now,
      ),
      cancelledAt: row.cancelled_at,
      createdAt: row.created_at,
      stats: { sold: row.sold, held, available: row.cap === null ? null : Math.max(0, row.cap - row.sold - held) },
    };
  }
}

interface WishRow {
  sku: string;
  customer: string;
  channels: string;
  created_at: string;
}

function toWish(row: WishRow): WishlistEntry {
  return {
    sku: row.sku,
    customer: row.customer,
    channels: JSON.parse(row.channels) as WishlistChannels,
    createdAt: row.created_at,
  };
}

const toHold = (row: HoldRow): Hold => holdFromRow(row, (t) => t);

export const toOrder = (row: OrderRow): Order => orderFromRow(row, (t) => t);
