/**
 * The audit's cart rule (I9) as a pure function: a whole cart in each of its states is clean, and
 * every way a cart can be broken gives its own finding. The stores' conformance suite shows each
 * store feeding it (test/conformance/carts.ts); this shows each finding can fire at all.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cartViolations, type AuditedCart, type AuditedLine } from '../../src/core/sales/cart-audit.js';
import { cartFingerprint } from '../../src/core/sales/carts.js';
import type { HoldStatus } from '../../src/core/sales/types.js';

const NOW = Date.parse('2026-01-01T12:00:00.000Z');
const LATER = NOW + 60_000;

function cart(status: AuditedCart['status'], expiresAt = LATER): AuditedCart {
  const fingerprint = cartFingerprint({
    customer: 'ann',
    ttlMs: 60_000,
    idempotencyKey: null,
    lines: [
      { saleId: 's-a', quantity: 2 },
      { saleId: 's-b', quantity: 1 },
    ],
  });
  return { id: 'c1', customer: 'ann', status, expiresAt, fingerprint };
}

function line(
  position: number,
  status: HoldStatus,
  change: Partial<NonNullable<AuditedLine['hold']>> = {},
): AuditedLine {
  const saleId = position === 0 ? 's-a' : 's-b';
  const quantity = position === 0 ? 2 : 1;
  const holdId = `h${position}`;
  return {
    position,
    holdId,
    hold: {
      saleId,
      customer: 'ann',
      quantity,
      status,
      expiresAt: LATER,
      orderId: status === 'confirmed' ? `o${position}` : null,
      ...change,
    },
    saleCancelled: false,
    orders:
      status === 'confirmed' ? [{ id: `o${position}`, customer: 'ann', quantity: change.quantity ?? quantity }] : [],
  };
}

const messages = (c: AuditedCart | null, lines: AuditedLine[], now = NOW) =>
  cartViolations('s-a', 'c1', c, lines, now).map((v) => v.message);

describe('cart audit rule (I9)', () => {
  it('finds nothing wrong with a whole cart: held, confirmed, cancelled, expired, or held with a line gone with its sale', () => {
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), line(1, 'active')]), []);
    assert.deepEqual(messages(cart('confirmed'), [line(0, 'confirmed'), line(1, 'confirmed')]), []);
    assert.deepEqual(messages(cart('cancelled'), [line(0, 'cancelled'), line(1, 'cancelled')]), []);
    // expired by the clock: one line swept, the other still marked active
    assert.deepEqual(messages(cart('active'), [line(0, 'expired'), line(1, 'active')], LATER), []);
    const withSale = { ...line(1, 'cancelled'), saleCancelled: true };
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), withSale]), []);
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), withSale], LATER + 1), []);
  });

  it('names a cart partly held, partly confirmed or partly expired', () => {
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), line(1, 'cancelled')]), [
      "cart 'c1' is active but its line 1 (sale 's-b', hold 'h1') is cancelled",
    ]);
    assert.deepEqual(messages(cart('confirmed'), [line(0, 'confirmed'), line(1, 'active')]), [
      "cart 'c1' is confirmed but its line 1 (sale 's-b', hold 'h1') is active",
      "cart 'c1' is confirmed but its line 1 (sale 's-b') became 0 order(s)",
    ]);
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), line(1, 'active', { expiresAt: NOW })]), [
      "cart 'c1' line 1: hold 'h1' expires at 2026-01-01T12:00:00.000Z, the cart at 2026-01-01T12:01:00.000Z",
      "cart 'c1' is active but its line 1 (sale 's-b', hold 'h1') is expired",
    ]);
    // a confirmed cart's line cancelled with its sale is still a partial confirmation
    assert.deepEqual(
      messages(cart('confirmed'), [line(0, 'confirmed'), { ...line(1, 'cancelled'), saleCancelled: true }]),
      [
        "cart 'c1' is confirmed but its line 1 (sale 's-b', hold 'h1') is cancelled",
        "cart 'c1' is confirmed but its line 1 (sale 's-b') became 0 order(s)",
      ],
    );
  });

  it('names a line missing, one never asked for, a sale twice, and a quantity or customer not the cart’s', () => {
    assert.deepEqual(messages(cart('active'), [line(0, 'active')]), [
      "cart 'c1' was held with 2 line(s) but has 1",
      "cart 'c1' has no line 1 (1 of sale 's-b')",
    ]);
    assert.deepEqual(
      messages(cart('active'), [
        line(0, 'active'),
        line(1, 'active'),
        { ...line(0, 'active'), position: 2, holdId: 'h2' },
      ]),
      [
        "cart 'c1' was held with 2 line(s) but has 3",
        "cart 'c1' line 2 (hold 'h2') was never asked for",
        "cart 'c1' holds sale 's-a' on line 0 and on line 2",
      ],
    );
    assert.deepEqual(
      messages(cart('active'), [line(0, 'active', { quantity: 3 }), line(1, 'active', { customer: 'bob' })]),
      [
        "cart 'c1' line 0: hold 'h0' has 3 of sale 's-a', the cart was asked for 2 of sale 's-a'",
        "cart 'c1' line 1: hold 'h1' is held for 'bob', the cart for 'ann'",
      ],
    );
    assert.deepEqual(
      messages(cart('active'), [{ ...line(0, 'active'), listed: { saleId: 's-a', quantity: 1 } }, line(1, 'active')]),
      ["cart 'c1' line 0: lists 1 of sale 's-a' but hold 'h0' has 2 of sale 's-a'"],
    );
    assert.deepEqual(messages(cart('active'), [line(0, 'active'), { ...line(1, 'active'), hold: null }]), [
      "cart 'c1' line 1: hold 'h1' does not exist",
    ]);
    assert.deepEqual(messages(null, [line(0, 'active')]), ["cart 'c1' is named by hold(s) 'h0' but does not exist"]);
  });

  it('names a line that became no order, two, one of the wrong size, or one while the cart was not confirmed', () => {
    const twice = line(1, 'confirmed');
    twice.orders.push({ id: 'o9', customer: 'ann', quantity: 1 });
    assert.deepEqual(messages(cart('confirmed'), [line(0, 'confirmed'), twice]), [
      "cart 'c1' is confirmed but its line 1 (sale 's-b') became 2 order(s)",
    ]);
    const small = line(0, 'confirmed');
    small.orders = [{ id: 'o0', customer: 'ann', quantity: 1 }];
    assert.deepEqual(messages(cart('confirmed'), [small, line(1, 'confirmed', { orderId: null })]), [
      "cart 'c1' line 0: order 'o0' is 1 for 'ann', the line 2 for 'ann'",
      "cart 'c1' line 1: hold 'h1' names order 'none', but 'o1' was made from it",
    ]);
    const sold = line(1, 'cancelled');
    sold.orders = [{ id: 'o1', customer: 'ann', quantity: 1 }];
    assert.deepEqual(messages(cart('cancelled'), [line(0, 'cancelled'), sold]), [
      "cart 'c1' is cancelled but its line 1 (sale 's-b') became 1 order(s)",
    ]);
  });
});
