/**
 * Grouped sale steps on PostgreSQL: buys, reservations and confirmations of one sale issued in one
 * process at the same time run as ONE statement (one transaction), each request judged after the
 * ones before it. These tests issue whole groups in one turn of the event loop — with repeats of a
 * customer, a replayed and a reused idempotency key, a replaced hold, a double confirmation — and
 * check every single answer against what one-after-another steps would have answered, then audit.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();
const HOUR = 3_600_000;

type Outcome =
  | { order: { id: string; customer: string; quantity: number; createdAt: string }; replayed: boolean }
  | { code: string };

const settle = <T>(p: Promise<T>): Promise<T | { code: string }> =>
  p.catch((error: { code?: string }) => ({ code: error.code ?? String(error) }));

describe('postgres: grouped sale steps', { skip }, () => {
  const suite = pgForSuite({ poolSize: '4' });

  const newSale = (sku: string, cap: number, perCustomerLimit: number) =>
    suite.dibs.sales.create({
      sku,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap,
      perCustomerLimit,
    });

  it('buys issued together are one transaction, each judged on the state the ones before it left', async () => {
    const sale = await newSale('GROUP-BUY', 20, 2);
    const customers = Array.from({ length: 10 }, (_, i) => `c${i}`);
    const requests: { customer: string; key?: string; expect: string }[] = [
      { customer: 'c0', key: 'ka', expect: 'ok' },
      { customer: 'c0', key: 'ka', expect: 'replay' },
      { customer: 'c1', key: 'ka', expect: 'conflict' },
      ...customers.map((customer) => ({ customer, expect: 'ok' })),
      ...customers.map((customer) => ({ customer, expect: customer === 'c0' ? 'limit_reached' : 'ok' })),
      // 20 of 20 sold: the sale is sold out, which is answered before any limit
      ...customers.slice(1).map((customer) => ({ customer, expect: 'sold_out' })),
      { customer: 'z', expect: 'sold_out' },
    ];
    // All issued in this turn: they form one group (groupMax 64).
    const answers = (await Promise.all(
      requests.map((r) => settle(suite.dibs.sales.buy(sale.id, r.customer, 1, r.key ? { idempotencyKey: r.key } : {}))),
    )) as Outcome[];
    const createdAt = new Set<string>();
    for (const [i, r] of requests.entries()) {
      const a = answers[i]!;
      if ('code' in a) {
        assert.equal(a.code, r.expect, `request ${i} (${r.customer}${r.key ? `, key ${r.key}` : ''})`);
        continue;
      }
      assert.equal(a.replayed ? 'replay' : 'ok', r.expect, `request ${i} (${r.customer})`);
      assert.equal(a.order.customer, r.customer, `request ${i} got someone else's order`);
      assert.equal(a.order.quantity, 1);
      createdAt.add(a.order.createdAt);
    }
    assert.equal(
      (answers[1] as Extract<Outcome, { order: unknown }>).order.id,
      (answers[0] as Extract<Outcome, { order: unknown }>).order.id,
      'the replay answers the first order',
    );
    assert.equal(createdAt.size, 1, 'every order of the group was written by one transaction');
    const after = await suite.dibs.sales.get(sale.id);
    assert.equal(after.stats.sold, 20);
    assert.deepEqual(await suite.dibs.sales.audit(sale.id), []);
  });

  it('reservations and confirmations issued together: a replaced hold, a double confirmation, the cap', async () => {
    const sale = await newSale('GROUP-HOLD', 10, 3);
    const customers = Array.from({ length: 9 }, (_, i) => `h${i}`);
    // h0 reserves 1 and then 2 in the same group: the second replaces the first (same hold, 2 units).
    const reserved = await Promise.all([
      suite.dibs.sales.reserve(sale.id, 'h0', 1, 60_000),
      suite.dibs.sales.reserve(sale.id, 'h0', 2, 60_000),
      ...customers.slice(1).map((c) => suite.dibs.sales.reserve(sale.id, c, 1, 60_000)),
      settle(suite.dibs.sales.reserve(sale.id, 'late', 1, 60_000)),
    ]);
    const [first, replaced, ...rest] = reserved;
    const late = rest.pop() as { code: string };
    assert.equal(late.code, 'sold_out', '2 + 8 units held: the cap of 10 is reached');
    const holds = rest as Awaited<ReturnType<typeof suite.dibs.sales.reserve>>[];
    assert.ok(!('code' in first!) && !('code' in replaced!));
    const h0 = (replaced as Awaited<ReturnType<typeof suite.dibs.sales.reserve>>).hold;
    assert.equal(
      (first as Awaited<ReturnType<typeof suite.dibs.sales.reserve>>).hold.id,
      h0.id,
      'reserving again replaces the own hold',
    );
    assert.equal(h0.quantity, 2);
    for (const [i, h] of holds.entries()) {
      assert.equal(h.hold.customer, customers[i + 1]);
      assert.equal(h.hold.status, 'active');
      assert.ok(Date.parse(h.hold.expiresAt) > Date.now() + 50_000);
      assert.deepEqual(await suite.dibs.sales.hold(h.hold.id), h.hold, 'the hold answered is the hold stored');
    }
    const confirmed = await Promise.all(
      [h0.id, h0.id, ...holds.map((h) => h.hold.id)].map((id) => suite.dibs.sales.confirm(id)),
    );
    assert.equal(confirmed[0]!.order.id, confirmed[1]!.order.id, 'a hold confirmed twice has one order');
    assert.equal([confirmed[0]!, confirmed[1]!].filter((c) => c.replayed).length, 1);
    for (const [i, c] of confirmed.slice(2).entries()) assert.equal(c.order.customer, customers[i + 1]);
    assert.equal(confirmed[0]!.order.quantity, 2);
    const stats = (await suite.dibs.sales.get(sale.id)).stats;
    assert.deepEqual({ sold: stats.sold, held: stats.held }, { sold: 10, held: 0 });
    assert.deepEqual(await suite.dibs.sales.audit(sale.id), []);
  });

  it('confirmations share one group with buys and reservations, judged in arrival order', async () => {
    const sale = await newSale('GROUP-MIXED', 3, 1);
    const { hold } = await suite.dibs.sales.reserve(sale.id, 'a', 1, 60_000);
    // One turn: b buys (sold 1, a's unit held), a confirms (sold 2), c reserves the last unit,
    // d finds nothing left, and a's second confirmation replays its order.
    const [b, a, c, d, again] = await Promise.all([
      suite.dibs.sales.buy(sale.id, 'b'),
      suite.dibs.sales.confirm(hold.id),
      suite.dibs.sales.reserve(sale.id, 'c', 1, 60_000),
      settle(suite.dibs.sales.buy(sale.id, 'd')),
      suite.dibs.sales.confirm(hold.id),
    ]);
    assert.equal(b.order.customer, 'b');
    assert.deepEqual([a.order.customer, a.order.quantity, a.order.holdId, a.replayed], ['a', 1, hold.id, false]);
    assert.equal(c.hold.customer, 'c');
    assert.equal((d as { code: string }).code, 'sold_out');
    assert.deepEqual([again.order.id, again.replayed], [a.order.id, true]);
    assert.deepEqual(
      [a.order.createdAt, c.hold.createdAt],
      [b.order.createdAt, b.order.createdAt],
      'the buy, the confirmation and the reservation were written by one transaction',
    );
    const stats = (await suite.dibs.sales.get(sale.id)).stats;
    assert.deepEqual({ sold: stats.sold, held: stats.held }, { sold: 2, held: 1 });
    assert.deepEqual(await suite.dibs.sales.audit(sale.id), []);
  });
});
