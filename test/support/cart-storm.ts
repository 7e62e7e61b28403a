/**
 * Cart storms: carts over several sales racing single buys of the same sales' last units, in
 * several OS processes, judged by the clients' record of acknowledged answers (cart-worker.ts):
 * no line oversold, no partial cart left, per-customer limits kept, audit clean.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import type { Dibs } from '../../src/index.js';
import { runSaleStorm, type SaleOp } from './sale-storm.js';

export interface CartOp {
  customer: string;
  kind: 'cart' | 'buy';
  /** A buy has one line. */
  lines: { sale: string; quantity: number }[];
  key?: string;
  /** For a cart: confirm or cancel after `thinkMs`, keep it held, or confirm after its TTL. */
  then?: 'confirm' | 'cancel' | 'keep' | 'late';
  ttlMs: number;
  thinkMs: number;
  /**
   * A cart held before the start barrier (all workers' early carts, and nothing else, before any
   * op of the storm), its confirm or cancel in the storm: one the storm is sure to have held.
   */
  early?: boolean;
}

export interface CartOutcome {
  op: CartOp;
  step: 'hold' | 'confirm' | 'cancel' | 'buy';
  status: 'ok' | 'error';
  error?: string;
  /** `unavailable` whose outcome is unknown: the step may have been applied. */
  ambiguous?: boolean;
  cart?: string;
  replayed?: boolean;
  lines?: { sale: string; quantity: number; hold: string }[];
  orders?: { id: string; sale: string; quantity: number }[];
}

const WORKER = fileURLToPath(new URL('./cart-worker.ts', import.meta.url));

export function runCartStorm(options: {
  store: string;
  lanes: CartOp[][];
  concurrency?: number;
  timeoutMs?: number;
  /** Runs in this process while the workers work (e.g. sampling the sales). */
  during?: (done: () => boolean) => Promise<void>;
}): Promise<CartOutcome[]> {
  return runSaleStorm<CartOutcome>({
    store: options.store,
    sale: '',
    lanes: options.lanes as unknown as SaleOp[][],
    worker: WORKER,
    concurrency: options.concurrency ?? 6,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.during ? { during: options.during } : {}),
  });
}

/** What the record says each cart ended as. */
type Fate = 'active' | 'confirmed' | 'cancelled' | 'expired';

/**
 * The checker. From the record alone: every acknowledged cart's fate and lines, every acknowledged
 * order; then against the store: each sale's sold and held equal what was acknowledged (a line held
 * by a refused cart, or a cart half-confirmed, shows up as units nobody was told about), sold + held
 * ≤ cap, each customer within each sale's limit, each cart read back whole (every line's hold in the
 * cart's state), each sale's audit clean — its cart rule (I9) included, which judges the carts from
 * the store's side, before the record is read. Returns counts for the test's report.
 */
