/**
 * `dibs/client`: the HTTP service from anywhere `fetch` runs (Node, Deno, Bun, Cloudflare Workers,
 * Vercel Edge, Lambda, Cloud Functions) — no Node built-ins, no dependencies. The surface mirrors
 * the library's (`client.pools.claim(pool, claimant)`, `client.sales.buy(…)`,
 * `client.locks.runExclusive(…)`), the types are generated from the service's OpenAPI document
 * (types.ts), and failures are the library's `DibsError` with the same stable codes.
 *
 * Every mutating call carries an Idempotency-Key (one per logical call, reused by its retries),
 * so retrying after a 503, a 429 or a dropped connection never claims, buys or acquires twice.
 */
import { DibsError, isDibsError } from '../core/errors.js';
import { seg, Transport, type CallOptions, type ClientOptions } from './http.js';
import type * as T from './types.js';

export { DibsError, isDibsError, ERROR_CODES, type ErrorCode } from '../core/errors.js';
export { newIdempotencyKey, type CallOptions, type ClientOptions, type RetryOptions } from './http.js';
export type * from './types.js';

type Op = keyof T.Operations;
type Out<K extends Op> = T.Operations[K]['output'];
type In<K extends Op> = T.Operations[K]['body'];

export interface Page<I> {
  items: I[];
  nextCursor: string | null;
}
export interface ListOptions {
  limit?: number;
  after?: string;
}
export type Violation = T.AuditResult['violations'][number];
export type Lease = T.Lease;
export interface AcquireOptions extends CallOptions {
  ttlMs?: number;
  waitMs?: number;
  fair?: boolean;
}
export interface RunExclusiveOptions extends AcquireOptions {
  /** Hard cap of the whole hold, renewals included; the fn's signal fires when reached. */
  maxHoldMs?: number;
}

const DEFAULT_TTL_MS = 30_000;

export function createClient(options: ClientOptions): DibsClient {
  return new DibsClient(options);
}

export class DibsClient {
  readonly pools: ClientPools;
  readonly sales: ClientSales;
  readonly waitingRooms: ClientWaitingRooms;
  readonly semaphores: ClientSemaphores;
  readonly locks: ClientLocks;
  readonly counters: ClientCounters;
  readonly limits: ClientLimits;

  constructor(options: ClientOptions) {
    const http = new Transport(options);
    this.pools = new ClientPools(http);
    this.sales = new ClientSales(http);
    this.waitingRooms = new ClientWaitingRooms(http);
    this.semaphores = new ClientSemaphores(http);
    this.locks = new ClientLocks(this.semaphores);
    this.counters = new ClientCounters(http);
    this.limits = new ClientLimits(http);
  }
}

const page = <I>(p: { data: I[]; nextCursor: string | null }): Page<I> => ({ items: p.data, nextCursor: p.nextCursor });
/**
 * A caller's own idempotency key of a claim, buy or reserve goes in the body, where the library's
 * replay rules apply (the same key later answers the same, `replayed: true`), exactly as with the
 * library; the transport's per-call header key then only covers this call's own retries.
 */
const keyed = (o: CallOptions): [Record<string, unknown>, CallOptions, { keyInBody?: true }] => {
  const { idempotencyKey, ...rest } = o;
  return idempotencyKey === undefined ? [{}, rest, {}] : [{ idempotencyKey }, rest, { keyInBody: true }];
};

