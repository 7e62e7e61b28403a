/**
 * When does runExclusive's lost-lease signal fire? The store judges expiry from the moment it
 * granted; the holder only learns of the grant when the reply has come back AND its event loop has
 * handled it. A deadline counted from the reply is late by that whole delay, so the signal could
 * fire after the store gave the key to someone else. Two ways to delay the reply, each checked by
 * one property on one monotonic clock (this process's performance.now()):
 *
 *   the next holder is granted the key only after the first holder's fn has ended or its signal
 *   has fired — never while the first holder still believes it holds the key.
 *
 * - a reply stalled on the wire (the fault proxy holds the store's replies for 60% of the TTL),
 *   then renewals black-holed, so only the deadline can end the lease;
 * - an event loop blocked for 60% of the TTL between the store's reply and the facade's handling of
 *   it (CPU work elsewhere in the process), renewals left working.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import type { LockBackend } from '../../src/core/locks/backend.js';
import { Locks, Semaphores } from '../../src/core/locks/facade.js';
import type { FaultProxy } from './fault-proxy.js';

const TTL_MS = 2_000;
const DELAY_MS = 1_200;

interface Timeline { fnStart: number; holderEnd: number; aborted: boolean; granted: number }

/** The holder's fn: holds until its signal fires or `holdMs` have passed; records when it stopped. */
function holdUntilLost(holdMs: number, t: Partial<Timeline>, onStart: () => void = () => {}) {
  return async (signal: AbortSignal) => {
    t.fnStart = performance.now();
    onStart();
    await new Promise<void>((resolve) => {
      const done = setTimeout(resolve, holdMs);
      signal.addEventListener('abort', () => { clearTimeout(done); resolve(); }, { once: true });
    });
    t.aborted = signal.aborted;
    t.holderEnd = performance.now();
  };
}

/** Waits (state, not time) until the store shows a holder of `key`. */
async function untilHeld(dibs: Dibs, key: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(5)) {
    if ((await dibs.locks.inspect(key)).holders.length > 0) return;
  }
  assert.fail(`${key} never showed a holder`);
}

function assertNoOverlap(t: Partial<Timeline>, what: string): void {
  assert.ok(t.fnStart !== undefined && t.holderEnd !== undefined && t.granted !== undefined, `${what}: incomplete timeline ${JSON.stringify(t)}`);
  assert.ok(t.granted >= t.holderEnd, `${what}: the next holder was granted the key ${(t.holderEnd - t.granted).toFixed(0)} ms before the first holder's signal fired (signal fired: ${t.aborted})`);
}

/**
 * The store's reply to the acquire is held on the wire for 60% of the TTL; then the holder's link
 * goes dark (black hole) so no renewal arrives. `proxied` reaches the store through `proxy`,
 * `direct` does not (the next holder).
 */
export async function assertStalledReplyFiresSignalFirst(proxied: string, direct: string, proxy: FaultProxy, key = 'stalled'): Promise<void> {
  const holder = await openDibs(proxied);
  const next = await openDibs(direct);
  const t: Partial<Timeline> = {};
  try {
    await holder.locks.inspect(key); // the holder's connection through the proxy is open
    const start = performance.now();
    const held = proxy.holdReplies(DELAY_MS);
    const run = holder.locks.runExclusive(key, holdUntilLost(60_000, t, () => proxy.blackhole(true)), { ttlMs: TTL_MS });
    await untilHeld(next, key); // the grant reached the store; its reply is held
    const lease = await next.locks.acquire(key, { ttlMs: 30_000, waitMs: 30_000 });
    t.granted = performance.now();
    await Promise.race([run, sleep(30_000).then(() => assert.fail('the holder\'s signal never fired'))]);
    await held;
    assert.ok(t.fnStart! - start >= DELAY_MS * 0.9, `the acquire reply was not held (fn started after ${(t.fnStart! - start).toFixed(0)} ms)`);
    assert.equal(t.aborted, true, 'the lease was lost: the signal must have fired');
    assertNoOverlap(t, 'stalled reply');
    await next.locks.release(lease);
  } finally {
    proxy.blackhole(false);
    proxy.reset(); // the black-holed renewal fails now instead of at its timeout
    await holder.close().catch(() => undefined);
    await next.close();
  }
}

/**
 * The holder's event loop is blocked for 60% of the TTL right after the store's grant came back,
 * before the facade handled it (a synchronous loop standing for CPU work of the same process).
 */
export async function assertBlockedLoopFiresSignalFirst(store: string, key = 'blocked'): Promise<void> {
  const holderDibs = await openDibs(store);
  const next = await openDibs(store);
  const t: Partial<Timeline> = {};
  try {
    const real = holderDibs.backend.locks!;
    let blockNext = true;
    // Forwards to the real store; only the first grant's reply is followed by the blocked loop.
    const blocking = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'tryAcquire') {
          return async (...args: Parameters<LockBackend['tryAcquire']>) => {
            const grant = await target.tryAcquire(...args);
            if (grant && blockNext) {
              blockNext = false;
              for (const until = performance.now() + DELAY_MS; performance.now() < until;) { /* the loop is blocked */ }
            }
            return grant;
          };
        }
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const holder = new Locks(new Semaphores(blocking, holderDibs.kind));
    const start = performance.now();
    const run = holder.runExclusive(key, holdUntilLost(TTL_MS * 1.6, t), { ttlMs: TTL_MS });
    // This process could not run at all while the loop was blocked: the next holder starts after.
    await untilHeld(next, key);
    const lease = await next.locks.acquire(key, { ttlMs: 30_000, waitMs: 30_000 });
    t.granted = performance.now();
    await run;
    assert.ok(t.fnStart! - start >= DELAY_MS * 0.9, `the loop was not blocked (fn started after ${(t.fnStart! - start).toFixed(0)} ms)`);
    assertNoOverlap(t, 'blocked event loop');
    await next.locks.release(lease);
  } finally {
    await holderDibs.close();
    await next.close();
  }
}
