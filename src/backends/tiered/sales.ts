/**
 * Tiered mode's sales: the ledger's SaleBackend (SQLite or PostgreSQL) with `buy` served through a
 * Redis fast path while Redis is healthy. See docs/sales.md "Tiered mode".
 *
 * - The ledger grants capacity of a capped sale to Redis in chunks (escrow rows, GrantLedger).
 * - Redis decides a buy in one script (scripts/tiered_take.lua): idempotency, per-customer limit and the
 *   units left in the current grant. Losers and over-limit customers are refused there, without
 *   touching the ledger.
 * - A winner is acknowledged only after its order is durable in the ledger: one ledger step that
 *   judges key, window and limit again and consumes units of *that grant* (open, used < size). A
 *   refused write gives the units back; a revoked grant sends the buyer to the ledger path.
 * - Redis unreachable or slow: a circuit breaker sends buys straight to the ledger path, which
 *   revokes the sale's grants when it finds everything granted (their unused units come back).
 * - Redis lost its data (FLUSHALL, restart without persistence): the state key is missing; one
 *   caller revokes every open grant of the sale in the ledger before anything is granted again.
 * - Redis rolled back (failover to a lagging replica, an older RDB): its state names an older grant
 *   generation (`gen`, the newest grant it was given; grant ids only grow). When it asks for a
 *   refill, or the ledger path finds everything granted, the ledger reclaims the open grants newer
 *   than that generation: no Redis state sells from them.
 * - Reservations, confirmations and everything else go to the ledger; when a reservation finds all
 *   units granted, the current grant is sealed in Redis and its unsold units taken back first.
 */