export class ClientPools {
  constructor(private readonly http: Transport) {}
  create(input: In<'postV1Pools'>, o?: CallOptions): Promise<T.Pool> {
    return this.http.call({ method: 'POST', path: '/v1/pools', body: input }, o);
  }
  get(pool: string, o?: CallOptions): Promise<T.Pool> {
    return this.http.call({ method: 'GET', path: `/v1/pools/${seg(pool)}` }, o);
  }
  async list(options: ListOptions = {}, o?: CallOptions): Promise<Page<T.Pool>> {
    return page(await this.http.call<T.PoolPage>({ method: 'GET', path: '/v1/pools', query: { ...options } }, o));
  }
  update(pool: string, patch: In<'patchV1PoolsPool'>, o?: CallOptions): Promise<T.Pool> {
    return this.http.call({ method: 'PATCH', path: `/v1/pools/${seg(pool)}`, body: patch }, o);
  }
  delete(pool: string, o?: CallOptions): Promise<void> {
    return this.http.call({ method: 'DELETE', path: `/v1/pools/${seg(pool)}` }, o);
  }
  /** Codes, or `{code, startsAt?, expiresAt?}` entries, as one JSON request. */
  importCodes(
    pool: string,
    codes: Iterable<In<'postV1PoolsPoolCodes'>['codes'][number]>,
    o?: CallOptions,
  ): Promise<T.ImportResult> {
    return this.http.call({ method: 'POST', path: `/v1/pools/${seg(pool)}/codes`, body: { codes: [...codes] } }, o);
  }
  /** A CSV text (a `code` column, optional `starts_at`/`expires_at`), streamed into the store by the service. */
  importCsv(pool: string, csv: string, o?: CallOptions): Promise<T.ImportResult> {
    return this.http.call(
      { method: 'POST', path: `/v1/pools/${seg(pool)}/codes`, text: { contentType: 'text/csv', body: csv } },
      o,
    );
  }
  generate(pool: string, spec: In<'postV1PoolsPoolGenerate'>, o?: CallOptions): Promise<T.GenerateResult> {
    return this.http.call({ method: 'POST', path: `/v1/pools/${seg(pool)}/generate`, body: spec }, o);
  }
  claim(pool: string, claimant: string, o: CallOptions = {}): Promise<T.ClaimResult & { code: string }> {
    const [key, rest, flag] = keyed(o);
    return this.http.call(
      { method: 'POST', path: `/v1/pools/${seg(pool)}/claims`, body: { claimant, ...key }, ...flag },
      rest,
    );
  }
  claimMany(
    pool: string,
    claimant: string,
    count: number,
    o: CallOptions = {},
  ): Promise<T.ClaimResult & { codes: string[] }> {
    const [key, rest, flag] = keyed(o);
    return this.http.call(
      { method: 'POST', path: `/v1/pools/${seg(pool)}/claims`, body: { claimant, count, ...key }, ...flag },
      rest,
    );
  }
  async holdings(pool: string, claimant: string, o?: CallOptions): Promise<T.Code[]> {
    return (
      await this.http.call<Out<'getV1PoolsPoolClaimantsClaimant'>>(
        { method: 'GET', path: `/v1/pools/${seg(pool)}/claimants/${seg(claimant)}` },
        o,
      )
    ).codes;
  }
  code(pool: string, code: string, o?: CallOptions): Promise<T.Code> {
    return this.http.call({ method: 'GET', path: `/v1/pools/${seg(pool)}/codes/${seg(code)}` }, o);
  }
  release(
    pool: string,
    code: string,
    options: In<'postV1PoolsPoolCodesCodeRelease'> = {},
    o?: CallOptions,
  ): Promise<T.Code> {
    return this.action(pool, code, 'release', options, o);
  }
  redeem(
    pool: string,
    code: string,
    options: In<'postV1PoolsPoolCodesCodeRedeem'> = {},
    o?: CallOptions,
  ): Promise<T.Code> {
    return this.action(pool, code, 'redeem', options, o);
  }
  unredeem(
    pool: string,
    code: string,
    options: In<'postV1PoolsPoolCodesCodeUnredeem'> = {},
    o?: CallOptions,
  ): Promise<T.Code> {
    return this.action(pool, code, 'unredeem', options, o);
  }
  revoke(pool: string, code: string, o?: CallOptions): Promise<T.Code> {
    return this.action(pool, code, 'revoke', undefined, o);
  }
  hold(pool: string, code: string, claimant: string, ttlMs: number, o?: CallOptions): Promise<T.Code> {
    return this.action(pool, code, 'hold', { claimant, ttlMs }, o);
  }
  releaseHold(
    pool: string,
    code: string,
    options: In<'postV1PoolsPoolCodesCodeHoldRelease'> = {},
    o?: CallOptions,
  ): Promise<T.Code> {
    return this.action(pool, code, 'hold/release', options, o);
  }
  setCodeWindow(pool: string, code: string, window: In<'patchV1PoolsPoolCodesCode'>, o?: CallOptions): Promise<T.Code> {
    return this.http.call({ method: 'PATCH', path: `/v1/pools/${seg(pool)}/codes/${seg(code)}`, body: window }, o);
  }
  addMultiUseCode(pool: string, spec: In<'postV1PoolsPoolMultiUseCodes'>, o?: CallOptions): Promise<T.Code> {
    return this.http.call({ method: 'POST', path: `/v1/pools/${seg(pool)}/multi-use-codes`, body: spec }, o);
  }
  validate(
    pool: string,
    code: string,
    options: In<'postV1PoolsPoolCodesCodeValidate'> = {},
    o?: CallOptions,
  ): Promise<Out<'postV1PoolsPoolCodesCodeValidate'>> {
    return this.action(pool, code, 'validate', options, o);
  }
  async stats(pool: string, o?: CallOptions): Promise<T.Pool['stats']> {
    return (await this.get(pool, o)).stats;
  }
  async audit(pool: string, o?: CallOptions): Promise<Violation[]> {
    return (await this.http.call<T.AuditResult>({ method: 'GET', path: `/v1/pools/${seg(pool)}/audit` }, o)).violations;
  }
  /** Every code as CSV text (code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at). */
  exportCsv(
    pool: string,
    options: { status?: 'free' | 'claimed' | 'redeemed' | 'revoked' } = {},
    o?: CallOptions,
  ): Promise<string> {
    return this.http.call(
      { method: 'GET', path: `/v1/pools/${seg(pool)}/export`, query: { ...options }, asText: true },
      o,
    );
  }
  /** Outbox events, oldest first; of one pool, none when the pool does not exist (as in the library). */
  async events(options: { after?: string; limit?: number; pool?: string } = {}, o?: CallOptions): Promise<T.Event[]> {
    try {
      return (await this.http.call<T.EventPage>({ method: 'GET', path: '/v1/events', query: { ...options } }, o)).data;
    } catch (error) {
      if (options.pool !== undefined && isDibsError(error, 'not_found')) return [];
      throw error;
    }
  }
  private action<R>(pool: string, code: string, action: string, body: unknown, o?: CallOptions): Promise<R> {
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/pools/${seg(pool)}/codes/${seg(code)}/${action}`,
        ...(body === undefined ? {} : { body }),
      },
      o,
    );
  }
}

export class ClientSales {
  constructor(private readonly http: Transport) {}
  create(input: In<'postV1Sales'>, o?: CallOptions): Promise<T.Sale> {
    return this.http.call({ method: 'POST', path: '/v1/sales', body: input }, o);
  }
  get(sale: string, o?: CallOptions): Promise<T.Sale> {
    return this.http.call({ method: 'GET', path: `/v1/sales/${seg(sale)}` }, o);
  }
  async list(options: ListOptions & { sku?: string } = {}, o?: CallOptions): Promise<Page<T.Sale>> {
    return page(await this.http.call<T.SalePage>({ method: 'GET', path: '/v1/sales', query: { ...options } }, o));
  }
  update(sale: string, patch: In<'patchV1SalesSale'>, o?: CallOptions): Promise<T.Sale> {
    return this.http.call({ method: 'PATCH', path: `/v1/sales/${seg(sale)}`, body: patch }, o);
  }
  cancel(sale: string, o?: CallOptions): Promise<T.Sale> {
    return this.http.call({ method: 'POST', path: `/v1/sales/${seg(sale)}/cancel` }, o);
  }
  async audit(sale: string, o?: CallOptions): Promise<Violation[]> {
    return (await this.http.call<T.AuditResult>({ method: 'GET', path: `/v1/sales/${seg(sale)}/audit` }, o)).violations;
  }
  buy(sale: string, customer: string, quantity = 1, o: CallOptions = {}): Promise<T.OrderResult> {
    const [key, rest, flag] = keyed(o);
    return this.http.call(
      { method: 'POST', path: `/v1/sales/${seg(sale)}/claims`, body: { customer, quantity, ...key }, ...flag },
      rest,
    );
  }
  reserve(sale: string, customer: string, quantity: number, ttlMs: number, o: CallOptions = {}): Promise<T.HoldResult> {
    const [key, rest, flag] = keyed(o);
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/sales/${seg(sale)}/reservations`,
        body: { customer, quantity, ttlMs, ...key },
        ...flag,
      },
      rest,
    );
  }
  hold(holdId: string, o?: CallOptions): Promise<T.Hold> {
    return this.http.call({ method: 'GET', path: `/v1/reservations/${seg(holdId)}` }, o);
  }
  confirm(holdId: string, o?: CallOptions): Promise<T.OrderResult> {
    return this.http.call({ method: 'POST', path: `/v1/reservations/${seg(holdId)}/confirm` }, o);
  }
  cancelHold(holdId: string, o?: CallOptions): Promise<T.Hold> {
    return this.http.call({ method: 'POST', path: `/v1/reservations/${seg(holdId)}/cancel` }, o);
  }
  /**
   * Holds units of several sales at once — every line or none — for `ttlMs`. A refusal names the
   * line that failed (`error.details.line`). A key in `input` is the cart's own replay key.
   */
  holdCart(input: In<'postV1Carts'>, o?: CallOptions): Promise<T.CartResult> {
    return this.http.call(
      {
        method: 'POST',
        path: '/v1/carts',
        body: input,
        ...(input.idempotencyKey === undefined ? {} : { keyInBody: true }),
      },
      o,
    );
  }
  getCart(cartId: string, o?: CallOptions): Promise<T.Cart> {
    return this.http.call({ method: 'GET', path: `/v1/carts/${seg(cartId)}` }, o);
  }
  /** Every line becomes an order in one step; a confirmed cart replays its orders. */
  confirmCart(cartId: string, o?: CallOptions): Promise<T.CartOrders> {
    return this.http.call({ method: 'POST', path: `/v1/carts/${seg(cartId)}/confirm` }, o);
  }
  cancelCart(cartId: string, o?: CallOptions): Promise<T.Cart> {
    return this.http.call({ method: 'POST', path: `/v1/carts/${seg(cartId)}/cancel` }, o);
  }
  wish(
    sku: string,
    customer: string,
    channels: Omit<In<'postV1Wishlist'>, 'sku' | 'customer'> = {},
    o?: CallOptions,
  ): Promise<T.WishlistEntry> {
    return this.http.call({ method: 'POST', path: '/v1/wishlist', body: { sku, customer, ...channels } }, o);
  }
  unwish(sku: string, customer: string, o?: CallOptions): Promise<void> {
    return this.http.call({ method: 'DELETE', path: `/v1/wishlist/${seg(sku)}/${seg(customer)}` }, o);
  }
  async wishlist(sku: string, options: ListOptions = {}, o?: CallOptions): Promise<Page<T.WishlistEntry>> {
    return page(
      await this.http.call<T.WishlistPage>(
        { method: 'GET', path: `/v1/wishlist/${seg(sku)}`, query: { ...options } },
        o,
      ),
    );
  }
}

