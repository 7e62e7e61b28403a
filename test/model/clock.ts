/**
 * Expiry in the model checks: the store's clock decides when a hold (or a sale's reservation) ends;
 * the model judges with this process's clock. Both clocks are the same machine's, and the model
 * records every expiry instant as the store answered it, so they agree — except for a step that
 * runs across an expiry, which either answer would be right for. So no step starts within `margin`
 * of an expiry: it waits until that expiry is `GRACE_MS` past. A step slower than `margin` could
 * still straddle one; the margin is set per store well above its step time.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Expiry {
  /** The TTL of a short hold (the facade's minimum is 1 s; the model calls the store's step under it). */
  ttlMs: number;
  /** How long a step may take: no step starts this close before an expiry. */
  marginMs: number;
}

/** Short enough that a scenario waits a fraction of a second per short hold. */
export const FAST_EXPIRY: Expiry = { ttlMs: 300, marginMs: 200 };
/** The Firestore emulator's transactions take longer under load. */
export const SLOW_EXPIRY: Expiry = { ttlMs: 1000, marginMs: 700 };

const GRACE_MS = 30;

/**
 * The model's "now" for the next step: waits while an expiry (ms since epoch, as the store
 * answered it) lies in [now - GRACE_MS, now + margin], so the step sees it plainly live or plainly gone.
 */
export async function settle(expiries: () => Iterable<number>, expiry: Expiry): Promise<string> {
  for (;;) {
    const now = Date.now();
    let until = 0;
    for (const at of expiries()) if (at > now - GRACE_MS && at <= now + expiry.marginMs) until = Math.max(until, at);
    if (until === 0) return new Date(now).toISOString();
    await sleep(until + GRACE_MS - now);
  }
}

/** The `advance` command: waits until every short expiry still ahead (within one TTL and margin) has passed. */
export async function advance(expiries: () => Iterable<number>, expiry: Expiry): Promise<void> {
  const now = Date.now();
  let until = 0;
  for (const at of expiries()) if (at > now && at <= now + expiry.ttlMs + expiry.marginMs) until = Math.max(until, at);
  if (until > 0) await sleep(until + GRACE_MS - now);
}
