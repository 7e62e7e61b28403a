/**
 * Model-based test of flash sales: fast-check command sequences (buy, reserve, confirm, cancel a
 * hold, per-customer limit and cap changes, cancelling the sale) run against a real store through
 * the facade AND against an in-memory model built on core/model/sales.ts and the preflight of
 * core/sales/rules.ts. Every answer (result, or refusal code — and message where the model phrases
 * it) and the final state (sold, held, every hold, a clean audit) must match.
 *
 * Holds last ten minutes — or, in the expiry runs, a fraction of a second (`short`), with an
 * `advance` command that waits past them and a `sweep` (the hold-expiry job): then the store's
 * clock decides that a hold is expired (its units back in stock and off the customer's count,
 * confirming it refused, cancelling it a no-op). clock.ts keeps every step plainly before or after
 * each expiry. A scheduled sale starts tomorrow.
 * Seeded and shrinking like pool-model.ts (same DIBS_MODEL_* variables).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Dibs } from '../../src/index.js';
import {
  judgeBuy,
  judgeCustomerLimitChange,
  judgeReserve,
  judgeSaleKey,
  type SaleKeyKind,
  type SaleState,
} from '../../src/core/model/sales.js';
import { assertPreflight } from '../../src/core/sales/rules.js';
import { refusal } from '../../src/core/refusals.js';
import type { BuyResult, HoldResult, Hold } from '../../src/core/sales/types.js';
import { modelRuns } from './pool-model.js';
import { attempt, judged, sameAnswer, tally, type Outcome } from './outcome.js';
import { advance, settle, type Expiry } from './clock.js';

const CUSTOMERS = ['ann', 'bob', 'cat'] as const;
const KEYS = ['k1', 'k2', 'k3'] as const;
const HOLD_MS = 600_000;
const DAY = 86_400_000;

export type SaleCommand =
  | { op: 'buy'; customer: string; quantity: number; key: string | null }
  | { op: 'reserve'; customer: string; quantity: number; key: string | null; short: boolean }
  | { op: 'advance' }
  | { op: 'sweep' }
  | { op: 'confirm'; hold: number }
  | { op: 'cancelHold'; hold: number }
  | { op: 'limit'; perCustomerLimit: number }
  | { op: 'cap'; cap: number | null }
  | { op: 'cancelSale' };

export interface SaleScenario {
  scheduled: boolean;
  cap: number | null;
  perCustomerLimit: number;
  commands: SaleCommand[];
}

const customer = fc.constantFrom(...CUSTOMERS);
const key = fc.option(fc.constantFrom(...KEYS), { nil: null, freq: 2 });
const commands = (expiry: boolean): fc.Arbitrary<SaleCommand> =>
  fc.oneof(
    {
      weight: 18,
      arbitrary: fc.record({
        op: fc.constant('buy' as const),
        customer,
        quantity: fc.integer({ min: 1, max: 3 }),
        key,
      }),
    },
    {
      weight: 12,
      arbitrary: fc.record({
        op: fc.constant('reserve' as const),
        customer,
        quantity: fc.integer({ min: 1, max: 3 }),
        key,
        short: expiry ? fc.boolean() : fc.constant(false),
      }),
    },
    { weight: 9, arbitrary: fc.record({ op: fc.constant('confirm' as const), hold: fc.nat(5) }) },
    { weight: 6, arbitrary: fc.record({ op: fc.constant('cancelHold' as const), hold: fc.nat(5) }) },
    {
      weight: 3,
      arbitrary: fc.record({ op: fc.constant('limit' as const), perCustomerLimit: fc.integer({ min: 1, max: 4 }) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('cap' as const),
        cap: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null, freq: 4 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ op: 'cancelSale' as const }) },
    ...(expiry
      ? [
          { weight: 5, arbitrary: fc.constant({ op: 'advance' as const }) },
          { weight: 2, arbitrary: fc.constant({ op: 'sweep' as const }) },
        ]
      : []),
  );

export const saleScenarios = (maxCommands: number, expiry = false): fc.Arbitrary<SaleScenario> =>
  fc.record({
    scheduled: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    cap: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null, freq: 4 }),
    perCustomerLimit: fc.integer({ min: 1, max: 4 }),
    commands: fc.array(commands(expiry), { minLength: 1, maxLength: maxCommands, size: 'max' }),
  });

interface ModelHold {
  id: string;
  customer: string;
  quantity: number;
  /**
   * An active hold past `expiresAt` (by the store's clock) is expired. `lapsed`: it had expired when
   * its sale was cancelled — every store then reads it `cancelled`, unless a step had already
   * recorded the expiry (`expired`); the model follows the store's first answer about it.
   */
  status: 'active' | 'confirmed' | 'cancelled' | 'lapsed';
  expiresAt: string;
  orderId: string | null;
}