/** `dibs.waitingRooms` over HTTP; the ticket token travels in the Dibs-Ticket header. */
export class ClientWaitingRooms {
  constructor(private readonly http: Transport) {}
  enable(sale: string, spec: In<'putV1SalesSaleWaitingRoom'>, o?: CallOptions): Promise<T.WaitingRoom> {
    return this.http.call({ method: 'PUT', path: `/v1/sales/${seg(sale)}/waiting-room`, body: spec }, o);
  }
  get(sale: string, o?: CallOptions): Promise<T.WaitingRoom> {
    return this.http.call({ method: 'GET', path: `/v1/sales/${seg(sale)}/waiting-room` }, o);
  }
  join(sale: string, customer: string, o?: CallOptions): Promise<T.Ticket> {
    return this.http.call(
      { method: 'POST', path: `/v1/sales/${seg(sale)}/waiting-room/tickets`, body: { customer } },
      o,
    );
  }
  ticket(sale: string, customer: string, token: string, o?: CallOptions): Promise<T.Ticket> {
    return this.http.call(
      {
        method: 'GET',
        path: `/v1/sales/${seg(sale)}/waiting-room/tickets/${seg(customer)}`,
        headers: { 'dibs-ticket': token },
      },
      o,
    );
  }
  /** Marks a ticket verified once your own check of the customer passed (needs `sales:admin`). */
  verify(sale: string, customer: string, token: string, o?: CallOptions): Promise<T.Ticket> {
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/sales/${seg(sale)}/waiting-room/tickets/${seg(customer)}/verification`,
        headers: { 'dibs-ticket': token },
      },
      o,
    );
  }
  reserve(
    sale: string,
    customer: string,
    token: string,
    quantity: number,
    ttlMs: number,
    o?: CallOptions,
  ): Promise<T.HoldResult> {
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/sales/${seg(sale)}/waiting-room/reservations`,
        body: { customer, quantity, ttlMs },
        headers: { 'dibs-ticket': token },
      },
      o,
    );
  }
}