import { judgeSaleKey } from '../../core/model/sales.js';
import type { SaleBackend, SaleViolation } from '../../core/sales/backend.js';
import type { GrantedTake, GrantLedger } from '../../core/sales/grants.js';
import { isDibsError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
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
import { loadScripts, runScript, type RedisClient } from '../redis/scripts.js';
import { tieredSaleKeys } from '../redis/keys.js';
import { refusedReply } from '../redis/refused.js';
import { translateRedisError } from '../redis/errors.js';

/** The fast path's scripts (tiered/scripts/*.lua), with Redis' shared Lua fragment in front. */
const SCRIPT_NAMES = ['tiered_take', 'tiered_install', 'tiered_return', 'tiered_seal'] as const;
type TieredScript = (typeof SCRIPT_NAMES)[number];
const SCRIPTS = loadScripts(new URL('./scripts/', import.meta.url), SCRIPT_NAMES);

export interface TieredOptions {
  /** Redis key prefix. */
  prefix: string;
  /** Units per grant. */
  chunk: number;
  /** A grant is revoked this long after it was made if still open (bounds units stranded by a process that died mid-buy). */
  grantTtlMs: number;
  /** How long Redis answers sold_out (or sends a sale to the ledger path) before asking the ledger again. */
  recheckMs: number;
  /** How long the circuit stays open after a Redis failure. */
  breakerMs: number;
  /** Lease of the one caller that reconciles or refills a sale. */
  leaseMs: number;
}

/** Thrown inside this module when Redis failed; never leaves it. */
class RedisDown extends Error {}

const MAX_ROUNDS = 4;
/** How long a buyer waits for another caller's refill or reconciliation before taking the ledger path. */
const BUSY_WAIT_MS = 500;
const DAY_MS = 86_400_000;

type TakeReply =
  | ['lost']
  | ['busy']
  | ['ledger']
  | ['refused', ...unknown[]]
  | ['replay', string]
  | ['refill', string, number, string]
  | ['ok', string];

/**
 * Circuit breakers by failure domain: one for a single Redis node; one per sale on a Cluster, where
 * a master that is down or flushed affects only the sales in its slots (each sale's keys share
 * one slot), so the others keep their fast path.
 */
export class CircuitBreakers {
  private readonly openUntil = new Map<string, number>();
  constructor(
    private readonly openMs: number,
    private readonly perSale: boolean,
  ) {}
  open(saleId: string): boolean {
    const key = this.keyOf(saleId);
    const until = this.openUntil.get(key);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.openUntil.delete(key);
    return false;
  }
  fail(saleId: string): void {
    this.openUntil.set(this.keyOf(saleId), Date.now() + this.openMs);
  }
  /** How many breakers are open now (health). */
  openCount(): number {
    const now = Date.now();
    for (const [key, until] of this.openUntil) if (until <= now) this.openUntil.delete(key);
    return this.openUntil.size;
  }
  private keyOf(saleId: string): string {
    return this.perSale ? saleId : '';
  }
}

/** The last Redis failure that opened a breaker (health reports it while a breaker is open). */
export interface FastPathFailure {
  /** The server's error code for a node that answers but refuses (READONLY, OOM, …); absent for a lost connection. */
  reason?: string;
  message: string;
  at: string;
}

export class TieredSales implements SaleBackend {
  readonly breaker: CircuitBreakers;
  lastFailure: FastPathFailure | null = null;
  /** In-process single flight of reconciliations/refills per sale. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly ledger: SaleBackend,
    private readonly grants: GrantLedger,
    private readonly redis: RedisClient,
    private readonly options: TieredOptions,
    cluster: boolean,
  ) {
    this.breaker = new CircuitBreakers(options.breakerMs, cluster);
  }

  // --- the fast path ---

  async buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    if (this.breaker.open(saleId)) return this.ledgerBuy(saleId, customer, quantity, key, true);
    try {
      return await this.fastBuy(saleId, customer, quantity, key);
    } catch (error) {
      if (!(error instanceof RedisDown)) throw error;
      // A failed or timed-out script may still have run: a unit Redis gave away without a ledger
      // write would stay in its grant. Revoke the sale's grants (their unused units come back; Redis
      // state from before is refused by the ledger from now on), then sell from the ledger.
      await this.grants.revokeGrants(saleId).catch(() => {});
      return this.ledgerBuy(saleId, customer, quantity, key, true);
    }
  }

  private async fastBuy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    const busyUntil = Date.now() + BUSY_WAIT_MS;
    let refills = 0;
    for (let round = 0; ; round++) {
      const orderId = newId('ord');
      const reply = (await this.script('tiered_take', saleId, [
        customer,
        quantity,
        key ?? '',
        orderId,
        this.options.leaseMs,
      ])) as TakeReply;
      switch (reply[0]) {
        case 'lost':
          await this.track(saleId, () => this.reconcile(saleId));
          break;
        case 'busy': {
          const running = this.inFlight.get(saleId);
          if (running) await running;
          else if (Date.now() < busyUntil) await sleep(2 + Math.random() * 8);
          else return this.ledgerBuy(saleId, customer, quantity, key, false);
          round--; // waiting is not a round
          break;
        }
        case 'ledger':
          return this.ledgerBuy(saleId, customer, quantity, key, false);
        case 'refused':
          throw refusedReply(reply, { sale: saleId, customer });
        case 'replay': {
          const [who, qty, id, won] = reply[1].split('\t');
          judgeSaleKey(key!, { kind: 'buy', customer: who!, quantity: Number(qty) }, 'buy', customer, quantity);
          const order = await this.grants.getOrder(id!);
          if (order) return { order, replayed: true };
          // Decided here but not (yet) in the ledger: the first request's write is still under way
          // (or its process died). Write that same win — its order id, its grant — so the unit Redis
          // gave the first request is the one sold. Selling from the ledger instead took a second
          // unit, and the first request, finding the key taken, gave its unit back late: once the
          // storm's other buyers had all been told sold_out, it stayed unsold (sold 9 of 10).
          // Records of earlier builds name no grant: the ledger path decides (and keeps) the key.
          if (won) {
            const taken = await this.grants.takeGranted(saleId, won, customer, quantity, key, id!);
            if (taken.outcome !== 'revoked') return { order: taken.order, replayed: true };
          }
          return this.ledgerBuy(saleId, customer, quantity, key, false);
        }
        case 'refill':
          if (++refills > 1 || round >= MAX_ROUNDS) {
            // This buy asks for more than a fresh grant gives: refill for the others, then let the ledger answer.
            await this.track(saleId, () => this.refill(saleId, reply[1], Number(reply[2]), reply[3]));
            return this.ledgerBuy(saleId, customer, quantity, key, false);
          }
          await this.track(saleId, () => this.refill(saleId, reply[1], Number(reply[2]), reply[3]));
          break;
        case 'ok':
          return this.writeWin(saleId, reply[1], customer, quantity, key, orderId);
      }
      if (round >= MAX_ROUNDS) return this.ledgerBuy(saleId, customer, quantity, key, false);
    }
  }

  /** Redis said yes: the order becomes durable in the ledger against the grant, or the decision is undone. */
  private async writeWin(
    saleId: string,
    grant: string,
    customer: string,
    quantity: number,
    key: string | null,
    orderId: string,
  ): Promise<BuyResult> {
    let taken: GrantedTake;
    try {
      taken = await this.grants.takeGranted(saleId, grant, customer, quantity, key, orderId);
    } catch (error) {
      // limit_reached / not_live / conflict (or the ledger is down): nothing was written.
      await this.giveBack(saleId, grant, customer, quantity, key, 'give');
      // A waiting room was enabled while this grant was out: stop selling from Redis at once (the
      // grants come back, the next buyer reconciles and finds the sale ledger-only).
      if (isDibsError(error, 'ticket_required')) await this.resetFastPath(saleId).catch(() => {});
      throw error;
    }
    if (taken.outcome === 'ok') return { order: taken.order, replayed: false };
    if (taken.outcome === 'replay') {
      // A retry of this request found its win not yet written and wrote it (fastBuy, 'replay'):
      // this win's unit is the order's; nothing goes back.
      if (taken.order.id === orderId) return { order: taken.order, replayed: false };
      await this.giveBack(saleId, grant, customer, quantity, null, 'give');
      return { order: taken.order, replayed: true };
    }
    // The grant was revoked (reconciled) or expired: stop selling from it; the ledger path serves this buyer.
    await this.giveBack(saleId, grant, customer, quantity, key, 'drop');
    return this.ledgerBuy(saleId, customer, quantity, key, false);
  }

  /** Undoes a Redis decision; units Redis cannot take back (its grant moved on) go back to the ledger. */
  private async giveBack(
    saleId: string,
    grant: string,
    customer: string,
    quantity: number,
    key: string | null,
    what: 'give' | 'drop',
  ): Promise<void> {
    let back = 0;
    try {
      back = Number(await this.script('tiered_return', saleId, [grant, customer, quantity, key ?? '', what]));
    } catch {
      // Redis is gone: its state will be reconciled from the ledger anyway.
    }
    if (back !== 0 || what !== 'give') return;
    // The grant moved on: the units go back to the ledger, and a sold-out answer Redis may be
    // giving meanwhile is forgotten, so the next buyer gets them (not only after the recheck).
    const returned = await this.grants.closeGrant(grant, quantity).catch(() => 0);
    if (returned > 0) await this.script('tiered_return', saleId, [grant, customer, 0, '', 'recheck']).catch(() => {});
  }

  /** The ledger path. `redisDown`: when everything is granted, revoke the grants (Redis cannot sell them now) and try again. */
  private async ledgerBuy(
    saleId: string,
    customer: string,
    quantity: number,
    key: string | null,
    redisDown: boolean,
  ): Promise<BuyResult> {
    return this.withReclaim(saleId, redisDown, () => this.ledger.buy(saleId, customer, quantity, key));
  }

  private async withReclaim<T>(saleId: string, redisDown: boolean, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (!isDibsError(error, 'sold_out')) throw error;
      if ((await this.reclaim(saleId, redisDown)) === 0) throw error;
      return step();
    }
  }

  /**
   * Takes unsold granted units back into the ledger: seal Redis' current grant and reclaim grants
   * newer than any Redis knows (orphaned by a rollback of Redis' state), or revoke every grant
   * when Redis is down.
   */
  private async reclaim(saleId: string, redisDown: boolean): Promise<number> {
    if (!redisDown && !this.breaker.open(saleId)) {
      try {
        const [grant, left, gen] = (await this.script('tiered_seal', saleId, [])) as [string, number, string];
        const closed = grant === '' ? 0 : await this.grants.closeGrant(grant, Number(left));
        return closed + (gen === '' ? 0 : await this.grants.revokeGrants(saleId, gen));
      } catch (error) {
        if (!(error instanceof RedisDown)) throw error;
      }
    }
    return this.grants.revokeGrants(saleId);
  }

  /** After Redis lost the sale's state: revoke every open grant (their unused units come back), then grant afresh. */
  private async reconcile(saleId: string): Promise<void> {
    const g = await this.grants.grant(saleId, this.options.chunk, this.options.grantTtlMs, true);
    await this.install(saleId, 'fresh', g, '');
  }

  /**
   * The current grant cannot serve a buy: return its unsold units, then grant the next chunk. `gen`
   * is the newest grant Redis' state was given: an open grant newer than that was made for a state
   * Redis no longer has (it rolled back: failover to a lagging replica, restore of an older RDB);
   * no Redis state sells from it, so the ledger reclaims it in the same step.
   */
  private async refill(saleId: string, sealed: string, left: number, gen: string): Promise<void> {
    if (sealed !== '' && left > 0) await this.grants.closeGrant(sealed, left);
    const g = await this.grants.grant(
      saleId,
      this.options.chunk,
      this.options.grantTtlMs,
      false,
      gen === '' ? null : gen,
    );
    await this.install(saleId, 'refill', g, sealed);
  }

  private async install(
    saleId: string,
    how: 'fresh' | 'refill',
    g: Awaited<ReturnType<GrantLedger['grant']>>,
    prev: string,
  ): Promise<void> {
    const { recheckMs } = this.options;
    if (g.outcome === 'not_live' || g.outcome === 'ledger_only') {
      await this.script('tiered_install', saleId, ['ledger', '', 0, 0, 0, prev, recheckMs, recheckMs]);
      return;
    }
    const ends = Date.parse(g.endsAt);
    const ttl = Math.max(ends - Date.now(), 0) + DAY_MS;
    const grant = g.outcome === 'ok' ? g.grantId : '';
    const size = g.outcome === 'ok' ? g.size : 0;
    let installed = 0;
    try {
      installed = Number(
        await this.script('tiered_install', saleId, [how, grant, size, g.perCustomerLimit, ends, prev, ttl, recheckMs]),
      );
    } finally {
      // Not installed (the state moved on, or Redis failed): the new grant goes straight back.
      if (installed !== 1 && grant !== '') await this.grants.closeGrant(grant, size);
    }
  }

  /**
   * Runs a reconciliation/refill this caller was chosen for (Redis hands the lease to one caller),
   * and lets buyers of this process that Redis told to wait await it instead of polling.
   */
  private async track(saleId: string, fn: () => Promise<void>): Promise<void> {
    const p = fn();
    const settled = p
      .catch(() => {})
      .finally(() => {
        if (this.inFlight.get(saleId) === settled) this.inFlight.delete(saleId);
      });
    this.inFlight.set(saleId, settled);
    return p;
  }

  private async script(name: TieredScript, saleId: string, args: (string | number)[]): Promise<unknown> {
    const k = tieredSaleKeys(this.options.prefix, saleId);
    try {
      return await runScript(this.redis, SCRIPTS[name], [k.state, k.customers, k.keys], args);
    } catch (error) {
      const translated = translateRedisError(error);
      if (isDibsError(translated, 'unavailable')) {
        this.breaker.fail(saleId);
        const reason = translated.details?.reason;
        this.lastFailure = {
          ...(typeof reason === 'string' ? { reason } : {}),
          message: (error as Error).message,
          at: new Date().toISOString(),
        };
        throw new RedisDown((error as Error).message);
      }
      throw translated;
    }
  }

  /** Forgets the sale's fast-path state after its definition changed (best effort: the grants are revoked in the ledger anyway). */
  private async forget(saleId: string): Promise<void> {
    const k = tieredSaleKeys(this.options.prefix, saleId);
    if (this.breaker.open(saleId)) return;
    await this.redis.del(k.state, k.customers, k.keys).catch(() => this.breaker.fail(saleId));
  }

  /** Revokes every grant of the sale and drops its Redis state: the next buy reconciles and grants afresh. */
  async resetFastPath(saleId: string): Promise<number> {
    const units = await this.grants.revokeGrants(saleId);
    await this.forget(saleId);
    return units;
  }

  // --- everything else is the ledger's ---

  async reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
  ): Promise<HoldResult> {
    return this.withReclaim(saleId, this.breaker.open(saleId), () =>
      this.ledger.reserve(saleId, customer, quantity, ttlMs, key),
    );
  }

  /**
   * Carts are held by the ledger, like every hold. A line refused `sold_out` while the fast path
   * sits on unsold units of its sale gets them back (as a reservation does) and the cart is tried
   * again — at most once per line.
   */
  async holdCart(spec: CartSpec): Promise<CartResult> {
    const reclaimed = new Set<string>();
    for (;;) {
      try {
        return await this.ledger.holdCart(spec);
      } catch (error) {
        const sale = isDibsError(error, 'sold_out') ? (error.details?.sale as string | undefined) : undefined;
        if (sale === undefined || reclaimed.has(sale)) throw error;
        reclaimed.add(sale);
        if ((await this.reclaim(sale, this.breaker.open(sale))) === 0) throw error;
      }
    }
  }

  confirmCart(cartId: string): Promise<CartOrders> {
    return this.ledger.confirmCart(cartId);
  }

  cancelCart(cartId: string): Promise<Cart> {
    return this.ledger.cancelCart(cartId);
  }

  getCart(cartId: string): Promise<Cart> {
    return this.ledger.getCart(cartId);
  }

  createSale(spec: SaleSpec): Promise<Sale> {
    return this.ledger.createSale(spec);
  }

  getSale(id: string): Promise<Sale> {
    return this.ledger.getSale(id);
  }

  listSales(options: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>> {
    return this.ledger.listSales(options);
  }

  async updateSale(id: string, patch: SalePatch): Promise<Sale> {
    // Granted units come back first, so a lower cap is judged against what is really sold and held.
    await this.grants.revokeGrants(id);
    const sale = await this.ledger.updateSale(id, patch);
    await this.forget(id);
    return sale;
  }

  async cancelSale(id: string): Promise<Sale> {
    const sale = await this.ledger.cancelSale(id);
    await this.resetFastPath(id);
    return this.ledger.getSale(sale.id);
  }

  confirmHold(holdId: string): Promise<BuyResult> {
    return this.ledger.confirmHold(holdId);
  }

  cancelHold(holdId: string): Promise<Hold> {
    return this.ledger.cancelHold(holdId);
  }

  getHold(holdId: string): Promise<Hold> {
    return this.ledger.getHold(holdId);
  }

  /** Holds live only in the ledger. */
  get listHolds(): SaleBackend['listHolds'] {
    return this.ledger.listHolds?.bind(this.ledger);
  }

  async expireHolds(limit: number): Promise<number> {
    // The units-sync part of the sweep: grants past their expiry give their unused units back.
    await this.grants.expireGrants(limit);
    return this.ledger.expireHolds(limit);
  }

  addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    return this.ledger.addToWishlist(sku, customer, channels);
  }

  removeFromWishlist(sku: string, customer: string): Promise<void> {
    return this.ledger.removeFromWishlist(sku, customer);
  }

  listWishlist(sku: string, options: { limit: number; after?: string }): Promise<Page<WishlistEntry>> {
    return this.ledger.listWishlist(sku, options);
  }

  activateDue(): Promise<ActivationResult> {
    return this.ledger.activateDue();
  }

  endDue(): Promise<string[]> {
    return this.ledger.endDue();
  }

  async auditSale(id: string): Promise<SaleViolation[]> {
    return [...(await this.ledger.auditSale(id)), ...(await this.grants.auditGrants(id))];
  }

  listSaleEvents(options: { after?: string; limit: number; sale?: string }): Promise<OutboxEvent[]> {
    return this.ledger.listSaleEvents(options);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
