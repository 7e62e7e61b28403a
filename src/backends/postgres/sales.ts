/**
 * Flash sales on PostgreSQL. Every step that changes a sale's units is ONE READ COMMITTED
 * transaction that starts by locking the sale row: steps of one sale run one after another, and
 * each statement after the lock sees everything committed before it, so the window, cap,
 * per-customer limit, idempotency key and lazy hold expiry are decided on current state, with the
 * database's clock (now(): the start of the step's transaction). Steps of different sales never
 * wait for each other. CHECK constraints on the sale row back I3 up.
 *
 * The hot steps — buy, reserve, confirm — are server-side functions (functions/sale_take.sql,
 * `sale_confirm`) called in one statement, so the row lock is held for the statements' time, not
 * for client round trips; before them a lock-free read answers idempotent replays and sales that
 * are not live (`peek`). With grouping on (the default), the hot steps of one sale waiting in this
 * process run as one statement (sale-grouper.ts), and the peek runs only for sales last seen refusing. The rarer steps (create, update, cancel, cancel hold, sweep, end) are
 * client-side transactions built from sales.sql. Status codes of the functions become the same
 * errors core/sales/rules.ts gives every backend.
 */
import { judgeCustomerLimitChange, judgeSaleKey } from '../../core/model/sales.js';
import { refusal } from '../../core/refusals.js';
import type pg from 'pg';
import { DibsError, isDibsError, notFound, unavailable } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { SaleBackend, SaleViolation } from '../../core/sales/backend.js';
import {
  assertPreflight,
  CHANNELS,
  ledgerViolations,
  overLimitViolations,
  saleStatus,
  soldOutEventViolation,
} from '../../core/sales/rules.js';
import { refusedRow } from './refused.js';
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
import type { OutboxEvent, Page } from '../../core/types.js';
import { holdFromRow, orderFromRow, type SaleKeyRow } from '../shared/sale-rows.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, withTransaction } from './connection.js';
import { SaleGrouper, type ConfirmRow, type HoldRow, type OrderRow, type TakeRow } from './sale-grouper.js';
import { roomCounterViolations, ticketsByStatus } from '../shared/room-audit.js';
import { auditCartsOfSale, PostgresCarts } from './carts.js';

const Q = loadQueries(new URL('./sales.sql', import.meta.url), [
  'now',
  'lockSku',
  'lockSale',
  'peekSale',
  'saleView',
  'listSales',
  'listSalesBySku',
  'saleExists',
  'skuOf',
  'insertSale',
  'sameSku',
  'updateSale',
  'cancelSale',
  'expireStale',
  'staleHoldsAnySale',
  'lockSales',
  'expireHoldIds',
  'take',
  'confirm',
  'activeHolds',
  'holdById',
  'holdView',
  'setHoldStatus',
  'orderById',
  'upsertWish',
  'deleteWish',
  'listWishes',
  'salesToAnnounce',
  'announce',
  'salesToEnd',
  'markEnded',
  'insertEvent',
  'auditLedger',
  'roomCounters',
  'roomTickets',
  'customersOverLimit',
  'confirmedWithoutOrder',
  'keysWithForeignResults',
  'eventsAfter',
  'saleEventsAfter',
]);

type Db = pg.Pool | pg.ClientBase;

interface SaleRow {
  id: string;
  sku: string;
  starts_at: Date;
  ends_at: Date;
  cap: number | null;
  per_customer_limit: number;
  metadata: Record<string, unknown>;
  cancelled_at: Date | null;
  created_at: Date;
  sold: number;
  held: number;
  /** Units granted to a tiered fast path and not sold yet (migration 010). */
  escrow: number;
  now: Date;
}

/** A sale as read by saleView/listSales: with the units of its unexpired holds. */
interface SaleViewRow extends SaleRow {
  live_held: number;
}

type KeyRow = SaleKeyRow;

interface WishRow {
  sku: string;
  customer: string;
  channels: WishlistChannels;
  created_at: Date;
}

