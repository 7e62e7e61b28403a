/**
 * What every store's cart step shares: the request an idempotency key stands for, and a cart's
 * status as the store's clock sees it. The stores judge the lines themselves, inside one step.
 */
import { refusal } from '../refusals.js';
import type { CartSpec, CartStatus } from './types.js';

/**
 * The request behind a cart's idempotency key, as text: a replay must name the same customer,
 * the same lines in the same order and the same TTL, else the key is a `conflict`.
 */
export function cartFingerprint(spec: CartSpec): string {
  return JSON.stringify([spec.customer, spec.ttlMs, spec.lines.map((l) => [l.saleId, l.quantity])]);
}

/** The request a fingerprint stands for (what the cart was asked to hold): the audit's yardstick. */
export function cartRequest(fingerprint: string): {
  customer: string;
  ttlMs: number;
  lines: { saleId: string; quantity: number }[];
} {
  const [customer, ttlMs, lines] = JSON.parse(fingerprint) as [string, number, [string, number][]];
  return { customer, ttlMs, lines: lines.map(([saleId, quantity]) => ({ saleId, quantity })) };
}

/** A key first used for another cart request: the same refusal a sale's reused key gets. */
export function cartKeyReused(key: string, priorFingerprint: string): Error {
  const { customer, lines } = cartRequest(priorFingerprint);
  return refusal('key_reused', {
    key,
    prior: { kind: 'cart', quantity: lines.reduce((n, l) => n + l.quantity, 0), customer },
  });
}

/** A stored cart status with the clock applied: an active cart past its expiry is expired. */
export function cartStatus(stored: string, expiresAt: string, now: string): CartStatus {
  if (stored === 'active' && expiresAt <= now) return 'expired';
  return stored as CartStatus;
}