const statusAt = (h: ModelHold, now: string) =>
  h.status === 'active' && h.expiresAt <= now ? ('expired' as const) : h.status;

/** A lapsed hold as the store first showed it: expired (its expiry recorded first) or cancelled. */
const follow = (h: ModelHold, expired: boolean) => {
  h.status = expired ? 'active' : 'cancelled';
};

class SaleModel {
  readonly holds: ModelHold[] = [];
  readonly orders = new Map<string, number>();
  readonly keys = new Map<string, { kind: SaleKeyKind; customer: string; quantity: number; result: string }>();
  sold = 0;
  constructor(readonly sale: Omit<SaleState, 'sold' | 'held'> & { sku: string }) {}

  /** The judgements' "now"; set before each step. */
  now = new Date().toISOString();

  state(): SaleState {
    return { ...this.sale, sold: this.sold, held: this.held() };
  }
  live(): ModelHold[] {
    return this.holds.filter((h) => statusAt(h, this.now) === 'active');
  }
  held(): number {
    return this.live().reduce((n, h) => n + h.quantity, 0);
  }
  own(who: string): ModelHold | undefined {
    return this.live().find((h) => h.customer === who);
  }
  units(who: string): number {
    return (this.orders.get(who) ?? 0) + (this.own(who)?.quantity ?? 0);
  }
  *expiries(): Iterable<number> {
    for (const h of this.holds) if (h.status === 'active') yield Date.parse(h.expiresAt);
  }
}

const same = (what: string, store: Outcome, model: Outcome) => sameAnswer(what, store, model, 'sale ');

export async function runSaleScenario(
  dibs: Dibs,
  id: string,
  scenario: SaleScenario,
  expiry: Expiry = { ttlMs: HOLD_MS, marginMs: 0 },
): Promise<void> {
  const now = Date.now();
  const startsAt = new Date(scenario.scheduled ? now + DAY : now).toISOString();
  const endsAt = new Date(now + 2 * DAY).toISOString();
  const perCustomerLimit =
    scenario.cap === null ? scenario.perCustomerLimit : Math.min(scenario.perCustomerLimit, scenario.cap);
  await dibs.sales.create({ id, sku: `sku-${id}`, startsAt, endsAt, cap: scenario.cap, perCustomerLimit });
  const m = new SaleModel({
    id,
    sku: `sku-${id}`,
    startsAt,
    endsAt,
    cancelledAt: null,
    cap: scenario.cap,
    perCustomerLimit,
  });
  for (const [i, cmd] of scenario.commands.entries()) {
    m.now = await settle(() => m.expiries(), expiry);
    if (cmd.op === 'advance') await advance(() => m.expiries(), expiry);
    else await step(dibs, m, cmd, `step ${i} ${JSON.stringify(cmd)}`, expiry);
  }
  m.now = await settle(() => m.expiries(), expiry);
  const sale = await dibs.sales.get(id);
  assert.deepEqual(
    {
      sold: sale.stats.sold,
      held: sale.stats.held,
      cap: sale.cap,
      perCustomerLimit: sale.perCustomerLimit,
      cancelled: sale.cancelledAt !== null,
    },
    {
      sold: m.sold,
      held: m.held(),
      cap: m.sale.cap,
      perCustomerLimit: m.sale.perCustomerLimit,
      cancelled: m.sale.cancelledAt !== null,
    },
    'final sale',
  );
  for (const h of m.holds) {
    const got = await dibs.sales.hold(h.id);
    if (h.status === 'lapsed') follow(h, got.status === 'expired');
    assert.deepEqual(
      { customer: got.customer, quantity: got.quantity, status: got.status },
      { customer: h.customer, quantity: h.quantity, status: statusAt(h, m.now) },
      `final hold ${h.id}`,
    );
  }
  // the live holds, by customer: expired ones are neither listed nor counted, swept or not
  if (dibs.backend.sales.listHolds)
    for (const who of CUSTOMERS)
      assert.deepEqual(
        (await dibs.sales.holds(id, { customer: who })).map((h) => `${h.id} ${h.quantity}`),
        m.own(who) ? [`${m.own(who)!.id} ${m.own(who)!.quantity}`] : [],
        `final live holds of ${who}`,
      );
  assert.deepEqual(await dibs.sales.audit(id), [], 'the audit finds the sale clean');
}

