/**
 * The cart conformance suite, run unchanged against every store that holds carts: several sales
 * held in one step — every line or none — then confirmed, cancelled or expired as one.
 * SKUs share the `{cart}` tag so that a Redis Cluster keeps a cart's sales on one slot.
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

export function cartConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: carts`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    const sale = async (options: { cap?: number | null; perCustomerLimit?: number; startsInMs?: number } = {}) =>
      (
        await dibs.sales.create({
          sku: `{cart}SKU-${++n}`,
          startsAt: iso(options.startsInMs ?? 0),
          endsAt: iso(HOUR),
          cap: options.cap === undefined ? 10 : options.cap,
          perCustomerLimit: options.perCustomerLimit ?? Math.min(3, options.cap ?? 3),
        })
      ).id;
    const failure = async (promise: Promise<unknown>) => {
      try {
        await promise;
      } catch (error) {
        assert.ok(isDibsError(error), String(error));
        return error;
      }
      assert.fail('expected a refusal');
    };

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    it('holds every line at once, counted as holds of each sale; confirm turns every line into an order', async () => {
      const [a, b] = [await sale({ cap: 5 }), await sale({ cap: 2 })];
      const { cart, replayed } = await dibs.sales.holdCart({
        customer: 'ann',
        lines: [
          { sale: a, quantity: 2 },
          { sale: b, quantity: 1 },
        ],
        ttlMs: 60_000,
      });
      assert.equal(replayed, false);
      assert.match(cart.id, /^cart_[0-9a-f]{24}$/);
      assert.equal(cart.status, 'active');
      assert.equal(cart.customer, 'ann');
      assert.deepEqual(
        cart.lines.map((l) => [l.saleId, l.quantity, l.orderId]),
        [
          [a, 2, null],
          [b, 1, null],
        ],
      );
      assert.deepEqual((await dibs.sales.get(a)).stats, { sold: 0, held: 2, available: 3 });
      assert.deepEqual((await dibs.sales.get(b)).stats, { sold: 0, held: 1, available: 1 });
      const hold = await dibs.sales.hold(cart.lines[0]!.holdId);
      assert.equal(hold.expiresAt, cart.expiresAt);
      assert.deepEqual(await dibs.sales.getCart(cart.id), cart);

      const confirmed = await dibs.sales.confirmCart(cart.id);
      assert.equal(confirmed.replayed, false);
      assert.equal(confirmed.cart.status, 'confirmed');
      assert.deepEqual(
        confirmed.orders.map((o) => [o.saleId, o.quantity, o.customer, o.holdId]),
        [
          [a, 2, 'ann', cart.lines[0]!.holdId],
          [b, 1, 'ann', cart.lines[1]!.holdId],
        ],
      );
      assert.deepEqual(
        confirmed.cart.lines.map((l) => l.orderId),
        confirmed.orders.map((o) => o.id),
      );
      assert.deepEqual((await dibs.sales.get(a)).stats, { sold: 2, held: 0, available: 3 });
      assert.deepEqual((await dibs.sales.get(b)).stats, { sold: 1, held: 0, available: 1 });
      const again = await dibs.sales.confirmCart(cart.id);
      assert.equal(again.replayed, true);
      assert.deepEqual(
        again.orders.map((o) => o.id),
        confirmed.orders.map((o) => o.id),
      );
      await rejectsWith(dibs.sales.cancelCart(cart.id), 'conflict');
      assert.deepEqual(await dibs.sales.audit(a), []);
      assert.deepEqual(await dibs.sales.audit(b), []);
    });

    it('holds nothing when one line fails, and names that line', async () => {
      const [a, b, c] = [await sale({ cap: 5 }), await sale({ cap: 1 }), await sale({ cap: 5 })];
      await dibs.sales.buy(b, 'other', 1);
      const error = await failure(
        dibs.sales.holdCart({
          customer: 'bob',
          lines: [
            { sale: a, quantity: 1 },
            { sale: b, quantity: 1 },
            { sale: c, quantity: 1 },
          ],
          ttlMs: 60_000,
        }),
      );
      assert.equal(error.code, 'sold_out');
      assert.equal(error.details?.line, 1);
      assert.equal(error.details?.sale, b);
      assert.match(error.message, /^cart line 1: /);
      for (const id of [a, b, c]) assert.equal((await dibs.sales.get(id)).stats.held, 0, `nothing held on ${id}`);
      // nothing of the refused cart is left: the same customer holds those sales again without a conflict
      await dibs.sales.holdCart({
        customer: 'bob',
        lines: [
          { sale: a, quantity: 1 },
          { sale: c, quantity: 1 },
        ],
        ttlMs: 60_000,
      });
    });

    it("applies each sale's window and per-customer limit to its line", async () => {
      const [a, later, limited] = [
        await sale(),
        await sale({ startsInMs: HOUR / 2 }),
        await sale({ perCustomerLimit: 2 }),
      ];
      const notLive = await failure(
        dibs.sales.holdCart({
          customer: 'cy',
          lines: [
            { sale: a, quantity: 1 },
            { sale: later, quantity: 1 },
          ],
          ttlMs: 60_000,
        }),
      );
      assert.equal(notLive.code, 'not_live');
      assert.equal(notLive.details?.line, 1);
      await dibs.sales.buy(limited, 'cy', 1);
      const limit = await failure(
        dibs.sales.holdCart({
          customer: 'cy',
          lines: [
            { sale: a, quantity: 1 },
            { sale: limited, quantity: 2 },
          ],
          ttlMs: 60_000,
        }),
      );
      assert.equal(limit.code, 'limit_reached');
      assert.equal(limit.field, 'lines.1.quantity');
      const missing = await failure(
        dibs.sales.holdCart({ customer: 'cy', lines: [{ sale: 'no-such-sale', quantity: 1 }], ttlMs: 60_000 }),
      );
      assert.equal(missing.code, 'not_found');
      assert.equal(missing.details?.line, 0);
      assert.equal((await dibs.sales.get(a)).stats.held, 0);
      // the limit counts a cart's holds: a later buy past it is refused
      await dibs.sales.holdCart({ customer: 'cy', lines: [{ sale: limited, quantity: 1 }], ttlMs: 60_000 });
      await rejectsWith(dibs.sales.buy(limited, 'cy', 1), 'limit_reached');
    });

    it('refuses bad input: no lines, a sale twice, a bad TTL', async () => {
      const a = await sale();
      await rejectsWith(dibs.sales.holdCart({ customer: 'x', lines: [], ttlMs: 60_000 }), 'invalid_input', 'lines');
      await rejectsWith(
        dibs.sales.holdCart({
          customer: 'x',
          lines: [
            { sale: a, quantity: 1 },
            { sale: a, quantity: 1 },
          ],
          ttlMs: 60_000,
        }),
        'invalid_input',
        'lines.1.sale',
      );
      await rejectsWith(
        dibs.sales.holdCart({ customer: 'x', lines: [{ sale: a, quantity: 1 }], ttlMs: 5 }),
        'invalid_input',
        'ttlMs',
      );
      await rejectsWith(dibs.sales.getCart('nope'), 'invalid_input', 'cart');
      await rejectsWith(dibs.sales.getCart('cart_000000000000000000000000'), 'not_found');
    });

    it('replays an idempotency key; the key reused for another cart is a conflict', async () => {
      const [a, b] = [await sale(), await sale()];
      const request = {
        customer: 'dee',
        lines: [
          { sale: a, quantity: 1 },
          { sale: b, quantity: 2 },
        ],
        ttlMs: 60_000,
        idempotencyKey: `cart-${n}`,
      };
      const first = await dibs.sales.holdCart(request);
      const second = await dibs.sales.holdCart(request);
      assert.equal(second.replayed, true);
      assert.deepEqual(second.cart, first.cart);
      assert.equal((await dibs.sales.get(b)).stats.held, 2);
      await rejectsWith(
        dibs.sales.holdCart({ ...request, lines: [{ sale: a, quantity: 1 }] }),
        'conflict',
        'idempotencyKey',
      );
      await rejectsWith(
        dibs.sales.holdCart({ ...request, lines: [{ sale: b, quantity: 2 }] }),
        'conflict',
        'idempotencyKey',
      );
      await rejectsWith(dibs.sales.holdCart({ ...request, customer: 'other' }), 'conflict', 'idempotencyKey');
    });

    it('keeps a cart whole: its holds are not confirmed, cancelled or replaced alone, nor joined by a second hold', async () => {
      const [a, b] = [await sale(), await sale()];
      const { cart } = await dibs.sales.holdCart({
        customer: 'eve',
        lines: [
          { sale: a, quantity: 1 },
          { sale: b, quantity: 1 },
        ],
        ttlMs: 60_000,
      });
      const holdA = cart.lines[0]!.holdId;
      await rejectsWith(dibs.sales.confirm(holdA), 'conflict');
      await rejectsWith(dibs.sales.cancelHold(holdA), 'conflict');
      await rejectsWith(dibs.sales.reserve(a, 'eve', 2, 60_000), 'conflict');
      const twice = await failure(
        dibs.sales.holdCart({ customer: 'eve', lines: [{ sale: b, quantity: 1 }], ttlMs: 60_000 }),
      );
      assert.equal(twice.code, 'conflict');
      assert.equal(twice.details?.line, 0);
      assert.equal(twice.details?.hold, cart.lines[1]!.holdId);
      assert.equal((await dibs.sales.hold(holdA)).status, 'active');
      assert.equal((await dibs.sales.get(a)).stats.held, 1);
    });

    it('cancels every line at once; cancelling again answers the cancelled cart', async () => {
      const [a, b] = [await sale({ cap: 2 }), await sale({ cap: 2 })];
      const { cart } = await dibs.sales.holdCart({
        customer: 'fay',
        lines: [
          { sale: a, quantity: 2 },
          { sale: b, quantity: 2 },
        ],
        ttlMs: 60_000,
      });
      const cancelled = await dibs.sales.cancelCart(cart.id);
      assert.equal(cancelled.status, 'cancelled');
      for (const line of cancelled.lines) assert.equal((await dibs.sales.hold(line.holdId)).status, 'cancelled');
      assert.equal((await dibs.sales.get(a)).stats.available, 2);
      assert.equal((await dibs.sales.get(b)).stats.available, 2);
      assert.equal((await dibs.sales.cancelCart(cart.id)).status, 'cancelled');
      await rejectsWith(dibs.sales.confirmCart(cart.id), 'conflict');
      // the units are free again, for the same customer too
      await dibs.sales.holdCart({ customer: 'fay', lines: [{ sale: a, quantity: 2 }], ttlMs: 60_000 });
    });

    it('a cancelled sale takes its line with it: the cart is not confirmed in part, and cancelling it frees the rest', async () => {
      const [a, b] = [await sale({ cap: 3 }), await sale({ cap: 3 })];
      const { cart } = await dibs.sales.holdCart({
        customer: 'ivy',
        lines: [
          { sale: a, quantity: 2 },
          { sale: b, quantity: 1 },
        ],
        ttlMs: 60_000,
      });
      await dibs.sales.cancel(b);
      const error = await failure(dibs.sales.confirmCart(cart.id));
      assert.equal(error.code, 'conflict');
      assert.equal(error.details?.sale, b);
      assert.equal((await dibs.sales.get(a)).stats.sold, 0, 'no line was confirmed');
      assert.equal((await dibs.sales.cancelCart(cart.id)).status, 'cancelled');
      assert.deepEqual((await dibs.sales.get(a)).stats, { sold: 0, held: 0, available: 3 });
      assert.deepEqual(await dibs.sales.audit(a), []);
    });

    it('expires as one: every line stops counting at the one expiry, and the cart cannot be confirmed', async () => {
      const [a, b] = [await sale({ cap: 1 }), await sale({ cap: 1 })];
      const { cart } = await dibs.sales.holdCart({
        customer: 'gus',
        lines: [
          { sale: a, quantity: 1 },
          { sale: b, quantity: 1 },
        ],
        ttlMs: 1000,
      });
      await rejectsWith(dibs.sales.buy(a, 'hal', 1), 'sold_out');
      await sleep(Math.max(0, Date.parse(cart.expiresAt) - Date.now()) + 150);
      assert.equal((await dibs.sales.getCart(cart.id)).status, 'expired');
      await rejectsWith(dibs.sales.confirmCart(cart.id), 'hold_expired');
      assert.equal((await dibs.sales.get(b)).stats.available, 1);
      await dibs.sales.buy(a, 'hal', 1);
      assert.equal((await dibs.sales.cancelCart(cart.id)).status, 'expired');
      assert.equal(await dibs.sales.expireHolds(), 1, 'the sweep expires the line still marked active');
      assert.deepEqual(await dibs.sales.audit(a), []);
      assert.deepEqual(await dibs.sales.audit(b), []);
    });
  });
}
