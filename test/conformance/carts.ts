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
import { refusal, type RefusalContext, type RefusalReason } from '../../src/core/refusals.js';
import { rejectsWith } from '../support/assert.js';
import type { CartTamper } from '../support/cart-tamper.js';
import type { ConformanceTarget } from './pools.js';

const HOUR = 3_600_000;
const iso = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

/**
 * `tamper`: the store's hook for writing a broken cart behind dibs' back, for the test that shows
 * the sale audit's cart rule (I9) catching it; without one (dibs/client over HTTP) that test skips.
 */
export function cartConformance(label: string, open: () => Promise<ConformanceTarget>, tamper?: CartTamper): void {
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
    /** The whole refusal — code, message, field, retriable, details — as the one factory builds it. */
    const refusedAs = async <R extends RefusalReason>(
      promise: Promise<unknown>,
      reason: R,
      context: RefusalContext<R> & { line?: number },
    ) => {
      const shape = (e: { code: string; message: string; field?: string; retriable: boolean; details?: unknown }) => ({
        code: e.code,
        message: e.message,
        field: e.field,
        retriable: e.retriable,
        details: e.details,
      });
      assert.deepEqual(shape(await failure(promise)), shape(refusal(reason, context)), reason);
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
      assert.deepEqual(await dibs.sales.audit(a), [], 'a held cart is whole');
      assert.deepEqual(await dibs.sales.audit(b), []);
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
      assert.deepEqual(await dibs.sales.audit(a), [], 'a cancelled cart is whole');
      assert.deepEqual(await dibs.sales.audit(b), []);
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
      // a held cart whose line went with its cancelled sale is as whole as it can be
      assert.deepEqual(await dibs.sales.audit(a), []);
      assert.deepEqual(await dibs.sales.audit(b), []);
      assert.equal((await dibs.sales.cancelCart(cart.id)).status, 'cancelled');
      assert.deepEqual((await dibs.sales.get(a)).stats, { sold: 0, held: 0, available: 3 });
      assert.deepEqual(await dibs.sales.audit(a), []);
      assert.deepEqual(await dibs.sales.audit(b), []);
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
      // one line expired by a step of its sale, the other still marked active: both expired by the clock
      assert.deepEqual(await dibs.sales.audit(a), [], 'an expired cart is whole');
      assert.deepEqual(await dibs.sales.audit(b), []);
      assert.equal((await dibs.sales.cancelCart(cart.id)).status, 'expired');
      assert.equal(await dibs.sales.expireHolds(), 1, 'the sweep expires the line still marked active');
      assert.deepEqual(await dibs.sales.audit(a), []);
      assert.deepEqual(await dibs.sales.audit(b), []);
    });

    it("the sale audit catches a broken cart written behind dibs' back, on every sale it has a line on", {
      skip: tamper ? false : 'no hook into this store',
    }, async () => {
      const [a, b] = [await sale({ cap: 5 }), await sale({ cap: 5 })];
      const hold = async () =>
        (
          await dibs.sales.holdCart({
            customer: 'kim',
            lines: [
              { sale: a, quantity: 2 },
              { sale: b, quantity: 1 },
            ],
            ttlMs: 60_000,
          })
        ).cart;
      const lineOf = (cart: { lines: { saleId: string; holdId: string; quantity: number }[] }, i: number) => {
        const { saleId, holdId, quantity } = cart.lines[i]!;
        return { saleId, holdId, quantity };
      };
      const cartFindings = async (sale: string, cart: string) =>
        (await dibs.sales.audit(sale)).filter((v) => v.cart === cart);

      // a cart partly held: its second line's hold cancelled, the cart still active
      const partly = await hold();
      assert.deepEqual(await dibs.sales.audit(a), []);
      await tamper!.cancelLine(target.store!, lineOf(partly, 1));
      const line1 = partly.lines[1]!;
      for (const audited of [a, b])
        assert.deepEqual(await cartFindings(audited, partly.id), [
          {
            invariant: 'I9',
            sale: audited,
            cart: partly.id,
            message: `cart '${partly.id}' is active but its line 1 (sale '${b}', hold '${line1.holdId}') is cancelled`,
            expected: 'active',
            actual: 'cancelled',
          },
        ]);
      await dibs.sales.cancelCart(partly.id);

      // a line that outlives its cart: its hold's expiry moved an hour on
      const stretched = await hold();
      await tamper!.moveLineExpiry(target.store!, lineOf(stretched, 0), HOUR);
      const line0 = stretched.lines[0]!;
      const moved = new Date(Date.parse(stretched.expiresAt) + HOUR).toISOString();
      assert.deepEqual(await cartFindings(b, stretched.id), [
        {
          invariant: 'I9',
          sale: b,
          cart: stretched.id,
          message: `cart '${stretched.id}' line 0: hold '${line0.holdId}' expires at ${moved}, the cart at ${stretched.expiresAt}`,
          expected: stretched.expiresAt,
          actual: moved,
        },
      ]);
    });

    it('answers every sale and cart refusal with the code, message, field and details the one factory gives', async () => {
      const [a, b, later] = [
        await sale({ cap: 4, perCustomerLimit: 2 }),
        await sale({ cap: 4, perCustomerLimit: 4 }),
        await sale({ startsInMs: HOUR / 2 }),
      ];
      await refusedAs(dibs.sales.buy(later, 'kim', 1), 'sale_not_live', { sale: later, status: 'scheduled' });
      await dibs.sales.buy(a, 'kim', 1);
      await refusedAs(dibs.sales.buy(a, 'kim', 2), 'sale_limit', {
        sale: a,
        customer: 'kim',
        units: 1,
        quantity: 2,
        limit: 2,
      });
      await dibs.sales.buy(b, 'zed', 2);
      await refusedAs(dibs.sales.buy(b, 'kim', 3), 'sale_sold_out', { sale: b, available: 2 });
      // cart lines, each named by its line
      const lines = (sales: [string, number][]) => sales.map(([id, quantity]) => ({ sale: id, quantity }));
      const held = (await dibs.sales.reserve(b, 'kim', 1, 60_000)).hold;
      const cartOf = (customer: string, l: [string, number][]) =>
        dibs.sales.holdCart({ customer, lines: lines(l), ttlMs: 60_000 });
      await refusedAs(
        cartOf('kim', [
          [a, 1],
          ['no-such-sale', 1],
        ]),
        'cart_line_no_sale',
        { sale: 'no-such-sale', line: 1 },
      );
      await refusedAs(
        cartOf('kim', [
          [a, 1],
          [later, 1],
        ]),
        'sale_not_live',
        { sale: later, status: 'scheduled', line: 1 },
      );
      await refusedAs(
        cartOf('kim', [
          [a, 1],
          [b, 1],
        ]),
        'cart_line_held',
        { sale: b, hold: held.id, line: 1 },
      );
      await refusedAs(cartOf('kim', [[a, 2]]), 'sale_limit', {
        sale: a,
        customer: 'kim',
        units: 1,
        quantity: 2,
        limit: 2,
        line: 0,
      });
      await refusedAs(
        cartOf('lou', [
          [a, 1],
          [b, 2],
        ]),
        'sale_sold_out',
        { sale: b, available: 1, line: 1 },
      );
      // a cart's holds move only with their cart
      const { cart } = await cartOf('lou', [
        [a, 1],
        [b, 1],
      ]);
      const line0 = cart.lines[0]!.holdId;
      await refusedAs(dibs.sales.confirm(line0), 'hold_in_cart', { hold: line0, cart: cart.id });
      await refusedAs(dibs.sales.cancelHold(line0), 'hold_in_cart', { hold: line0, cart: cart.id });
      await refusedAs(dibs.sales.reserve(a, 'lou', 2, 60_000), 'hold_in_cart', { hold: line0, cart: cart.id });
      await dibs.sales.confirmCart(cart.id);
      await refusedAs(dibs.sales.cancelCart(cart.id), 'cart_confirmed', { cart: cart.id });
      const gone = (await cartOf('max', [[a, 1]])).cart;
      await dibs.sales.cancelCart(gone.id);
      await refusedAs(dibs.sales.confirmCart(gone.id), 'cart_cancelled', { cart: gone.id });
      // plain holds
      const order = (await dibs.sales.confirm(held.id)).order;
      await refusedAs(dibs.sales.cancelHold(held.id), 'hold_confirmed', { hold: held.id, order: order.id });
      const dropped = (await dibs.sales.reserve(await sale(), 'max', 1, 60_000)).hold;
      await dibs.sales.cancelHold(dropped.id);
      await refusedAs(dibs.sales.confirm(dropped.id), 'hold_cancelled', { hold: dropped.id });
      // a cart line on a cancelled sale (the sale's holds are cancelled with it)
      const [c, d] = [await sale(), await sale()];
      const split = (
        await cartOf('ned', [
          [d, 1],
          [a, 1],
        ])
      ).cart;
      await dibs.sales.cancel(c);
      await dibs.sales.cancel(d);
      await refusedAs(dibs.sales.confirmCart(split.id), 'cart_line_cancelled', { cart: split.id, sale: d });
      // expiry
      const [e] = [await sale()];
      const brief = (await dibs.sales.reserve(e, 'ola', 1, 1000)).hold;
      const short = (await dibs.sales.holdCart({ customer: 'pia', lines: lines([[e, 1]]), ttlMs: 1000 })).cart;
      await sleep(Math.max(Date.parse(brief.expiresAt), Date.parse(short.expiresAt)) - Date.now() + 150);
      await refusedAs(dibs.sales.confirm(brief.id), 'hold_expired', { hold: brief.id, expiresAt: brief.expiresAt });
      await refusedAs(dibs.sales.confirmCart(short.id), 'cart_expired', { cart: short.id, expiresAt: short.expiresAt });
    });
  });
}
