/**
 * Flash sales on Redis: one Lua script per step (scripts/sale_*.lua, with the shared fragments
 * lib.lua and sale_lib.lua), on the server's clock (TIME), in the slot of the sale's group — every
 * sale of a SKU, the SKU's overlap index and its wishlist share one hash tag (keys.ts), so the
 * overlap check, each buy/reserve/confirm and the announcement with its wishlist notifications
 * are atomic on a Cluster too.
 *
 * Definitions reuse the shared preflight (core/sales/rules.ts) optimistically: `sale_prepare`
 * reads the clock, the SKU's sales and the index version in one snapshot, the preflight runs
 * here, and `sale_create`/`sale_update` write only if that version (and the committed units) did
 * not move — otherwise everything is read and judged again.
 *
 * Jobs that span sales (activation, expiration, the hold sweep) run group by group: the registry
 * (the prefix's own slot) lists every group that has sales, and each group keeps its own due
 * indexes (starts, ends, hold expiries), each handled by one script on the group's slot.
 *
 * Durability is the server's: without AOF (appendfsync always) an acknowledged order can be lost
 * in a crash (docs/redis.md).
 */
import { refusal } from '../../core/refusals.js';
import { randomBytes } from 'node:crypto';
import { DibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { SaleBackend, SaleViolation } from '../../core/sales/backend.js';
import { assertPreflight, saleStatus, soldOutEventViolation } from '../../core/sales/rules.js';
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
import { outboxEventId, saleGroupOf, saleKey, saleRegistry, saleTag } from './keys.js';
import { refusedReply } from './refused.js';
import { REPLAY_MS, replayKey, requestId } from './resend.js';
import { runScript, type RedisClient } from './scripts.js';
import { auditedCartViolations, RedisCarts, type AuditedCartRecord } from './carts.js';
import { roomCounterViolations } from '../shared/room-audit.js';

/** How often a definition is re-judged when concurrent definitions of its SKU keep moving the index. */
const MAX_PREFLIGHT_ROUNDS = 50;
/** Sale ids whose group is remembered in this process (the map is emptied when full). */
const GROUP_CACHE_SIZE = 10_000;
/** A registration older than this whose sale was never written (a crashed create) may be taken over. */
const STALE_REGISTRATION_MS = 60_000;

interface SaleHash {
  id: string;
  sku: string;
  starts: string;
  ends: string;
  cap: string;
  limit: string;
  meta: string;
  cancelled: string;
  created: string;
  sold: string;
  held: string;
  announced: string;
  ended: string;
  soldout?: string;
}

interface HoldRecord {
  id: string;
  sale: string;
  c: string;
  q: number;
  s: Hold['status'];
  e: number;
  ca: number;
  o?: string;
  missing?: boolean;
}

interface OrderRecord {
  id: string;
  c: string;
  q: number;
  h?: string;
  at: number;
}

interface Prepared {
  now: number;
  version: number;
  same: { id: string; s: number; e: number }[] | Record<string, never>;
  sale?: SaleHash;
  committed?: number;
}

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();
const list = <T>(value: T[] | Record<string, never> | undefined): T[] => (Array.isArray(value) ? value : []);

export class RedisSales implements SaleBackend {
  private readonly registry: ReturnType<typeof saleRegistry>;
  private readonly groupCache = new Map<string, string>();

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {
    this.registry = saleRegistry(prefix);
    this.carts = new RedisCarts(client, prefix, this);
  }

  private readonly carts: RedisCarts;

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
    const group = saleGroupOf(spec.sku);
    const tag = saleTag(this.prefix, group);
    let registered = false;
    for (let round = 0; round < MAX_PREFLIGHT_ROUNDS; round++) {
      const prepared = await this.prepare(tag, spec.sku, spec.id);
      if (prepared.sale) throw alreadyExists(spec.id);
      assertPreflight(spec, { now: iso(prepared.now), sameSku: sameSku(prepared), committed: 0 });
      // The id is claimed in the registry only for a definition the preflight accepted, so a
      // refused definition leaves nothing behind.
      if (!registered) {
        await this.register(spec.id, group);
        registered = true;
      }
      const reply = await runScript(
        this.client,
        'sale_create',
        [saleKey(tag, 'sku', spec.sku), replayKey(saleKey(tag, 'sku', spec.sku), requestId())],
        [
          tag,
          prepared.version,
          spec.id,
          spec.sku,
          Date.parse(spec.startsAt),
          Date.parse(spec.endsAt),
          spec.cap ?? '',
          spec.perCustomerLimit,
          JSON.stringify(spec.metadata),
          REPLAY_MS,
        ],
      );
      if (Array.isArray(reply)) throw refusedReply(reply, { sale: spec.id });
      if (reply === 'ok') return this.getSale(spec.id);
    }
    throw busy(spec.sku);
  }

  async getSale(id: string): Promise<Sale> {
    return this.onSale(id, (tag) => this.readSale(tag, id));
  }

  private async readSale(tag: string, id: string): Promise<Sale> {
    const reply = (await runScript(this.client, 'sale_get', [saleKey(tag, 'sale', id)], [tag, id])) as [
      string,
      string?,
    ];
    if (reply[0] === 'not_found') throw notFound('sale', id);
    const { sale, now, held } = JSON.parse(reply[1]!) as { sale: SaleHash; now: number; held: number };
    return toSale(sale, now, held);
  }

  async listSales({ limit, after, sku }: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>> {
    const index = sku ? saleKey(saleTag(this.prefix, saleGroupOf(sku)), 'skuall', sku) : this.registry.ids;
    const items: Sale[] = [];
    let cursor = after;
    // Registered ids whose sale was never written (a crashed create) are skipped.
    for (;;) {
      const want = limit + 1 - items.length;
      const ids = await this.client.zrangebylex(index, cursor ? `(${cursor}` : '-', '+', 'LIMIT', 0, want);
      const sales = await Promise.all(
        ids.map((id) => this.getSale(id).catch((error: unknown) => (isNotFound(error) ? null : Promise.reject(error)))),
      );
      for (const sale of sales) if (sale) items.push(sale);
      if (ids.length < want || items.length > limit) break;
      cursor = ids[ids.length - 1];
    }
    const page = items.slice(0, limit);
    return { items: page, nextCursor: items.length > limit ? page[page.length - 1]!.id : null };
  }

  async updateSale(id: string, patch: SalePatch): Promise<Sale> {
    return this.onSale(id, (tag) => this.updateIn(tag, id, patch));
  }

  private async updateIn(tag: string, id: string, patch: SalePatch): Promise<Sale> {
    for (let round = 0; round < MAX_PREFLIGHT_ROUNDS; round++) {
      const skuOf = await this.client.hget(saleKey(tag, 'sale', id), 'sku');
      if (skuOf === null) throw notFound('sale', id);
      const prepared = await this.prepare(tag, skuOf, id);
      const row = prepared.sale;
      if (!row) throw notFound('sale', id);
      if (row.cancelled !== '') throw refusal('sale_cancelled', { sale: id });
      const spec: SaleSpec = {
        id,
        sku: row.sku,
        startsAt: patch.startsAt ?? iso(row.starts),
        endsAt: patch.endsAt ?? iso(row.ends),
        cap: patch.cap === undefined ? capOf(row) : patch.cap,
        perCustomerLimit: patch.perCustomerLimit ?? Number(row.limit),
        metadata: patch.metadata ?? (JSON.parse(row.meta) as Record<string, unknown>),
      };
      assertPreflight(spec, {
        now: iso(prepared.now),
        sameSku: sameSku(prepared),
        committed: prepared.committed ?? 0,
        existing: { startsAt: iso(row.starts) },
      });
      const reply = await runScript(
        this.client,
        'sale_update',
        [saleKey(tag, 'sku', row.sku)],
        [
          tag,
          prepared.version,
          id,
          Date.parse(spec.startsAt),
          Date.parse(spec.endsAt),
          spec.cap ?? '',
          spec.perCustomerLimit,
          JSON.stringify(spec.metadata),
        ],
      );
      if (reply === 'not_found') throw notFound('sale', id);
      if (Array.isArray(reply)) throw refusedReply(reply, { sale: id, requested: spec.perCustomerLimit });
      if (reply === 'ok') return this.readSale(tag, id);
    }
    throw busy(id);
  }

  async cancelSale(id: string): Promise<Sale> {
    return this.onSale(id, async (tag) => {
      if ((await runScript(this.client, 'sale_cancel', [saleKey(tag, 'sale', id)], [tag, id])) === 'not_found')
        throw notFound('sale', id);
      return this.readSale(tag, id);
    });
  }

  // --- buying and holds ---

  async buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    const reply = await this.onSale(saleId, async (tag) => {
      const answer = (await runScript(
        this.client,
        'sale_buy',
        [saleKey(tag, 'sale', saleId)],
        [tag, saleId, customer, quantity, key ?? '', newId('ord')],
      )) as string[];
      if (answer[0] === 'not_found') throw notFound('sale', saleId);
      return answer;
    });
    switch (reply[0]) {
      case 'ok':
      case 'replayed':
        return { order: toOrder(saleId, JSON.parse(reply[1]!) as OrderRecord), replayed: reply[0] === 'replayed' };
      default:
        throw this.refusal(saleId, customer, key, reply);
    }
  }

  async reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    key: string | null,
  ): Promise<HoldResult> {
    const reply = await this.onSale(saleId, async (tag, group) => {
      const holdId = `hold_${group}${randomBytes(12).toString('hex')}`;
      const answer = (await runScript(
        this.client,
        'sale_reserve',
        [saleKey(tag, 'sale', saleId)],
        [tag, saleId, customer, quantity, ttlMs, key ?? '', holdId],
      )) as string[];
      if (answer[0] === 'not_found') throw notFound('sale', saleId);
      return answer;
    });
    return this.holdReply(saleId, customer, key, reply);
  }

  /** The answer of a reservation step (sale_reserve.lua, or sale_room_reserve.lua with a ticket). */
  holdReply(saleId: string, customer: string, key: string | null, reply: string[]): HoldResult {
    switch (reply[0]) {
      case 'ok':
      case 'replayed':
        return { hold: toHold(JSON.parse(reply[1]!) as HoldRecord), replayed: reply[0] === 'replayed' };
      default:
        throw this.refusal(saleId, customer, key, reply);
    }
  }

  async confirmHold(holdId: string): Promise<BuyResult> {
    const tag = holdTag(this.prefix, holdId);
    if (!tag) throw notFound('hold', holdId);
    const reply = (await runScript(
      this.client,
      'sale_confirm',
      [`${tag}:holds`],
      [tag, holdId, newId('ord')],
    )) as string[];
    switch (reply[0]) {
      case 'ok':
      case 'replayed': {
        return { order: toOrder(reply[2]!, JSON.parse(reply[1]!) as OrderRecord), replayed: reply[0] === 'replayed' };
      }
      case 'not_found':
        throw notFound('hold', holdId);
      case 'refused':
        throw refusedReply(reply, { hold: holdId });
      default:
        throw new Error(`sale_confirm.lua answered ${String(reply[0])}`);
    }
  }

  async cancelHold(holdId: string): Promise<Hold> {
    const tag = holdTag(this.prefix, holdId);
    if (!tag) throw notFound('hold', holdId);
    const reply = (await runScript(this.client, 'sale_cancel_hold', [`${tag}:holds`], [tag, holdId])) as string[];
    if (reply[0] === 'not_found') throw notFound('hold', holdId);
    if (reply[0] === 'refused') throw refusedReply(reply, { hold: holdId });
    return toHold(JSON.parse(reply[1]!) as HoldRecord);
  }

  async getHold(holdId: string): Promise<Hold> {
    const tag = holdTag(this.prefix, holdId);
    if (!tag) throw notFound('hold', holdId);
    const reply = (await runScript(this.client, 'sale_hold', [`${tag}:holds`], [tag, holdId])) as string[];
    if (reply[0] === 'not_found') throw notFound('hold', holdId);
    return toHold(JSON.parse(reply[1]!) as HoldRecord);
  }

  async listHolds(saleId: string, { limit, customer }: { limit: number; customer?: string }): Promise<Hold[]> {
    return this.onSale(saleId, async (tag) => {
      const reply = (await runScript(
        this.client,
        'sale_holds',
        [saleKey(tag, 'sale', saleId)],
        [tag, saleId, limit, customer ?? ''],
      )) as [string, string?];
      if (reply[0] === 'not_found') throw notFound('sale', saleId);
      const records = JSON.parse(reply[1]!) as HoldRecord[] | Record<string, never>;
      return (Array.isArray(records) ? records : []).map(toHold);
    });
  }

  // --- jobs (group by group) ---

  async expireHolds(limit: number): Promise<number> {
    let expired = 0;
    for (const group of await this.groups()) {
      if (expired >= limit) break;
      const tag = saleTag(this.prefix, group);
      expired += Number(await runScript(this.client, 'sale_sweep', [`${tag}:due`], [tag, limit - expired]));
    }
    return expired;
  }

  async activateDue(): Promise<ActivationResult> {
    const result: ActivationResult = { sales: [], notifications: 0 };
    for (const group of await this.groups()) {
      const tag = saleTag(this.prefix, group);
      const reply = (await runScript(this.client, 'sale_activate', [`${tag}:starts`], [tag])) as (string | number)[];
      for (let i = 0; i < reply.length; i += 2) {
        result.sales.push(String(reply[i]));
        result.notifications += Number(reply[i + 1]);
      }
    }
    return result;
  }

  async endDue(): Promise<string[]> {
    const ended: string[] = [];
    for (const group of await this.groups()) {
      const tag = saleTag(this.prefix, group);
      ended.push(...((await runScript(this.client, 'sale_end', [`${tag}:ends`], [tag])) as string[]));
    }
    return ended;
  }

  // --- wishlists ---

  async addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    const tag = saleTag(this.prefix, saleGroupOf(sku));
    const raw = (await runScript(
      this.client,
      'sale_wish',
      [saleKey(tag, 'wish', sku), saleKey(tag, 'wishx', sku)],
      [tag, customer, JSON.stringify(channels)],
    )) as string;
    return toWish(sku, customer, raw);
  }

  async removeFromWishlist(sku: string, customer: string): Promise<void> {
    const tag = saleTag(this.prefix, saleGroupOf(sku));
    const removed = await runScript(
      this.client,
      'sale_wish',
      [saleKey(tag, 'wish', sku), saleKey(tag, 'wishx', sku), replayKey(saleKey(tag, 'wish', sku), requestId())],
      [tag, customer, '', REPLAY_MS],
    );
    if (Number(removed) === 0) throw notFound('wish', `${sku}/${customer}`);
  }

  async listWishlist(sku: string, { limit, after }: { limit: number; after?: string }): Promise<Page<WishlistEntry>> {
    const tag = saleTag(this.prefix, saleGroupOf(sku));
    const customers = await this.client.zrangebylex(
      saleKey(tag, 'wishx', sku),
      after ? `(${after}` : '-',
      '+',
      'LIMIT',
      0,
      limit + 1,
    );
    const raws = customers.length ? await this.client.hmget(saleKey(tag, 'wish', sku), ...customers) : [];
    const items = customers
      .flatMap((customer, i) => (raws[i] ? [toWish(sku, customer, raws[i]!)] : []))
      .slice(0, limit);
    return { items, nextCursor: customers.length > limit ? customers[limit - 1]! : null };
  }

  // --- audit and events ---

  async auditSale(id: string): Promise<SaleViolation[]> {
    const reply = await this.onSale(id, async (tag) => {
      const answer = (await runScript(this.client, 'sale_audit', [saleKey(tag, 'sale', id)], [tag, id])) as string;
      if (answer === 'not_found') throw notFound('sale', id);
      return answer;
    });
    const snap = JSON.parse(reply) as {
      now: number;
      sale: SaleHash;
      holds: HoldRecord[] | Record<string, never>;
      orders: OrderRecord[] | Record<string, never>;
      cust: Record<string, { o: number; h?: string }>;
      events: Record<string, number>;
      active: Record<string, number>;
      carts: AuditedCartRecord[] | Record<string, never>;
      room: AuditedRoom | false;
    };
    return [
      ...(snap.room ? roomViolations(id, snap.room) : []),
      ...saleViolations(
        id,
        snap.sale,
        list(snap.holds),
        list(snap.orders),
        snap.cust,
        snap.events,
        snap.active,
        snap.now,
      ),
      ...auditedCartViolations(id, list(snap.carts), snap.now),
    ];
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
    // `after` is an event id as listed (`s~<sale>~<stream id>`) or a bare stream id.
    const from = after === undefined ? undefined : /(?:^|~)(\d+-\d+)$/.exec(after)?.[1];
    if (after !== undefined && from === undefined)
      throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    const ids = sale ? [sale] : await this.client.zrange(this.registry.ids, '0', '-1');
    const start = from ? `(${from}` : '-';
    const perSale = await Promise.all(
      ids.map(async (id) => {
        const tag = sale ? await this.tagOf(id) : await this.tagOf(id).catch(() => null);
        if (!tag) return [];
        const entries = (await this.client.xrange(saleKey(tag, 'events', id), start, '+', 'COUNT', String(limit))) as [
          string,
          string[],
        ][];
        return entries.map((entry) => ({
          at: entry[0],
          event: { ...streamEvent(entry), id: outboxEventId('s', id, entry[0]) },
        }));
      }),
    );
    return perSale
      .flat()
      .sort((a, b) => compareStreamIds(a.at, b.at))
      .slice(0, limit)
      .map((e) => e.event);
  }

  // --- helpers ---

  /** Every sale group that has (had) sales: where the jobs look. */
  async groups(): Promise<string[]> {
    return (await this.client.smembers(this.registry.groups)).sort();
  }

  /** The event stream key of every registered sale (for the outbox). */
  async eventStreams(): Promise<{ sale: string; stream: string }[]> {
    const all = await this.client.hgetall(this.registry.groupOf);
    return Object.entries(all).map(([sale, value]) => ({
      sale,
      stream: saleKey(saleTag(this.prefix, value.split('|')[0]!), 'events', sale),
    }));
  }

  /** The stream of one sale's events, or null for an unknown sale. */
  async eventStream(sale: string): Promise<string | null> {
    const value = await this.client.hget(this.registry.groupOf, sale);
    return value === null ? null : saleKey(saleTag(this.prefix, value.split('|')[0]!), 'events', sale);
  }

  private async groupOf(id: string): Promise<string> {
    const value = await this.client.hget(this.registry.groupOf, id);
    if (value === null) throw notFound('sale', id);
    const group = value.split('|')[0]!;
    if (this.groupCache.size >= GROUP_CACHE_SIZE) this.groupCache.clear();
    this.groupCache.set(id, group);
    return group;
  }

  /**
   * Runs a step on a sale's group. A sale's group never changes once the sale is written, so it is
   * remembered (one round trip per step instead of two); a step that finds no sale under a
   * remembered group (a registration that was never completed and got taken over, or a store that
   * lost its data) looks the group up again once.
   */
  async onSale<T>(id: string, step: (tag: string, group: string) => Promise<T>): Promise<T> {
    const cached = this.groupCache.get(id);
    if (cached !== undefined) {
      try {
        return await step(saleTag(this.prefix, cached), cached);
      } catch (error) {
        if (!isNotFound(error)) throw error;
        this.groupCache.delete(id);
      }
    }
    const group = await this.groupOf(id);
    return step(saleTag(this.prefix, group), group);
  }

  /** The hash tag of a sale's group (`not_found` for an unknown sale). */
  async saleTagOf(id: string): Promise<string> {
    return this.onSale(id, async (tag) => tag);
  }

  private async tagOf(id: string): Promise<string> {
    return saleTag(this.prefix, await this.groupOf(id));
  }

  private async register(id: string, group: string): Promise<void> {
    const keys = [this.registry.groupOf, this.registry.ids, this.registry.groups];
    let reply = (await runScript(this.client, 'sale_register', keys, [
      id,
      group,
      '0',
      STALE_REGISTRATION_MS,
    ])) as string[];
    if (reply[0] === 'taken') {
      // Another SKU's group has the id: a real sale, or a create that crashed before writing it.
      const other = saleTag(this.prefix, reply[1]!);
      if ((await this.client.exists(saleKey(other, 'sale', id))) === 1) throw alreadyExists(id);
      reply = (await runScript(this.client, 'sale_register', keys, [
        id,
        group,
        '1',
        STALE_REGISTRATION_MS,
      ])) as string[];
      if (reply[0] === 'taken') throw alreadyExists(id);
    }
  }

  private async prepare(tag: string, sku: string, id: string): Promise<Prepared> {
    return JSON.parse(
      (await runScript(this.client, 'sale_prepare', [saleKey(tag, 'sku', sku)], [tag, sku, id])) as string,
    ) as Prepared;
  }

  private refusal(saleId: string, customer: string, key: string | null, reply: string[]): Error {
    switch (reply[0]) {
      case 'not_found':
        return notFound('sale', saleId);
      case 'conflict': {
        const row = JSON.parse(reply[1]!) as { k: string; c: string; q: number };
        return refusal('key_reused', { key: key!, prior: { kind: row.k, quantity: row.q, customer: row.c } });
      }
      case 'refused':
        return refusedReply(reply, { sale: saleId, customer });
      default:
        return new Error(`sale script answered ${String(reply[0])}`);
    }
  }
}