async function step(
  dibs: Dibs,
  m: SaleModel,
  cmd: Exclude<SaleCommand, { op: 'advance' }>,
  what: string,
  expiry: Expiry,
): Promise<void> {
  const id = m.sale.id;
  const now = m.now;
  switch (cmd.op) {
    case 'buy': {
      const store = await attempt(() =>
        dibs.sales.buy(id, cmd.customer, cmd.quantity, cmd.key === null ? {} : { idempotencyKey: cmd.key }),
      );
      const model = judged(() => {
        const prior = cmd.key === null ? undefined : m.keys.get(cmd.key);
        if (prior) {
          judgeSaleKey(cmd.key!, prior, 'buy', cmd.customer, cmd.quantity);
          return { replayed: true, order: prior.result };
        }
        judgeBuy(m.state(), now, cmd.customer, m.units(cmd.customer), cmd.quantity);
        return { replayed: false };
      });
      same(what, store, model);
      if (!store.ok || !model.ok) return;
      const got = store.value as BuyResult;
      const want = model.value as { replayed: boolean; order?: string };
      assert.equal(got.replayed, want.replayed, `${what}: replayed`);
      if (want.replayed) return assert.equal(got.order.id, want.order, `${what}: the replayed order`);
      assert.equal(got.order.quantity, cmd.quantity, `${what}: quantity`);
      m.sold += cmd.quantity;
      m.orders.set(cmd.customer, (m.orders.get(cmd.customer) ?? 0) + cmd.quantity);
      if (cmd.key !== null)
        m.keys.set(cmd.key, { kind: 'buy', customer: cmd.customer, quantity: cmd.quantity, result: got.order.id });
      return;
    }
    case 'reserve': {
      // a short hold is under the facade's 1 s minimum: the store's own step, with the same input
      const store = await attempt(() =>
        cmd.short
          ? dibs.backend.sales.reserve(id, cmd.customer, cmd.quantity, expiry.ttlMs, cmd.key)
          : dibs.sales.reserve(
              id,
              cmd.customer,
              cmd.quantity,
              HOLD_MS,
              cmd.key === null ? {} : { idempotencyKey: cmd.key },
            ),
      );
      const model = judged(() => {
        const prior = cmd.key === null ? undefined : m.keys.get(cmd.key);
        if (prior) {
          judgeSaleKey(cmd.key!, prior, 'reserve', cmd.customer, cmd.quantity);
          return { replayed: true, hold: prior.result };
        }
        judgeReserve(
          m.state(),
          now,
          cmd.customer,
          m.units(cmd.customer),
          m.own(cmd.customer)?.quantity ?? 0,
          cmd.quantity,
        );
        return { replayed: false };
      });
      same(what, store, model);
      if (!store.ok || !model.ok) return;
      const got = (store.value as HoldResult).hold;
      const want = model.value as { replayed: boolean; hold?: string };
      assert.equal((store.value as HoldResult).replayed, want.replayed, `${what}: replayed`);
      if (want.replayed) return assert.equal(got.id, want.hold, `${what}: the replayed hold`);
      const own = m.own(cmd.customer);
      if (own && own.id === got.id)
        Object.assign(own, { quantity: cmd.quantity, expiresAt: got.expiresAt }); // replaced in place
      else {
        if (own) own.status = 'cancelled'; // replaced by a new hold
        m.holds.push({
          id: got.id,
          customer: cmd.customer,
          quantity: cmd.quantity,
          status: 'active',
          expiresAt: got.expiresAt,
          orderId: null,
        });
      }
      if (cmd.key !== null)
        m.keys.set(cmd.key, { kind: 'reserve', customer: cmd.customer, quantity: cmd.quantity, result: got.id });
      return;
    }
    case 'confirm': {
      const h = m.holds[cmd.hold % Math.max(1, m.holds.length)];
      if (!h) return;
      const store = await attempt(() => dibs.sales.confirm(h.id));
      if (h.status === 'lapsed') follow(h, !store.ok && store.code === 'hold_expired');
      const model = judged(() => {
        if (h.status === 'cancelled') throw refusal('hold_cancelled', { hold: h.id });
        if (statusAt(h, now) === 'expired') throw refusal('hold_expired', { hold: h.id, expiresAt: h.expiresAt });
        return h.status;
      });
      same(what, store, model);
      if (!store.ok || !model.ok) return;
      const got = store.value as BuyResult;
      if (h.status === 'confirmed')
        return assert.equal(got.order.id, h.orderId, `${what}: a confirmed hold replays its order`);
      Object.assign(h, { status: 'confirmed', orderId: got.order.id });
      m.sold += h.quantity;
      m.orders.set(h.customer, (m.orders.get(h.customer) ?? 0) + h.quantity);
      return;
    }
    case 'cancelHold': {
      const h = m.holds[cmd.hold % Math.max(1, m.holds.length)];
      if (!h) return;
      const store = await attempt(() => dibs.sales.cancelHold(h.id));
      if (h.status === 'lapsed') follow(h, store.ok && (store.value as Hold).status === 'expired');
      const model = judged(() => {
        if (h.status === 'confirmed') throw refusal('hold_confirmed', { hold: h.id, order: h.orderId });
        return null;
      });
      same(what, store, model);
      if (store.ok && model.ok) {
        // an expired hold stays expired: nothing was held any more
        if (statusAt(h, now) !== 'expired') h.status = 'cancelled';
        assert.equal((store.value as Hold).status, statusAt(h, now), `${what}: status`);
      }
      return;
    }
    case 'limit':
    case 'cap': {
      const patch = cmd.op === 'limit' ? { perCustomerLimit: cmd.perCustomerLimit } : { cap: cmd.cap };
      const store = await attempt(() => dibs.sales.update(id, patch));
      const model = judged(() => {
        if (m.sale.cancelledAt !== null) throw refusal('sale_cancelled', { sale: id });
        const next = { ...m.sale, ...patch };
        assertPreflight(
          {
            id,
            sku: m.sale.sku,
            startsAt: next.startsAt,
            endsAt: next.endsAt,
            cap: next.cap,
            perCustomerLimit: next.perCustomerLimit,
            metadata: {},
          },
          { now, sameSku: [], committed: m.sold + m.held(), existing: { startsAt: m.sale.startsAt } },
        );
        if (next.perCustomerLimit < m.sale.perCustomerLimit)
          judgeCustomerLimitChange(id, next.perCustomerLimit, Math.max(0, ...CUSTOMERS.map((c) => m.units(c))));
        return next;
      });
      same(what, store, model);
      if (store.ok && model.ok) Object.assign(m.sale, patch);
      return;
    }
    case 'cancelSale': {
      const got = await dibs.sales.cancel(id);
      if (m.sale.cancelledAt === null) m.sale.cancelledAt = got.cancelledAt;
      for (const h of m.holds) if (h.status === 'active') h.status = h.expiresAt <= now ? 'lapsed' : 'cancelled';
      return;
    }
    case 'sweep': {
      // the expiry job changes no answer: expired holds were already expired on every read
      await dibs.sales.expireHolds();
      return;
    }
  }
}

