/**
 * The flash-sale conformance suite, run unchanged against every backend that supports sales.
 * Timing-dependent cases use the smallest TTL (1 s) and wait a little past it; nothing asserts speed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { isDibsError } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

const HOUR = 3_600_000;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

export function saleConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: flash sales`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    const liveSale = (options: { cap?: number | null; perCustomerLimit?: number; endsInMs?: number } = {}) =>
      dibs.sales.create({
        sku: `SKU-${++n}`,
        startsAt: iso(0),
        endsAt: iso(options.endsInMs ?? HOUR),
        cap: options.cap === undefined ? 10 : options.cap,
        perCustomerLimit: options.perCustomerLimit ?? 2,
      });

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    describe('definition and preflight', () => {
      it('creates a live sale with an id, counters and derived status', async () => {
        const sale = await liveSale({ cap: 5, perCustomerLimit: 1 });
        assert.match(sale.id, /^sale_[0-9a-f]{24}$/);
        assert.equal(sale.status, 'live');
        assert.equal(sale.cap, 5);
        assert.equal(sale.perCustomerLimit, 1);
        assert.deepEqual(sale.stats, { sold: 0, held: 0, available: 5 });
        assert.deepEqual(await dibs.sales.get(sale.id), sale);
      });

      it('takes an explicit id once', async () => {
        await dibs.sales.create({ id: 'black-friday', sku: 'TV-55', startsAt: iso(0), endsAt: iso(HOUR), cap: 3 });
        await rejectsWith(
          dibs.sales.create({ id: 'black-friday', sku: 'TV-56', startsAt: iso(0), endsAt: iso(HOUR), cap: 3 }),
          'already_exists',
          'id',
        );
      });

      it('names every preflight problem with its field', async () => {
        await rejectsWith(
          dibs.sales.create({ sku: 'P-1', startsAt: iso(HOUR), endsAt: iso(HOUR / 2), cap: 1 }),
          'invalid_input',
          'endsAt',
        );
        await rejectsWith(
          dibs.sales.create({ sku: 'P-2', startsAt: iso(-2 * HOUR), endsAt: iso(HOUR), cap: 1 }),
          'invalid_input',
          'startsAt',
        );
        await rejectsWith(
          dibs.sales.create({ sku: 'P-3', startsAt: iso(0), endsAt: iso(HOUR), cap: 2, perCustomerLimit: 3 }),
          'invalid_input',
          'perCustomerLimit',
        );
        await rejectsWith(
          dibs.sales.create({ sku: 'P-4', startsAt: iso(0), endsAt: iso(HOUR), cap: -1 }),
          'invalid_input',
          'cap',
        );
        await rejectsWith(
          dibs.sales.create({ sku: 'P-5', startsAt: 'tomorrow', endsAt: iso(HOUR) }),
          'invalid_input',
          'startsAt',
        );
        await dibs.sales.create({ sku: 'P-6', startsAt: iso(0), endsAt: iso(HOUR), cap: 1 });
        await rejectsWith(
          dibs.sales.create({ sku: 'P-6', startsAt: iso(HOUR / 2), endsAt: iso(2 * HOUR), cap: 1 }),
          'invalid_input',
          'sku',
        );
        const next = await dibs.sales.create({ sku: 'P-6', startsAt: iso(HOUR + 1000), endsAt: iso(2 * HOUR), cap: 1 });
        assert.equal(next.status, 'scheduled', 'a later window for the same SKU is fine');
        await assert.rejects(
          dibs.sales.create({ sku: 'P-7', startsAt: iso(HOUR), endsAt: iso(HOUR / 2), cap: 1, perCustomerLimit: 2 }),
          (error: unknown) => {
            assert.ok(isDibsError(error, 'invalid_input'));
            const problems = (error.details as { problems: { field: string }[] }).problems;
            assert.deepEqual(problems.map((p) => p.field).sort(), ['endsAt', 'perCustomerLimit']);
            return true;
          },
        );
      });

      it('lists sales by id with a cursor and by SKU', async () => {
        for (const id of ['zz-list-1', 'zz-list-2', 'zz-list-3'])
          await dibs.sales.create({
            id,
            sku: `LIST-${id}`,
            startsAt: iso(0),
            endsAt: iso(HOUR),
            cap: 1,
            perCustomerLimit: 1,
          });
        const page = await dibs.sales.list({ after: 'zz-list-', limit: 2 });
        assert.deepEqual(
          page.items.map((s) => s.id),
          ['zz-list-1', 'zz-list-2'],
        );
        const rest = await dibs.sales.list({ after: page.nextCursor!, limit: 2 });
        assert.deepEqual(
          rest.items.map((s) => s.id),
          ['zz-list-3'],
        );
        assert.deepEqual(
          (await dibs.sales.list({ sku: 'LIST-zz-list-2' })).items.map((s) => s.id),
          ['zz-list-2'],
        );
      });

      it('refuses a cap below what is sold and held, accepts a raise', async () => {
        const sale = await liveSale({ cap: 5, perCustomerLimit: 3 });
        await dibs.sales.buy(sale.id, 'alice', 2);
        await dibs.sales.reserve(sale.id, 'bob', 2, 60_000);
        await rejectsWith(dibs.sales.update(sale.id, { cap: 3 }), 'invalid_input', 'cap');
        const raised = await dibs.sales.update(sale.id, { cap: 8 });
        assert.deepEqual(raised.stats, { sold: 2, held: 2, available: 4 });
        assert.equal((await dibs.sales.update(sale.id, { cap: 4 })).cap, 4);
      });

      it('answers not_found for unknown sales and holds', async () => {
        await rejectsWith(dibs.sales.get('nope'), 'not_found');
        await rejectsWith(dibs.sales.buy('nope', 'alice'), 'not_found');
        await rejectsWith(dibs.sales.reserve('nope', 'alice', 1, 5000), 'not_found');
        await rejectsWith(dibs.sales.confirm('hold_000000000000000000000000'), 'not_found');
        await rejectsWith(dibs.sales.cancelHold('hold_000000000000000000000000'), 'not_found');
        await rejectsWith(dibs.sales.audit('nope'), 'not_found');
        await rejectsWith(dibs.sales.confirm('not-a-hold'), 'invalid_input', 'hold');
      });
    });

    describe('buying', () => {
      it('sells exactly the cap, then answers sold_out and records one sold-out event', async () => {
        const sale = await liveSale({ cap: 3, perCustomerLimit: 2 });
        const a = await dibs.sales.buy(sale.id, 'alice', 2);
        assert.equal(a.order.quantity, 2);
        assert.equal(a.order.customer, 'alice');
        assert.match(a.order.id, /^ord_/);
        assert.equal(a.replayed, false);
        await rejectsWith(dibs.sales.buy(sale.id, 'bob', 2), 'sold_out');
        assert.equal((await dibs.sales.get(sale.id)).stats.sold, 2, 'a refused buy sells nothing');
        await dibs.sales.buy(sale.id, 'bob', 1);
        const soldOut = await dibs.sales.get(sale.id);
        assert.equal(soldOut.status, 'sold_out');
        assert.deepEqual(soldOut.stats, { sold: 3, held: 0, available: 0 });
        await rejectsWith(dibs.sales.buy(sale.id, 'carol', 1), 'sold_out');
        const events = (await dibs.sales.events({ sale: sale.id })).filter((e) => e.type === 'sale.sold_out');
        assert.equal(events.length, 1);
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it('enforces the per-customer limit across orders and holds', async () => {
        const sale = await liveSale({ cap: 10, perCustomerLimit: 3 });
        await dibs.sales.buy(sale.id, 'alice', 2);
        await rejectsWith(dibs.sales.buy(sale.id, 'alice', 2), 'limit_reached');
        await dibs.sales.reserve(sale.id, 'alice', 1, 60_000);
        await rejectsWith(dibs.sales.buy(sale.id, 'alice', 1), 'limit_reached');
        await rejectsWith(dibs.sales.reserve(sale.id, 'alice', 2, 60_000), 'limit_reached');
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it('replays an idempotency key and refuses its reuse for another request', async () => {
        const sale = await liveSale({ cap: 10, perCustomerLimit: 5 });
        const first = await dibs.sales.buy(sale.id, 'alice', 2, { idempotencyKey: 'checkout-1' });
        const again = await dibs.sales.buy(sale.id, 'alice', 2, { idempotencyKey: 'checkout-1' });
        assert.equal(again.replayed, true);
        assert.deepEqual(again.order, first.order);
        assert.equal((await dibs.sales.get(sale.id)).stats.sold, 2);
        await rejectsWith(
          dibs.sales.buy(sale.id, 'alice', 3, { idempotencyKey: 'checkout-1' }),
          'conflict',
          'idempotencyKey',
        );
        await rejectsWith(
          dibs.sales.buy(sale.id, 'bob', 2, { idempotencyKey: 'checkout-1' }),
          'conflict',
          'idempotencyKey',
        );
        await rejectsWith(
          dibs.sales.reserve(sale.id, 'alice', 2, 5000, { idempotencyKey: 'checkout-1' }),
          'conflict',
          'idempotencyKey',
        );
      });

      it('refuses scheduled, ended and cancelled sales with not_live', async () => {
        const scheduled = await dibs.sales.create({
          sku: `SKU-${++n}`,
          startsAt: iso(HOUR),
          endsAt: iso(2 * HOUR),
          cap: 5,
        });
        assert.equal(scheduled.status, 'scheduled');
        await rejectsWith(dibs.sales.buy(scheduled.id, 'alice'), 'not_live');
        await rejectsWith(dibs.sales.reserve(scheduled.id, 'alice', 1, 5000), 'not_live');
        const short = await liveSale({ cap: 5, endsInMs: 1200 });
        await sleep(1400);
        assert.equal((await dibs.sales.get(short.id)).status, 'ended');
        await rejectsWith(dibs.sales.buy(short.id, 'alice'), 'not_live');
        const cancelled = await liveSale({ cap: 5 });
        const { hold } = await dibs.sales.reserve(cancelled.id, 'bob', 1, 60_000);
        const after = await dibs.sales.cancel(cancelled.id);
        assert.equal(after.status, 'cancelled');
        assert.equal(after.stats.held, 0, 'cancelling a sale releases its holds');
        assert.equal((await dibs.sales.hold(hold.id)).status, 'cancelled');
        await rejectsWith(dibs.sales.buy(cancelled.id, 'alice'), 'not_live');
        assert.equal((await dibs.sales.cancel(cancelled.id)).status, 'cancelled', 'cancel is idempotent');
        await rejectsWith(dibs.sales.update(cancelled.id, { cap: 9 }), 'conflict');
      });

      it('sells unlimited sales without a cap', async () => {
        const sale = await liveSale({ cap: null, perCustomerLimit: 100 });
        await dibs.sales.buy(sale.id, 'alice', 60);
        await dibs.sales.reserve(sale.id, 'bob', 100, 60_000);
        await dibs.sales.buy(sale.id, 'carol', 100);
        const now = await dibs.sales.get(sale.id);
        assert.equal(now.status, 'live');
        assert.deepEqual(now.stats, { sold: 160, held: 100, available: null });
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it('serves concurrent buyers of the last units exactly once', async () => {
        const sale = await liveSale({ cap: 10, perCustomerLimit: 1 });
        const settled = await Promise.allSettled(
          Array.from({ length: 120 }, (_, i) => dibs.sales.buy(sale.id, `buyer-${i % 100}`)),
        );
        const won = settled.filter((s) => s.status === 'fulfilled');
        assert.equal(won.length, 10);
        for (const s of settled)
          if (s.status === 'rejected')
            assert.ok(['sold_out', 'limit_reached'].includes((s.reason as { code: string }).code), String(s.reason));
        assert.equal(
          new Set(won.map((w) => (w as PromiseFulfilledResult<{ order: { customer: string } }>).value.order.customer))
            .size,
          10,
        );
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });
    });

    describe('cart holds', () => {
      it('holds units against everyone else, confirms them into an order exactly once', async () => {
        const sale = await liveSale({ cap: 3, perCustomerLimit: 3 });
        const { hold } = await dibs.sales.reserve(sale.id, 'alice', 2, 60_000);
        assert.match(hold.id, /^hold_/);
        assert.equal(hold.status, 'active');
        assert.ok(Date.parse(hold.expiresAt) > Date.now() + 50_000);
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 0, held: 2, available: 1 });
        await rejectsWith(dibs.sales.buy(sale.id, 'bob', 2), 'sold_out');
        await rejectsWith(dibs.sales.reserve(sale.id, 'bob', 2, 60_000), 'sold_out');
        const { order, replayed } = await dibs.sales.confirm(hold.id);
        assert.equal(replayed, false);
        assert.equal(order.holdId, hold.id);
        assert.equal(order.quantity, 2);
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 2, held: 0, available: 1 });
        const again = await dibs.sales.confirm(hold.id);
        assert.equal(again.replayed, true);
        assert.equal(again.order.id, order.id);
        assert.equal((await dibs.sales.hold(hold.id)).status, 'confirmed');
        assert.equal((await dibs.sales.hold(hold.id)).orderId, order.id);
        await rejectsWith(dibs.sales.cancelHold(hold.id), 'conflict');
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it("replaces a customer's hold when they reserve again", async () => {
        const sale = await liveSale({ cap: 3, perCustomerLimit: 3 });
        const first = await dibs.sales.reserve(sale.id, 'alice', 1, 60_000);
        const second = await dibs.sales.reserve(sale.id, 'alice', 3, 60_000);
        assert.equal(second.hold.id, first.hold.id);
        assert.equal(second.hold.quantity, 3);
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 0, held: 3, available: 0 });
        const smaller = await dibs.sales.reserve(sale.id, 'alice', 1, 60_000);
        assert.equal(smaller.hold.quantity, 1);
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 0, held: 1, available: 2 });
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it('cancels a hold and gives its units back; cancelling twice is harmless', async () => {
        const sale = await liveSale({ cap: 2, perCustomerLimit: 2 });
        const { hold } = await dibs.sales.reserve(sale.id, 'alice', 2, 60_000);
        const cancelled = await dibs.sales.cancelHold(hold.id);
        assert.equal(cancelled.status, 'cancelled');
        assert.equal((await dibs.sales.cancelHold(hold.id)).status, 'cancelled');
        await rejectsWith(dibs.sales.confirm(hold.id), 'conflict');
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 0, held: 0, available: 2 });
        await dibs.sales.buy(sale.id, 'bob', 2);
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it("lists a sale's active holds, soonest expiry first, or one customer's (stores that cannot: unsupported)", async () => {
        const sale = await liveSale({ cap: 10, perCustomerLimit: 2 });
        const started = Date.now();
        const soon = (await dibs.sales.reserve(sale.id, 'erin', 1, 1000)).hold; // expires while we look
        const late = (await dibs.sales.reserve(sale.id, 'carol', 2, 120_000)).hold;
        const early = (await dibs.sales.reserve(sale.id, 'dave', 1, 60_000)).hold;
        const gone = (await dibs.sales.reserve(sale.id, 'frank', 1, 60_000)).hold;
        await dibs.sales.cancelHold(gone.id);
        const bought = (await dibs.sales.reserve(sale.id, 'gina', 1, 60_000)).hold;
        await dibs.sales.confirm(bought.id);
        if (!dibs.backend.sales.listHolds) {
          await rejectsWith(dibs.sales.holds(sale.id), 'unsupported');
          return;
        }
        assert.ok(soon.expiresAt < early.expiresAt);
        // `soon` may already have lapsed on a slow machine: when listed, it is first
        const ids = (holds: { id: string }[]) => holds.map((x) => x.id).filter((id) => id !== soon.id);
        const all = await dibs.sales.holds(sale.id);
        assert.deepEqual(ids(all), [early.id, late.id]);
        if (all.length === 3) assert.equal(all[0]!.id, soon.id);
        assert.deepEqual((await dibs.sales.holds(sale.id, { limit: 1 })).length, 1);
        const [carol] = await dibs.sales.holds(sale.id, { customer: 'carol' });
        assert.deepEqual(carol, late);
        assert.deepEqual(await dibs.sales.holds(sale.id, { customer: 'frank' }), [], 'a cancelled hold is not listed');
        assert.deepEqual(await dibs.sales.holds(sale.id, { customer: 'nobody' }), []);
        await rejectsWith(dibs.sales.holds('no-such-sale'), 'not_found');
        await rejectsWith(dibs.sales.holds(sale.id, { limit: 0 }), 'invalid_input', 'limit');
        await sleep(Math.max(0, started + 1100 - Date.now()));
        assert.deepEqual(
          (await dibs.sales.holds(sale.id)).map((x) => x.id),
          [early.id, late.id],
          'an expired hold is not listed, before any sweep',
        );
        assert.deepEqual(
          await dibs.sales.holds(sale.id, { customer: 'erin' }),
          [],
          "nor is an expired customer's hold",
        );
      });

      it('stops counting an expired hold at once, refuses to confirm it and records the expiry once', async () => {
        const sale = await liveSale({ cap: 1, perCustomerLimit: 1 });
        const { hold } = await dibs.sales.reserve(sale.id, 'alice', 1, 1000);
        await rejectsWith(dibs.sales.buy(sale.id, 'bob'), 'sold_out');
        await sleep(1200);
        assert.equal((await dibs.sales.hold(hold.id)).status, 'expired', 'expired on read, before any sweep');
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 0, held: 0, available: 1 });
        await rejectsWith(dibs.sales.confirm(hold.id), 'hold_expired');
        const { order } = await dibs.sales.buy(sale.id, 'bob');
        assert.equal(order.customer, 'bob', 'the expired unit went to the next buyer');
        await dibs.sales.expireHolds();
        const expired = (await dibs.sales.events({ sale: sale.id })).filter((e) => e.type === 'hold.expired');
        assert.equal(expired.length, 1);
        assert.equal(expired[0]!.payload.hold, hold.id);
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });

      it('the sweep job expires stale holds across sales', async () => {
        const a = await liveSale({ cap: 5 });
        const b = await liveSale({ cap: 5 });
        await dibs.sales.reserve(a.id, 'alice', 1, 1000);
        await dibs.sales.reserve(b.id, 'bob', 2, 1000);
        await dibs.sales.reserve(b.id, 'carol', 1, 60_000);
        await sleep(1200);
        assert.ok((await dibs.sales.expireHolds()) >= 2);
        assert.equal(await dibs.sales.expireHolds(), 0, 'nothing left to expire');
        assert.deepEqual((await dibs.sales.get(b.id)).stats, { sold: 0, held: 1, available: 4 });
        assert.deepEqual(await dibs.sales.audit(a.id), []);
        assert.deepEqual(await dibs.sales.audit(b.id), []);
      });

      it('treats holds on unlimited sales as advisory', async () => {
        const sale = await liveSale({ cap: null, perCustomerLimit: 5 });
        const { hold } = await dibs.sales.reserve(sale.id, 'alice', 5, 60_000);
        await dibs.sales.reserve(sale.id, 'bob', 5, 60_000);
        await dibs.sales.confirm(hold.id);
        assert.deepEqual((await dibs.sales.get(sale.id)).stats, { sold: 5, held: 5, available: null });
      });

      it('validates quantities and TTLs', async () => {
        const sale = await liveSale();
        await rejectsWith(dibs.sales.reserve(sale.id, 'alice', 0, 5000), 'invalid_input', 'quantity');
        await rejectsWith(dibs.sales.reserve(sale.id, 'alice', 1, 10), 'invalid_input', 'ttlMs');
        await rejectsWith(dibs.sales.buy(sale.id, 'alice', 1.5), 'invalid_input', 'quantity');
        await rejectsWith(dibs.sales.buy(sale.id, ''), 'invalid_input', 'customer');
      });
    });
  });
}