interface EventRow {
  id: string;
  type: string;
  idempotency_key: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

export class PgSales implements SaleBackend {
  /** Groups the buys, reservations and confirmations of a sale waiting in this process (sale-grouper.ts). */
  private readonly grouper: SaleGrouper | null;
  /**
   * Grouped only: sales whose last grouped step in this process was refused as not live or sold
   * out. Their buys and reservations look first without the lock (`peek`), so the losers of a
   * sell-out do not queue on the sale row; the others go straight to the group, whose locked step
   * decides everything the peek would have (a replayed key included).
   */
  private readonly refusing = new Set<string>();

  constructor(
    private readonly pool: pg.Pool,
    options: { grouped: boolean; groupMax: number } = { grouped: false, groupMax: 1 },
  ) {
    this.grouper = options.grouped ? new SaleGrouper(pool, options) : null;
    this.carts = new PostgresCarts(pool);
  }

  private readonly carts: PostgresCarts;

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
    return withTransaction(this.pool, async (client) => {
      await client.query(Q.lockSku, [spec.sku]);
      if ((await client.query(Q.saleExists, [spec.id])).rowCount) throw alreadyExists(spec.id);
      const now = await this.now(client);
      assertPreflight(spec, { now, sameSku: await this.sameSku(client, spec.sku, spec.id), committed: 0 });
      const { rowCount } = await client.query(Q.insertSale, [
        spec.id,
        spec.sku,
        spec.startsAt,
        spec.endsAt,
        spec.cap,
        spec.perCustomerLimit,
        JSON.stringify(spec.metadata),
      ]);
      // A racing create of the same id under another SKU (another advisory lock) loses here.
      if (!rowCount) throw alreadyExists(spec.id);
      return this.view(client, spec.id);
    });
  }

  async getSale(id: string): Promise<Sale> {
    // One statement: counters, unexpired holds and the clock from the same snapshot.
    return this.view(this.pool, id);
  }

  async listSales({ limit, after, sku }: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>> {
    const { rows } = sku
      ? await query<SaleViewRow>(this.pool, Q.listSalesBySku, [after ?? '', limit + 1, sku])
      : await query<SaleViewRow>(this.pool, Q.listSales, [after ?? '', limit + 1]);
    const items = rows.slice(0, limit).map(toSale);
    return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.id : null };
  }

  async updateSale(id: string, patch: SalePatch): Promise<Sale> {
    return withTransaction(this.pool, async (client) => {
      // The SKU never changes, so it can be read before its lock is taken.
      const sku = (await client.query<{ sku: string }>(Q.skuOf, [id])).rows[0]?.sku;
      if (sku === undefined) throw notFound('sale', id);
      await client.query(Q.lockSku, [sku]);
      const row = await this.lock(client, id);
      if (row.cancelled_at !== null) throw refusal('sale_cancelled', { sale: id });
      const { units } = await this.expireStale(client, id);
      const now = iso(row.now);
      const spec: SaleSpec = {
        id,
        sku: row.sku,
        startsAt: patch.startsAt ?? iso(row.starts_at),
        endsAt: patch.endsAt ?? iso(row.ends_at),
        cap: patch.cap === undefined ? row.cap : patch.cap,
        perCustomerLimit: patch.perCustomerLimit ?? row.per_customer_limit,
        metadata: patch.metadata ?? row.metadata,
      };
      assertPreflight(spec, {
        now,
        sameSku: await this.sameSku(client, row.sku, id),
        committed: row.sold + row.held + row.escrow - units,
        existing: { startsAt: iso(row.starts_at) },
      });
      if (spec.perCustomerLimit < row.per_customer_limit) {
        // under the sale's row lock: every buy and reservation that counted against the old limit has committed
        const over = (await client.query<{ units: number }>(Q.customersOverLimit, [id, spec.perCustomerLimit])).rows;
        judgeCustomerLimitChange(id, spec.perCustomerLimit, Math.max(0, ...over.map((c) => c.units)));
      }
      await client.query(Q.updateSale, [
        id,
        spec.startsAt,
        spec.endsAt,
        spec.cap,
        spec.perCustomerLimit,
        JSON.stringify(spec.metadata),
      ]);
      // a cap lowered to exactly what is sold sells the sale out in this step, as a last order would
      if (spec.cap !== null && spec.cap > 0 && row.sold >= spec.cap) {
        await client.query(Q.insertEvent, [
          'sale.sold_out',
          `sale.sold_out:${id}`,
          id,
          JSON.stringify({ sale: id, sku: row.sku, sold: row.sold, cap: spec.cap }),
        ]);
      }
      return this.view(client, id);
    });
  }

