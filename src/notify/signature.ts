/**
 * Webhook signatures in Stripe's shape: `Dibs-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`
 * over `${t}.${body}`. The timestamp is signed too, so a captured request cannot be replayed
 * after the tolerance window; comparison is constant-time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'dibs-signature';

export function sign(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${hmac(secret, timestamp, body)}`;
}

export type VerifyResult = { ok: true } | { ok: false; reason: 'malformed' | 'too_old' | 'mismatch' };

export function verify(
  secret: string,
  header: string | undefined,
  body: string,
  toleranceSec = 300,
  now = Math.floor(Date.now() / 1000),
): VerifyResult {
  const parts = Object.fromEntries((header ?? '').split(',').map((kv) => kv.split('=', 2) as [string, string]));
  const timestamp = Number(parts.t);
  if (!Number.isInteger(timestamp) || typeof parts.v1 !== 'string' || !/^[0-9a-f]{64}$/.test(parts.v1))
    return { ok: false, reason: 'malformed' };
  if (Math.abs(now - timestamp) > toleranceSec) return { ok: false, reason: 'too_old' };
  const expected = Buffer.from(hmac(secret, timestamp, body), 'hex');
  return timingSafeEqual(expected, Buffer.from(parts.v1, 'hex')) ? { ok: true } : { ok: false, reason: 'mismatch' };
}

function hmac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}