export class ClientSemaphores {
  constructor(private readonly http: Transport) {}

  /**
   * Waits server-side up to `waitMs` (the call's budget grows by it). The acquire carries an
   * Idempotency-Key like every write: a retry after a lost answer gets the same lease back
   * instead of taking a second slot that nobody would ever release.
   */
  acquire(key: string, limit: number, options: AcquireOptions = {}): Promise<T.Lease> {
    const { ttlMs, waitMs, fair, ...o } = options;
    const body = {
      limit,
      ...(ttlMs !== undefined ? { ttlMs } : {}),
      ...(waitMs !== undefined ? { waitMs } : {}),
      ...(fair !== undefined ? { fair } : {}),
    };
    return this.http
      .call<T.Lease>(
        {
          method: 'POST',
          path: `/v1/locks/${seg(key)}/acquire`,
          body,
          serverWaitMs: typeof waitMs === 'number' ? waitMs : 0,
        },
        o,
      )
      .catch((error: unknown) => {
        // As in the library: a wait cancelled by the caller's signal is a lock_timeout (aborted).
        // Dropping the request also ends the service's wait, so no lease is granted behind our back.
        if (isDibsError(error, 'unavailable') && error.details?.aborted === true)
          throw new DibsError('lock_timeout', `waiting for '${key}' was cancelled`, {
            details: { key, aborted: true },
            cause: error.cause,
          });
        throw error;
      });
  }
  /** A lease, or null when every slot is taken (no waiting). */
  async tryAcquire(key: string, limit: number, options: Omit<AcquireOptions, 'waitMs'> = {}): Promise<T.Lease | null> {
    try {
      return await this.acquire(key, limit, { ...options, waitMs: 0 });
    } catch (error) {
      if (isDibsError(error, 'lock_timeout')) return null;
      throw error;
    }
  }
  renew(lease: T.Lease, options: { ttlMs?: number } & CallOptions = {}): Promise<T.Lease> {
    const { ttlMs, ...o } = options;
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/locks/${seg(lease.key)}/renew`,
        body: { token: lease.token, limit: lease.limit, ...(ttlMs !== undefined ? { ttlMs } : {}) },
      },
      o,
    );
  }
  release(lease: T.Lease, o?: CallOptions): Promise<void> {
    return this.http.call(
      { method: 'POST', path: `/v1/locks/${seg(lease.key)}/release`, body: { token: lease.token } },
      o,
    );
  }
  inspect(key: string, o?: CallOptions): Promise<T.LockInfo> {
    return this.http.call({ method: 'GET', path: `/v1/locks/${seg(key)}` }, o);
  }

  /**
   * Runs `fn` holding a slot, renewing the lease at 80 % of its validity; `signal` fires when the
   * lease is lost (a renewal refused or not answered before the lease lapsed by this process's
   * clock, or `maxHoldMs` reached): stop writing then, the fence may be stale. Released after `fn`.
   */
  async runExclusive<R>(
    key: string,
    limit: number,
    fn: (signal: AbortSignal, lease: T.Lease) => Promise<R>,
    options: RunExclusiveOptions = {},
  ): Promise<R> {
    const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    const { maxHoldMs, ...acquireOptions } = options;
    let lease = await this.acquire(key, limit, acquireOptions);
    const lost = new AbortController();
    const lose = (reason: string) => {
      if (!lost.signal.aborted)
        lost.abort(
          new DibsError('lease_lost', `lease on '${key}' was lost (${reason}); acquire again`, {
            details: { key, reason },
          }),
        );
    };
    const started = Date.now();
    // The lease lapses validForMs after the grant as the store measured it; measured from the
    // answer's arrival here, which is later, so this fires no later than the store's expiry minus
    // the answer's transit — on the safe side.
    const expiryTimer = () => setTimeout(() => lose('expired'), lease.validForMs);
    let expiry = expiryTimer();
    let renewTimer: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      renewTimer = setTimeout(
        async () => {
          if (lost.signal.aborted) return;
          if (maxHoldMs !== undefined && Date.now() - started >= maxHoldMs) return lose('maxHoldMs reached');
          try {
            // Bounded by what is left of the lease: an answer after expiry is worthless.
            lease = await this.renew(lease, { ttlMs, timeoutMs: Math.max(1, lease.validForMs * 0.2) });
            if (lost.signal.aborted) return;
            clearTimeout(expiry);
            expiry = expiryTimer();
            schedule();
          } catch {
            lose('renew failed');
          }
        },
        Math.max(10, Math.floor(Math.min(ttlMs, lease.validForMs) * 0.8)),
      );
    };
    schedule();
    const cap = maxHoldMs !== undefined ? setTimeout(() => lose('maxHoldMs reached'), maxHoldMs) : undefined;
    try {
      return await fn(lost.signal, lease);
    } finally {
      clearTimeout(renewTimer);
      clearTimeout(expiry);
      clearTimeout(cap);
      if (!lost.signal.aborted) await this.release(lease).catch(() => undefined);
      lost.abort('released');
    }
  }
}

/** Mutual exclusion = a semaphore of one. */
export class ClientLocks {
  constructor(private readonly semaphores: ClientSemaphores) {}
  acquire(key: string, options?: AcquireOptions) {
    return this.semaphores.acquire(key, 1, options);
  }
  tryAcquire(key: string, options?: Omit<AcquireOptions, 'waitMs'>) {
    return this.semaphores.tryAcquire(key, 1, options);
  }
  renew(lease: T.Lease, options?: { ttlMs?: number } & CallOptions) {
    return this.semaphores.renew(lease, options);
  }
  release(lease: T.Lease, o?: CallOptions) {
    return this.semaphores.release(lease, o);
  }
  inspect(key: string, o?: CallOptions) {
    return this.semaphores.inspect(key, o);
  }
  runExclusive<R>(key: string, fn: (signal: AbortSignal, lease: T.Lease) => Promise<R>, options?: RunExclusiveOptions) {
    return this.semaphores.runExclusive(key, 1, fn, options);
  }
}

export class ClientCounters {
  constructor(private readonly http: Transport) {}
  get(name: string, o?: CallOptions): Promise<T.Counter> {
    return this.http.call({ method: 'GET', path: `/v1/counters/${seg(name)}` }, o);
  }
  /**
   * Not idempotent by nature, so the Idempotency-Key matters here most: a retried increment after
   * a lost answer is replayed, never added twice.
   */
  incr(name: string, by = 1, o?: CallOptions): Promise<T.Counter> {
    return this.http.call({ method: 'POST', path: `/v1/counters/${seg(name)}`, body: { by } }, o);
  }
  decr(name: string, by = 1, o?: CallOptions): Promise<T.Counter> {
    return this.incr(name, -by, o);
  }
  reset(name: string, o?: CallOptions): Promise<void> {
    return this.http.call({ method: 'DELETE', path: `/v1/counters/${seg(name)}` }, o);
  }
}

/** The longest one `/wait` request waits server-side. */
const SERVER_WAIT_MAX_MS = 60_000;

export class ClientLimits {
  constructor(private readonly http: Transport) {}
  create(input: In<'postV1Limits'>, o?: CallOptions): Promise<T.Limit> {
    return this.http.call({ method: 'POST', path: '/v1/limits', body: input }, o);
  }
  async list(o?: CallOptions): Promise<T.Limit[]> {
    return (await this.http.call<T.LimitList>({ method: 'GET', path: '/v1/limits' }, o)).data;
  }
  get(name: string, o?: CallOptions): Promise<T.Limit> {
    return this.http.call({ method: 'GET', path: `/v1/limits/${seg(name)}` }, o);
  }
  update(name: string, changes: In<'patchV1LimitsName'>, o?: CallOptions): Promise<T.Limit> {
    return this.http.call({ method: 'PATCH', path: `/v1/limits/${seg(name)}`, body: changes }, o);
  }
  delete(name: string, o?: CallOptions): Promise<void> {
    return this.http.call({ method: 'DELETE', path: `/v1/limits/${seg(name)}` }, o);
  }
  /** Takes `n` units for `key` now, or answers the exact wait (`allowed: false`, `retryAfterMs`). */
  take(name: string, n = 1, options: { key?: string } & CallOptions = {}): Promise<T.LimitDecision> {
    const { key, ...o } = options;
    return this.http.call(
      { method: 'POST', path: `/v1/limits/${seg(name)}/take`, body: { n, ...(key !== undefined ? { key } : {}) } },
      o,
    );
  }
  /** What a take of `n` would answer now (units left, or the exact wait), without taking anything. */
  peek(name: string, n = 1, options: { key?: string } & CallOptions = {}): Promise<T.LimitDecision> {
    const { key, ...o } = options;
    return this.http.call(
      { method: 'GET', path: `/v1/limits/${seg(name)}/peek`, query: { n, ...(key !== undefined ? { key } : {}) } },
      o,
    );
  }
  /**
   * Takes `n` units, the service sleeping out the exact wait the store computed, up to `waitMs`
   * (default and most: 60 s); not admitted by then: `rate_limited`.
   */
  waitFor(
    name: string,
    n = 1,
    options: { key?: string; waitMs?: number } & CallOptions = {},
  ): Promise<T.LimitDecision> {
    const { key, waitMs = SERVER_WAIT_MAX_MS, ...o } = options;
    return this.http.call(
      {
        method: 'POST',
        path: `/v1/limits/${seg(name)}/wait`,
        body: { n, waitMs, ...(key !== undefined ? { key } : {}) },
        serverWaitMs: waitMs,
      },
      o,
    );
  }
  /** Gives `key` its full allowance back. */
  reset(name: string, options: { key?: string } & CallOptions = {}): Promise<void> {
    const { key, ...o } = options;
    return this.http.call(
      { method: 'POST', path: `/v1/limits/${seg(name)}/reset`, body: key !== undefined ? { key } : {} },
      o,
    );
  }
}