/** The waiting room as sale_audit.lua reads it. */
interface AuditedRoom {
  /** false: a room from before the counters, counted at its next step. */
  counted: boolean;
  counts: Record<string, number>;
  ledger: Record<string, number>;
  unplaced: number;
  misplaced: number[] | Record<string, never>;
}

/** I4 for a waiting room: the status counters equal its tickets; once drawn, every ticket in its own place. */
function roomViolations(id: string, room: AuditedRoom): SaleViolation[] {
  const violations: SaleViolation[] = room.counted ? roomCounterViolations(id, room.counts, room.ledger) : [];
  if (room.unplaced > 0)
    violations.push({
      invariant: 'I4',
      sale: id,
      expected: 0,
      actual: room.unplaced,
      message: `the waiting room is drawn but ${room.unplaced} tickets have no place`,
    });
  const misplaced = list(room.misplaced);
  if (misplaced.length > 0)
    violations.push({
      invariant: 'I4',
      sale: id,
      message: `waiting room tickets ${misplaced.join(', ')} are not at their place in the line's index`,
    });
  return violations;
}

/** The audit's rules over one snapshot (sale_audit.lua): I2, I3, I4, I7. */
function saleViolations(
  id: string,
  sale: SaleHash,
  holds: HoldRecord[],
  orders: OrderRecord[],
  cust: Record<string, { o: number; h?: string }>,
  events: Record<string, number>,
  active: Record<string, number>,
  now: number,
): SaleViolation[] {
  const violations: SaleViolation[] = [];
  const cap = capOf(sale);
  const limit = Number(sale.limit);
  const sold = Number(sale.sold);
  const held = Number(sale.held);
  const ordered = orders.reduce((sum, o) => sum + o.q, 0);
  const activeHolds = holds.filter((h) => h.s === 'active');
  const activeUnits = activeHolds.reduce((sum, h) => sum + h.q, 0);
  const liveHolds = activeHolds.filter((h) => h.e > now);
  const live = liveHolds.reduce((sum, h) => sum + h.q, 0);
  if (ordered !== sold)
    violations.push({
      invariant: 'I4',
      sale: id,
      expected: ordered,
      actual: sold,
      message: `sold counter says ${sold} but orders hold ${ordered} units`,
    });
  if (activeUnits !== held)
    violations.push({
      invariant: 'I4',
      sale: id,
      expected: activeUnits,
      actual: held,
      message: `held counter says ${held} but active holds have ${activeUnits} units`,
    });
  if (cap !== null && ordered + live > cap)
    violations.push({
      invariant: 'I3',
      sale: id,
      expected: cap,
      actual: ordered + live,
      message: `sold ${ordered} + held ${live} exceeds the cap of ${cap}`,
    });
  const units = new Map<string, number>();
  const orderedBy = new Map<string, number>();
  for (const o of orders) {
    units.set(o.c, (units.get(o.c) ?? 0) + o.q);
    orderedBy.set(o.c, (orderedBy.get(o.c) ?? 0) + o.q);
  }
  for (const h of liveHolds) units.set(h.c, (units.get(h.c) ?? 0) + h.q);
  for (const [customer, n] of units) {
    if (n > limit)
      violations.push({
        invariant: 'I2',
        sale: id,
        customer,
        expected: limit,
        actual: n,
        message: `customer '${customer}' has ${n} units, limit ${limit}`,
      });
  }
  const orderIds = new Set(orders.map((o) => o.id));
  const holdsById = new Map(holds.map((h) => [h.id, h]));
  for (const h of holds) {
    if (h.missing)
      violations.push({
        invariant: 'I4',
        sale: id,
        message: `hold '${h.id}' is listed for the sale but has no record`,
      });
    else if (h.s === 'confirmed' && (!h.o || !orderIds.has(h.o)))
      violations.push({ invariant: 'I4', sale: id, message: `hold '${h.id}' is confirmed but has no order` });
    else if ((h.s === 'active') !== (active[h.id] !== undefined))
      violations.push({
        invariant: 'I4',
        sale: id,
        message: `hold '${h.id}' is ${h.s} but ${h.s === 'active' ? 'missing from' : 'still in'} the active index`,
      });
  }
  for (const [customer, rec] of Object.entries(cust)) {
    if (rec.o !== (orderedBy.get(customer) ?? 0))
      violations.push({
        invariant: 'I4',
        sale: id,
        customer,
        expected: orderedBy.get(customer) ?? 0,
        actual: rec.o,
        message: `customer '${customer}' is counted with ${rec.o} ordered units, orders say ${orderedBy.get(customer) ?? 0}`,
      });
    if (rec.h !== undefined && holdsById.get(rec.h)?.s !== 'active')
      violations.push({
        invariant: 'I4',
        sale: id,
        customer,
        message: `customer '${customer}' points at hold '${rec.h}', which is not active`,
      });
  }
  for (const h of activeHolds) {
    if (cust[h.c]?.h !== h.id)
      violations.push({
        invariant: 'I4',
        sale: id,
        customer: h.c,
        message: `active hold '${h.id}' is not the one its customer '${h.c}' points at`,
      });
  }
  const soldOutWrong = soldOutEventViolation(id, cap, sold, events['sale.sold_out'] ?? 0);
  if (soldOutWrong) violations.push(soldOutWrong);
  const expectEvents: [string, number][] = [
    ['hold.expired', holds.filter((h) => h.s === 'expired').length],
    ['sale.live', sale.announced !== '' ? 1 : 0],
    ['sale.ended', sale.ended !== '' && sale.cancelled === '' ? 1 : 0],
  ];
  for (const [type, expected] of expectEvents) {
    const actual = events[type] ?? 0;
    // A sale cancelled after its end was recorded keeps its one sale.ended event.
    if (
      actual !== expected &&
      !(
        type === 'sale.ended' &&
        actual === 1 &&
        sale.ended !== '' &&
        sale.cancelled !== '' &&
        Number(sale.cancelled) > Number(sale.ended)
      )
    ) {
      violations.push({
        invariant: 'I7',
        sale: id,
        expected,
        actual,
        message: `expected ${expected} ${type} event(s), found ${actual}`,
      });
    }
  }
  return violations;
}