/**
 * Disagreements the check found, replayed first on every run. Lowering the per-customer limit below
 * what two customers have: Firestore named the first customer over the new limit it read (2 units),
 * the others the most any customer has (3). A sold-out sale made unlimited: Firestore's audit
 * called its recorded sale.sold_out event wrong (a raised cap does not unsay it on the others).
 */
const REGRESSIONS: SaleScenario[] = [
  {
    scheduled: false,
    cap: null,
    perCustomerLimit: 1,
    commands: [
      { op: 'limit', perCustomerLimit: 3 },
      { op: 'buy', customer: 'cat', quantity: 2, key: null },
      { op: 'buy', customer: 'ann', quantity: 3, key: null },
      { op: 'limit', perCustomerLimit: 1 },
    ],
  },
  {
    scheduled: false,
    cap: 1,
    perCustomerLimit: 1,
    commands: [
      { op: 'buy', customer: 'ann', quantity: 1, key: null },
      { op: 'cap', cap: null },
      { op: 'buy', customer: 'ann', quantity: 1, key: null },
    ],
  },
];

/**
 * Expiry seen by every store on every run: a short reservation holds the last units, then expires —
 * the units go to the next buyer, confirming it is refused, cancelling it leaves it expired, the
 * customer may reserve again, and the sweep changes nothing.
 */