  async cancelSale(id: string): Promise<Sale> {
    return withTransaction(this.pool, async (client) => {
      await this.lock(client, id);
      await client.query(Q.cancelSale, [id]);
      return this.view(client, id);
    });
  }

  async buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    const early = await this.firstLook(saleId, key, 'buy', customer, quantity);
    if (early) return { order: toOrder(await this.order(this.pool, early.result_id)), replayed: true };
    if (this.grouper) {
      const { row, record } = await this.grouper.take(saleId, {
        customer,
        quantity,
        key,
        newId: newId('ord'),
        ttlMs: null,
      });
      this.noteRefusal(saleId, row);
      const taken = takeOutcome(row, saleId, customer, quantity, key, 'buy');
      if (!record) throw lostAfterCommit('order', taken.id);
      return { order: toOrder(record as OrderRow), replayed: taken.replayed };
    }
    const taken = await this.take(saleId, customer, quantity, key, newId('ord'), null);
    return { order: toOrder(await this.order(this.pool, taken.id)), replayed: taken.replayed };
  }

  async reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
  ): Promise<HoldResult> {
    const early = await this.firstLook(saleId, key, 'reserve', customer, quantity);
    if (early) return { hold: toHold(await this.hold(this.pool, early.result_id)), replayed: true };
    if (this.grouper) {
      const { row, record } = await this.grouper.take(saleId, { customer, quantity, key, newId: newId('hold'), ttlMs });
      this.noteRefusal(saleId, row);
      const taken = takeOutcome(row, saleId, customer, quantity, key, 'reserve');
      if (!record) throw lostAfterCommit('hold', taken.id);
      return { hold: toHold(record as HoldRow), replayed: taken.replayed };
    }
    const taken = await this.take(saleId, customer, quantity, key, newId('hold'), ttlMs);
    const hold = await this.hold(this.pool, taken.id).catch((error: unknown) => {
      throw isDibsError(error, 'not_found') ? lostAfterCommit('hold', taken.id) : error;
    });
    return { hold: toHold(hold), replayed: taken.replayed };
  }

  async confirmHold(holdId: string): Promise<BuyResult> {
    // One statement (sales.sql `confirm`): lock the hold's sale, expire stale holds, decide, write.
    // Grouped: in one statement with the buys, reservations and confirmations of the sale waiting in this process.
    let r: ConfirmRow;
    let order: OrderRow | undefined;
    if (this.grouper) {
      const answered = await this.grouper.confirm(holdId, newId('ord'));
      if (!answered) throw notFound('hold', holdId);
      ({ row: r, record: order } = answered);
    } else {
      r = (await query<ConfirmRow>(this.pool, Q.confirm, [holdId, newId('ord')])).rows[0]!;
    }
    switch (r.outcome) {
      case 'ok':
      case 'replay':
        if (this.grouper && !order) throw lostAfterCommit('order', r.result_id!);
        return {
          order: toOrder(order ?? (await this.order(this.pool, r.result_id!))),
          replayed: r.outcome === 'replay',
        };
      case 'not_found':
        throw notFound('hold', holdId);
      default:
        throw refusedRow(r.outcome, r.ctx, { hold: holdId });
    }
  }

  async cancelHold(holdId: string): Promise<Hold> {
    return withTransaction(this.pool, async (client) => {
      const first = await this.hold(client, holdId);
      if (first.status === 'confirmed') throw alreadyConfirmed(first);
      if (first.cart_id) throw refusal('hold_in_cart', { hold: holdId, cart: first.cart_id });
      await this.lock(client, first.sale_id);
      await this.expireStale(client, first.sale_id);
      const hold = await this.hold(client, holdId);
      if (hold.status === 'confirmed') throw alreadyConfirmed(hold);
      if (hold.status !== 'active') return toHold(hold);
      return toHold(
        (await client.query<HoldRow>(Q.setHoldStatus, [holdId, 'cancelled', null, hold.quantity, hold.sale_id]))
          .rows[0]!,
      );
    });
  }

  async getHold(holdId: string): Promise<Hold> {
    // Expired holds stop counting at once, even before the sweep marks them.
    const row = (await query<HoldRow>(this.pool, Q.holdView, [holdId])).rows[0];
    if (!row) throw notFound('hold', holdId);
    return toHold(row);
  }

  async listHolds(saleId: string, { limit, customer }: { limit: number; customer?: string }): Promise<Hold[]> {
    if ((await query(this.pool, Q.saleExists, [saleId])).rowCount === 0) throw notFound('sale', saleId);
    return (await query<HoldRow>(this.pool, Q.activeHolds, [saleId, customer ?? null, limit])).rows.map(toHold);
  }

  async expireHolds(limit: number): Promise<number> {
    const stale = (await query<{ id: string; sale_id: string }>(this.pool, Q.staleHoldsAnySale, [limit])).rows;
    if (stale.length === 0) return 0;
    return withTransaction(this.pool, async (client) => {
      // Lock the sales (in id order) before their holds, like every other step does.
      await client.query(Q.lockSales, [[...new Set(stale.map((h) => h.sale_id))]]);
      return (await client.query<{ n: number }>(Q.expireHoldIds, [stale.map((h) => h.id)])).rows[0]!.n;
    });
  }

  async addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    return toWish((await query<WishRow>(this.pool, Q.upsertWish, [sku, customer, JSON.stringify(channels)])).rows[0]!);
  }

  async removeFromWishlist(sku: string, customer: string): Promise<void> {
    if (!(await query(this.pool, Q.deleteWish, [sku, customer])).rowCount) throw notFound('wish', `${sku}/${customer}`);
  }

  async listWishlist(sku: string, { limit, after }: { limit: number; after?: string }): Promise<Page<WishlistEntry>> {
    const { rows } = await query<WishRow>(this.pool, Q.listWishes, [sku, after ?? '', limit + 1]);
    const items = rows.slice(0, limit).map(toWish);
    return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.customer : null };
  }

  async activateDue(): Promise<ActivationResult> {
    const result: ActivationResult = { sales: [], notifications: 0 };
    for (const { id } of (await query<{ id: string }>(this.pool, Q.salesToAnnounce)).rows) {
      // One statement per sale marks it announced and writes its events; a racing activator
      // (another process) finds the row already announced and gets sale = null.
      const row = (await query<{ sale: string | null; notifications: number }>(this.pool, Q.announce, [id, CHANNELS]))
        .rows[0]!;
      if (row.sale === null) continue;
      result.sales.push(row.sale);
      result.notifications += row.notifications;
    }
    return result;
  }

  async endDue(): Promise<string[]> {
    const ended: string[] = [];
    for (const { id } of (await query<{ id: string }>(this.pool, Q.salesToEnd)).rows) {
      const done = await withTransaction(this.pool, async (client) => {
        const sale = (await client.query<SaleRow>(Q.markEnded, [id])).rows[0];
        if (!sale) return false;
        await this.expireStale(client, id);
        // Holds of an ended sale can still be confirmed until they expire; nothing else changes.
        if (sale.cancelled_at === null) {
          await client.query(Q.insertEvent, [
            'sale.ended',
            `sale.ended:${id}`,
            id,
            JSON.stringify({ sale: id, sku: sale.sku, sold: sale.sold, cap: sale.cap }),
          ]);
        }
        return true;
      });
      if (done) ended.push(id);
    }
    return ended;
  }

  async auditSale(id: string): Promise<SaleViolation[]> {
    // One REPEATABLE READ snapshot: counters, orders, holds and events compared at the same instant.
    return withTransaction(
      this.pool,
      async (client) => {
        const row = (await client.query<SaleViewRow & { announced_at: Date | null }>(Q.saleView, [id])).rows[0];
        if (!row) throw notFound('sale', id);
        const violations: SaleViolation[] = [];
        const ledger = (
          await client.query<{
            ordered: number;
            active: number;
            live: number;
            expired_holds: number;
            sold_out_events: number;
            live_events: number;
            expired_events: number;
          }>(Q.auditLedger, [id])
        ).rows[0]!;
        violations.push(...ledgerViolations(id, row, ledger));
        if (row.cap !== null && row.sold > row.cap) {
          violations.push({
            invariant: 'I3',
            sale: id,
            expected: row.cap,
            actual: row.sold,
            message: `sold counter ${row.sold} exceeds the cap of ${row.cap}`,
          });
        }
        const over = (
          await client.query<{ customer: string; units: number }>(Q.customersOverLimit, [id, row.per_customer_limit])
        ).rows;
        violations.push(...overLimitViolations(id, row.per_customer_limit, over));
        for (const k of (
          await client.query<{ key: string; customer: string; owner: string | null }>(Q.keysWithForeignResults, [id])
        ).rows) {
          violations.push({
            invariant: 'I2',
            sale: id,
            customer: k.customer,
            message: `idempotency key '${k.key}' of '${k.customer}' points at ${k.owner === null ? 'nothing' : `a result of '${k.owner}'`}`,
          });
        }
        for (const h of (await client.query<{ id: string }>(Q.confirmedWithoutOrder, [id])).rows) {
          violations.push({ invariant: 'I4', sale: id, message: `hold '${h.id}' is confirmed but has no order` });
        }
        const soldOutWrong = soldOutEventViolation(id, row.cap, row.sold, ledger.sold_out_events);
        if (soldOutWrong) violations.push(soldOutWrong);
        const announced = row.announced_at !== null ? 1 : 0;
        if (ledger.live_events !== announced)
          violations.push({
            invariant: 'I7',
            sale: id,
            expected: announced,
            actual: ledger.live_events,
            message: `expected ${announced} sale.live event(s), found ${ledger.live_events}`,
          });
        if (ledger.expired_events !== ledger.expired_holds) {
          violations.push({
            invariant: 'I7',
            sale: id,
            expected: ledger.expired_holds,
            actual: ledger.expired_events,
            message: `${ledger.expired_holds} hold(s) expired but ${ledger.expired_events} hold.expired event(s) were recorded`,
          });
        }
        violations.push(...(await auditCartsOfSale(client, id)));
        const counters = (await client.query<Record<string, number>>(Q.roomCounters, [id])).rows[0];
        if (counters) {
          const tickets = (await client.query<{ status: string; n: number }>(Q.roomTickets, [id])).rows;
          violations.push(...roomCounterViolations(id, counters, ticketsByStatus(tickets)));
        }
        return violations;
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
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
    const from = after ?? '0';
    if (!/^\d{1,18}$/.test(from))
      throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    const { rows } = sale
      ? await query<EventRow>(this.pool, Q.saleEventsAfter, [from, limit, sale])
      : await query<EventRow>(this.pool, Q.eventsAfter, [from, limit]);
    return rows.map((e) => ({
      id: e.id,
      type: e.type,
      idempotencyKey: e.idempotency_key,
      payload: e.payload,
      createdAt: iso(e.created_at),
    }));
  }

  // --- for the waiting room (waiting-room.ts), inside its transaction ---

  /** A reservation inside the caller's transaction, after the waiting room checked an admitted ticket. */
  async reserveViaTicket(
    client: pg.ClientBase,
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string,
  ): Promise<HoldResult> {
    const taken = await this.take(saleId, customer, quantity, key, newId('hold'), ttlMs, client, true);
    return { hold: toHold(await this.hold(client, taken.id)), replayed: taken.replayed };
  }

  // --- helpers, all inside a step's transaction ---

  private async now(client: Db): Promise<string> {
    return iso((await client.query<{ now: Date }>(Q.now)).rows[0]!.now);
  }

  private async view(client: Db, id: string): Promise<Sale> {
    const row = (
      client === this.pool
        ? await query<SaleViewRow>(this.pool, Q.saleView, [id])
        : await client.query<SaleViewRow>(Q.saleView, [id])
    ).rows[0];
    if (!row) throw notFound('sale', id);
    return toSale(row);
  }

  /** Locks the sale row for the rest of the transaction; throws `not_found`. */
  private async lock(client: pg.ClientBase, id: string): Promise<SaleRow> {
    const row = (await client.query<SaleRow>(Q.lockSale, [id])).rows[0];
    if (!row) throw notFound('sale', id);
    return row;
  }

  private async hold(client: Db, id: string): Promise<HoldRow> {
    const row = (await run<HoldRow>(client, this.pool, Q.holdById, [id])).rows[0];
    if (!row) throw notFound('hold', id);
    return row;
  }

  private async order(client: Db, id: string): Promise<OrderRow> {
    const row = (await run<OrderRow>(client, this.pool, Q.orderById, [id])).rows[0];
    if (!row) throw lostAfterCommit('order', id);
    return row;
  }

  /** `peek` unless grouped steps of this sale were selling when last seen (see `refusing`). */
  private async firstLook(
    saleId: string,
    key: string | null,
    kind: KeyRow['kind'],
    customer: string,
    quantity: number,
  ): Promise<KeyRow | null> {
    if (this.grouper && !this.refusing.has(saleId)) return null;
    const early = await this.peek(saleId, key, kind, customer, quantity);
    if (early === null) this.refusing.delete(saleId); // live again (a raised cap, an expired hold)
    return early;
  }

  private noteRefusal(saleId: string, row: TakeRow): void {
    if (row.outcome !== 'sale_sold_out' && row.outcome !== 'sale_not_live') return;
    if (this.refusing.size >= 10_000) this.refusing.clear(); // only a shortcut: forgetting costs one locked group
    this.refusing.add(saleId);
  }

  /**
   * The lock-free first look of a buy/reserve (sales.sql `peekSale`): the stored answer of a known
   * idempotency key (immutable once committed), or `not_live`/`sold_out` for a sale that is not live
   * at this read — a correct answer as of this instant — so the losers of a sell-out never queue on
   * the sale row. Null: take the locked step, which decides everything again.
   */
  private async peek(
    saleId: string,
    key: string | null,
    kind: KeyRow['kind'],
    customer: string,
    quantity: number,
  ): Promise<KeyRow | null> {
    const row = (
      await query<{
        starts_at: Date;
        ends_at: Date;
        cancelled_at: Date | null;
        cap: number | null;
        sold: number;
        now: Date;
        key_kind: KeyRow['kind'] | null;
        key_customer: string;
        key_quantity: number;
        key_result: string;
      }>(this.pool, Q.peekSale, [saleId, key])
    ).rows[0];
    if (!row) throw notFound('sale', saleId);
    if (key !== null && row.key_kind !== null)
      return checkKey(
        key,
        { kind: row.key_kind, customer: row.key_customer, quantity: row.key_quantity, result_id: row.key_result },
        kind,
        customer,
        quantity,
      );
    const status = saleStatus(
      {
        startsAt: iso(row.starts_at),
        endsAt: iso(row.ends_at),
        cancelledAt: row.cancelled_at && iso(row.cancelled_at),
        cap: row.cap,
        sold: row.sold,
      },
      iso(row.now),
    );
    // Answered as of this read (the locked step would judge at its own transaction's start the same way).
    if (status !== 'live') throw refusal('sale_not_live', { sale: saleId, status });
    return null;
  }

  private async sameSku(client: pg.ClientBase, sku: string, id: string) {
    return (await client.query<{ id: string; starts_at: Date; ends_at: Date }>(Q.sameSku, [sku, id])).rows.map((r) => ({
      id: r.id,
      startsAt: iso(r.starts_at),
      endsAt: iso(r.ends_at),
    }));
  }

  /** Expires the (locked) sale's stale holds; returns the units they held. */
  private async expireStale(client: pg.ClientBase, saleId: string): Promise<{ units: number }> {
    return (await client.query<{ units: number }>(Q.expireStale, [saleId])).rows[0]!;
  }

  /**
   * A buy (ttlMs null) or reserve as ONE statement (sales.sql `take` → functions/sale_take.sql):
   * the row lock, key replay, lazy expiry, window, limit and cap checks and the writes all happen
   * server-side, so the sale row is locked for the statements' time only, not for client round
   * trips. A refusal comes back as its reason id and context, for the one factory in core/refusals.ts.
   */
  private async take(
    saleId: string,
    customer: string,
    quantity: number,
    key: string | null,
    newIdValue: string,
    ttlMs: number | null,
    client: Db = this.pool,
    viaTicket = false,
  ): Promise<{ id: string; replayed: boolean }> {
    const r = (
      await run<TakeRow>(client, this.pool, Q.take, [saleId, customer, quantity, key, newIdValue, ttlMs, viaTicket])
    ).rows[0]!;
    return takeOutcome(r, saleId, customer, quantity, key, ttlMs === null ? 'buy' : 'reserve');
  }
}

/** What a `sale_take` answer means for the caller: the order/hold it points at, or the refusal. */
function takeOutcome(
  r: TakeRow,
  saleId: string,
  customer: string,
  quantity: number,
  key: string | null,
  kind: KeyRow['kind'],
): { id: string; replayed: boolean } {
  switch (r.outcome) {
    case 'ok':
      return { id: r.result_id!, replayed: false };
    case 'replay':
      return {
        id: checkKey(
          key!,
          { kind: r.key_kind!, customer: r.key_customer!, quantity: r.key_quantity!, result_id: r.result_id! },
          kind,
          customer,
          quantity,
        ).result_id,
        replayed: true,
      };
    case 'not_found':
      throw notFound('sale', saleId);
    default:
      throw refusedRow(r.outcome, r.ctx, { sale: saleId, customer });
  }
}

/** A stored key answers only the same request; reusing it for another is a conflict. */
function checkKey(key: string, row: KeyRow, kind: KeyRow['kind'], customer: string, quantity: number): KeyRow {
  judgeSaleKey(key, row, kind, customer, quantity);
  return row;
}

/** One statement on the step's client, or on the pool (with driver errors translated) outside a step. */
function run<R extends pg.QueryResultRow>(
  client: Db,
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return client === pool ? query<R>(pool, text, values) : (client as pg.ClientBase).query<R>(text, values);
}

const iso = (d: Date) => d.toISOString();

const alreadyExists = (id: string) => refusal('sale_exists', { sale: id });

const alreadyConfirmed = (hold: HoldRow) => refusal('hold_confirmed', { hold: hold.id, order: hold.order_id });

function toSale(row: SaleViewRow): Sale {
  const startsAt = iso(row.starts_at);
  const endsAt = iso(row.ends_at);
  const cancelledAt = row.cancelled_at === null ? null : iso(row.cancelled_at);
  const held = row.live_held;
  return {
    id: row.id,
    sku: row.sku,
    startsAt,
    endsAt,
    cap: row.cap,
    perCustomerLimit: row.per_customer_limit,
    metadata: row.metadata,
    status: saleStatus({ startsAt, endsAt, cancelledAt, cap: row.cap, sold: row.sold }, iso(row.now)),
    cancelledAt,
    createdAt: iso(row.created_at),
    stats: { sold: row.sold, held, available: row.cap === null ? null : Math.max(0, row.cap - row.sold - held) },
  };
}

function toWish(row: WishRow): WishlistEntry {
  return { sku: row.sku, customer: row.customer, channels: row.channels, createdAt: iso(row.created_at) };
}

const toHold = (row: HoldRow): Hold => holdFromRow(row, iso);

const toOrder = (row: OrderRow): Order => orderFromRow(row, iso);

/**
 * An order or hold this call just committed (or a stored answer pointed at) is missing when read
 * back on another connection: the store failed over to a standby that never received the commit.
 * The outcome is unknown to the caller, so `unavailable`; a keyed retry then runs on the new primary.
 */
function lostAfterCommit(kind: 'order' | 'hold', id: string): DibsError {
  return unavailable(
    `postgres: ${kind} '${id}' was committed but is not on the server now (a failover to a standby that had not received it)`,
  );
}