function capOf(row: SaleHash): number | null {
  return row.cap === '' ? null : Number(row.cap);
}

function sameSku(prepared: Prepared): { id: string; startsAt: string; endsAt: string }[] {
  return list(prepared.same).map((s) => ({ id: s.id, startsAt: iso(s.s), endsAt: iso(s.e) }));
}

function toSale(row: SaleHash, now: number, held: number): Sale {
  const cap = capOf(row);
  const startsAt = iso(row.starts);
  const endsAt = iso(row.ends);
  const cancelledAt = row.cancelled === '' ? null : iso(row.cancelled);
  const sold = Number(row.sold);
  return {
    id: row.id,
    sku: row.sku,
    startsAt,
    endsAt,
    cap,
    perCustomerLimit: Number(row.limit),
    metadata: JSON.parse(row.meta) as Record<string, unknown>,
    status: saleStatus({ startsAt, endsAt, cancelledAt, cap, sold }, iso(now)),
    cancelledAt,
    createdAt: iso(row.created),
    stats: { sold, held, available: cap === null ? null : Math.max(0, cap - sold - held) },
  };
}

function toHold(rec: HoldRecord): Hold {
  return {
    id: rec.id,
    saleId: rec.sale,
    customer: rec.c,
    quantity: rec.q,
    status: rec.s,
    expiresAt: iso(rec.e),
    createdAt: iso(rec.ca),
    orderId: rec.o ?? null,
  };
}