const EXPIRY_REGRESSIONS: SaleScenario[] = [
  {
    scheduled: false,
    cap: 2,
    perCustomerLimit: 2,
    commands: [
      { op: 'reserve', customer: 'ann', quantity: 2, key: 'k1', short: true },
      { op: 'buy', customer: 'bob', quantity: 1, key: null },
      { op: 'reserve', customer: 'ann', quantity: 1, key: null, short: true },
      { op: 'advance' },
      { op: 'confirm', hold: 0 },
      { op: 'buy', customer: 'bob', quantity: 1, key: null },
      { op: 'cancelHold', hold: 0 },
      { op: 'reserve', customer: 'ann', quantity: 2, key: 'k1', short: true },
      { op: 'reserve', customer: 'ann', quantity: 1, key: null, short: false },
      { op: 'sweep' },
      { op: 'limit', perCustomerLimit: 1 },
    ],
  },
  {
    scheduled: false,
    cap: null,
    perCustomerLimit: 1,
    commands: [
      { op: 'reserve', customer: 'ann', quantity: 1, key: null, short: true },
      { op: 'advance' },
      { op: 'cancelSale' },
      { op: 'reserve', customer: 'ann', quantity: 1, key: null, short: false },
    ],
  },
];

/** The sale property over `dibs`: each run on a sale of its own. */
export async function checkSales(
  dibs: Dibs,
  label: string,
  options: { runs: number; maxCommands: number; expiry?: Expiry },
): Promise<void> {
  let run = 0;
  const expiry = options.expiry;
  await fc.assert(
    fc.asyncProperty(saleScenarios(options.maxCommands, expiry !== undefined), async (scenario) => {
      await runSaleScenario(dibs, `model-${label}${expiry ? '-x' : ''}-${process.pid}-${run++}`, scenario, expiry);
    }),
    {
      ...modelRuns(options.runs),
      endOnFailure: false,
      verbose: 0,
      examples: (expiry ? EXPIRY_REGRESSIONS : REGRESSIONS).map((r) => [r] as [SaleScenario]),
    },
  );
  if (process.env.DIBS_MODEL_STATS === '1')
    console.log(label, Object.fromEntries([...tally].filter(([k]) => k.startsWith('sale ')).sort()));
}
