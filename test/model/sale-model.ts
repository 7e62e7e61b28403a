/**
 * Model-based test of flash sales: fast-check command sequences (buy, reserve, confirm, cancel a
 * hold, per-customer limit and cap changes, cancelling the sale) run against a real store through
 * the facade AND against an in-memory model built on core/model/sales.ts and the preflight of
 * core/sales/rules.ts. Every answer (result, or refusal code — and message where the model phrases
 * it) and the final state (sold, held, every hold, a clean audit) must match.
 *
 * Holds last ten minutes, so expiry never decides an answer; a scheduled sale starts tomorrow.
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

const CUSTOMERS = ['ann', 'bob', 'cat'] as const;
const KEYS = ['k1', 'k2', 'k3'] as const;
const HOLD_MS = 600_000;
const DAY = 86_400_000;

export type SaleCommand =
  | { op: 'buy'; customer: string; quantity: number; key: string | null }
  | { op: 'reserve'; customer: string; quantity: number; key: string | null }
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
const command: fc.Arbitrary<SaleCommand> = fc.oneof(
  {
    weight: 18,
    arbitrary: fc.record({ op: fc.constant('buy' as const), customer, quantity: fc.integer({ min: 1, max: 3 }), key }),
  },
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      customer,
      quantity: fc.integer({ min: 1, max: 3 }),
      key,
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
);

export const saleScenarios = (maxCommands: number): fc.Arbitrary<SaleScenario> =>
  fc.record({
    scheduled: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    cap: fc.option(fc.integer({ min: 1, max: 8 }), { nil: null, freq: 4 }),
    perCustomerLimit: fc.integer({ min: 1, max: 4 }),
    commands: fc.array(command, { minLength: 1, maxLength: maxCommands, size: 'max' }),
  });

interface ModelHold {
  id: string;
  customer: string;
  quantity: number;
  status: 'active' | 'confirmed' | 'cancelled';
  orderId: string | null;
}

class SaleModel {
  readonly holds: ModelHold[] = [];
  readonly orders = new Map<string, number>();
  readonly keys = new Map<string, { kind: SaleKeyKind; customer: string; quantity: number; result: string }>();
  sold = 0;
  constructor(readonly sale: Omit<SaleState, 'sold' | 'held'> & { sku: string }) {}

  state(): SaleState {
    return { ...this.sale, sold: this.sold, held: this.held() };
  }
  held(): number {
    return this.holds.filter((h) => h.status === 'active').reduce((n, h) => n + h.quantity, 0);
  }
  own(who: string): ModelHold | undefined {
    return this.holds.find((h) => h.customer === who && h.status === 'active');
  }
  units(who: string): number {
    return (this.orders.get(who) ?? 0) + (this.own(who)?.quantity ?? 0);
  }
}

const same = (what: string, store: Outcome, model: Outcome) => sameAnswer(what, store, model, 'sale ');

export async function runSaleScenario(dibs: Dibs, id: string, scenario: SaleScenario): Promise<void> {
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
  for (const [i, cmd] of scenario.commands.entries()) await step(dibs, m, cmd, `step ${i} ${JSON.stringify(cmd)}`);
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
    assert.deepEqual(
      { customer: got.customer, quantity: got.quantity, status: got.status },
      { customer: h.customer, quantity: h.quantity, status: h.status },
      `final hold ${h.id}`,
    );
  }
  assert.deepEqual(await dibs.sales.audit(id), [], 'the audit finds the sale clean');
}

async function step(dibs: Dibs, m: SaleModel, cmd: SaleCommand, what: string): Promise<void> {
  const id = m.sale.id;
  const now = new Date().toISOString();
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
      const store = await attempt(() =>
        dibs.sales.reserve(
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
        own.quantity = cmd.quantity; // replaced in place
      else {
        if (own) own.status = 'cancelled'; // replaced by a new hold
        m.holds.push({ id: got.id, customer: cmd.customer, quantity: cmd.quantity, status: 'active', orderId: null });
      }
      if (cmd.key !== null)
        m.keys.set(cmd.key, { kind: 'reserve', customer: cmd.customer, quantity: cmd.quantity, result: got.id });
      return;
    }
    case 'confirm': {
      const h = m.holds[cmd.hold % Math.max(1, m.holds.length)];
      if (!h) return;
      const store = await attempt(() => dibs.sales.confirm(h.id));
      const model = judged(() => {
        if (h.status === 'cancelled') throw refusal('hold_cancelled', { hold: h.id });
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
      const model = judged(() => {
        if (h.status === 'confirmed') throw refusal('hold_confirmed', { hold: h.id, order: h.orderId });
        return null;
      });
      same(what, store, model);
      if (store.ok && model.ok) {
        h.status = 'cancelled';
        assert.equal((store.value as Hold).status, 'cancelled', `${what}: status`);
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
      for (const h of m.holds) if (h.status === 'active') h.status = 'cancelled';
      return;
    }
  }
}

/** The sale property over `dibs`: each run on a sale of its own. */
export async function checkSales(
  dibs: Dibs,
  label: string,
  options: { runs: number; maxCommands: number },
): Promise<void> {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(saleScenarios(options.maxCommands), async (scenario) => {
      await runSaleScenario(dibs, `model-${label}-${process.pid}-${run++}`, scenario);
    }),
    { ...modelRuns(options.runs), endOnFailure: false, verbose: 0 },
  );
  if (process.env.DIBS_MODEL_STATS === '1')
    console.log(label, Object.fromEntries([...tally].filter(([k]) => k.startsWith('sale ')).sort()));
}