function toOrder(saleId: string, rec: OrderRecord): Order {
  return { id: rec.id, saleId, customer: rec.c, quantity: rec.q, holdId: rec.h ?? null, createdAt: iso(rec.at) };
}

function toWish(sku: string, customer: string, raw: string): WishlistEntry {
  const value = JSON.parse(raw) as { ch: WishlistChannels; at: number };
  return { sku, customer, channels: value.ch, createdAt: iso(value.at) };
}

/** A hold id carries its sale group (`hold_<gggg><random>`); anything else is no hold of this store. */
function holdTag(prefix: string, holdId: string): string | null {
  const match = /^hold_([0-9a-f]{4})[0-9a-f]{24}$/.exec(holdId);
  return match ? saleTag(prefix, match[1]!) : null;
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

export function streamEvent([id, fields]: [string, string[]]): OutboxEvent {
  return {
    id,
    type: fieldOf(fields, 'type')!,
    idempotencyKey: fieldOf(fields, 'key')!,
    payload: JSON.parse(fieldOf(fields, 'payload') ?? '{}') as Record<string, unknown>,
    createdAt: iso(fieldOf(fields, 'at')!),
  };
}

export function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}

const alreadyExists = (id: string) => refusal('sale_exists', { sale: id });
const busy = (what: string) =>
  new DibsError('unavailable', `definitions of '${what}' kept changing concurrently; try again`, { retriable: true });
const isNotFound = (error: unknown) => error instanceof DibsError && error.code === 'not_found';