export async function checkCartStorm(
  dibs: Dibs,
  sales: { id: string; cap: number; perCustomerLimit: number }[],
  outcomes: CartOutcome[],
): Promise<{ carts: Record<Fate, number>; refused: Record<string, number>; buys: number }> {
  const wrong = outcomes.filter((o) => {
    if (o.status === 'ok') return false;
    if (o.error === 'sold_out' || o.error === 'limit_reached') return o.step !== 'hold' && o.step !== 'buy';
    if (o.error === 'conflict') return o.step !== 'hold'; // cart_line_held: the customer's other cart holds that sale
    if (o.error === 'hold_expired') return o.step !== 'confirm' || o.op.then !== 'late';
    // A step that lost to contention for the store's whole bound (Firestore: 30 s, transactions.ts)
    // answers a retriable `unavailable` and committed nothing: unacknowledged, so the record stays
    // exact (a hold that made no cart, a buy that made no order, a cart that stays as it was). One
    // whose outcome is unknown could have been applied: this checker cannot judge it.
    if (o.error === 'unavailable') return o.ambiguous === true;
    return true;
  });
  assert.deepEqual(
    wrong,
    [],
    'only sold_out, limit_reached, a line already held, late confirmations expired, and unavailable that committed nothing',
  );

  const carts = new Map<string, { customer: string; lines: CartOutcome['lines']; fate: Fate }>();
  const orders = new Map<string, { sale: string; quantity: number; customer: string }>();
  for (const o of outcomes.filter((x) => x.step === 'hold' && x.status === 'ok')) {
    const known = carts.get(o.cart!);
    if (known) assert.deepEqual(known.lines, o.lines, `a replay of cart ${o.cart} answers the same lines`);
    else carts.set(o.cart!, { customer: o.op.customer, lines: o.lines, fate: 'active' });
  }
  for (const o of outcomes) {
    if (o.step === 'hold' || o.status === 'error') {
      if (o.step === 'confirm' && o.error === 'hold_expired') carts.get(o.cart!)!.fate = 'expired';
      continue;
    }
    for (const order of o.orders ?? []) orders.set(order.id, { ...order, customer: o.op.customer });
    if (o.step === 'confirm') carts.get(o.cart!)!.fate = 'confirmed';
    if (o.step === 'cancel') carts.get(o.cart!)!.fate = 'cancelled';
  }
  const ackSold = new Map<string, number>();
  const ackHeld = new Map<string, number>();
  const perCustomer = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  for (const o of orders.values()) {
    add(ackSold, o.sale, o.quantity);
    add(perCustomer, `${o.customer}\u0000${o.sale}`, o.quantity);
  }
  for (const cart of carts.values())
    if (cart.fate === 'active')
      for (const l of cart.lines!) {
        add(ackHeld, l.sale, l.quantity);
        add(perCustomer, `${cart.customer}\u0000${l.sale}`, l.quantity);
      }

  // judged from the record alone first: what the clients were told each customer has
  const limits = new Map(sales.map((s) => [s.id, s.perCustomerLimit]));
  for (const [k, units] of perCustomer) {
    const [customer, sale] = k.split('\u0000') as [string, string];
    assert.ok(units <= limits.get(sale)!, `customer ${customer} has ${units} units of sale ${sale}`);
  }
  for (const sale of sales) {
    const { stats } = await dibs.sales.get(sale.id);
    const sold = ackSold.get(sale.id) ?? 0;
    const held = ackHeld.get(sale.id) ?? 0;
    assert.ok(sold + held <= sale.cap, `sale ${sale.id}: acknowledged sold ${sold} + held ${held} > cap ${sale.cap}`);
    assert.equal(
      stats.sold,
      sold,
      `sale ${sale.id}: the store sold ${stats.sold} units, the clients were told of ${sold}`,
    );
    assert.equal(
      stats.held,
      held,
      `sale ${sale.id}: the store holds ${stats.held} units, the clients' live carts hold ${held}`,
    );
    assert.deepEqual(await dibs.sales.audit(sale.id), [], `sale ${sale.id}: audit`);
  }
  const holdState: Record<Fate, string> = {
    active: 'active',
    confirmed: 'confirmed',
    cancelled: 'cancelled',
    expired: 'expired',
  };
  for (const [id, cart] of carts) {
    const stored = await dibs.sales.getCart(id);
    assert.equal(stored.status, cart.fate, `cart ${id}`);
    assert.deepEqual(
      stored.lines.map((l) => ({ sale: l.saleId, quantity: l.quantity, hold: l.holdId })),
      cart.lines,
      `cart ${id}: lines`,
    );
    for (const line of stored.lines) {
      const hold = await dibs.sales.hold(line.holdId);
      assert.equal(hold.status, holdState[cart.fate], `cart ${id}: the hold of sale ${line.saleId} is ${hold.status}`);
      if (cart.fate === 'confirmed') assert.ok(orders.has(line.orderId!), `cart ${id}: its order was acknowledged`);
    }
  }
  const fates: Record<Fate, number> = { active: 0, confirmed: 0, cancelled: 0, expired: 0 };
  for (const c of carts.values()) fates[c.fate]++;
  const refused: Record<string, number> = {};
  for (const o of outcomes)
    if (o.status === 'error') refused[`${o.step}:${o.error}`] = (refused[`${o.step}:${o.error}`] ?? 0) + 1;
  return { carts: fates, refused, buys: outcomes.filter((o) => o.step === 'buy' && o.status === 'ok').length };
}
