/**
 * Lock calls probed while a store is in trouble (a full disk, maxmemory): two leases are taken
 * beforehand, then — at once, so a store that is down costs one command timeout, not three — an
 * acquire of a new key, a renew of one lease and a release of the other. Once the store is back,
 * `check()` holds each answer to what the store kept: every answer is ok or `unavailable`; an
 * acquire answered ok is a lease the store holds with that fence (never a lease the store did not
 * keep); the renewed lease is still held, and with the answered expiry if the renew was ok; a
 * release answered ok left no holder. It then releases what the probes hold.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dibs, Lease } from '../../src/index.js';

// outlives a whole round on a loaded machine (a 120 s lease expired before check() at load ~60); check() releases them
const TTL_MS = 600_000;

/** Retries `unavailable` for up to ~30 s (a restarted store, a reconnecting handle). */
export async function whenBack<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if ((error as { code?: string }).code !== 'unavailable' || attempt >= 300) throw error;
      await sleep(100);
    }
  }
}

export interface ProbeAnswers {
  acquire?: Lease | string;
  renew?: Lease | string;
  release?: string;
}

export interface LeaseProbes {
  answers: ProbeAnswers;
  /** Runs the three calls; resolves to a line for the log. */
  probe(): Promise<string>;
  /** After recovery: the checks above; resolves to each probe key's last fence (for fence-growth checks). */
  check(): Promise<Map<string, number>>;
}

const answer = <T>(p: Promise<T>): Promise<T | string> =>
  p.then(
    (v) => v,
    (e: { code?: string }) => e.code ?? String(e),
  );
const shown = (a: Lease | string | undefined) => (typeof a === 'object' ? `ok (fence ${a.fence})` : String(a));

export async function takeProbeLeases(dibs: Dibs, prefix: string): Promise<LeaseProbes> {
  const keys = { acquire: `${prefix}-acquire`, renew: `${prefix}-renew`, release: `${prefix}-release` };
  const toRenew = await dibs.locks.acquire(keys.renew, { ttlMs: TTL_MS });
  const toRelease = await dibs.locks.acquire(keys.release, { ttlMs: TTL_MS });
  const answers: ProbeAnswers = {};
  const held = async (key: string) => (await whenBack(() => dibs.locks.inspect(key))).holders;
  return {
    answers,
    async probe() {
      [answers.acquire, answers.renew, answers.release] = await Promise.all([
        answer(dibs.locks.acquire(keys.acquire, { ttlMs: TTL_MS, waitMs: 0 })),
        answer(dibs.locks.renew(toRenew, { ttlMs: TTL_MS })),
        answer(dibs.locks.release(toRelease).then(() => 'ok')),
      ]);
      return `acquire ${shown(answers.acquire)}, renew ${shown(answers.renew)}, release ${answers.release}`;
    },
    async check() {
      for (const [op, a] of Object.entries(answers))
        assert.ok(typeof a === 'object' || a === 'ok' || a === 'unavailable', `${op} answered ${a}`);
      const fences = new Map([
        [keys.renew, toRenew.fence],
        [keys.release, toRelease.fence],
      ]);
      const { acquire, renew, release } = answers;
      if (typeof acquire === 'object') {
        fences.set(keys.acquire, acquire.fence);
        assert.deepEqual(
          (await held(keys.acquire)).map((h) => h.fence),
          [acquire.fence],
          'an acquire answered ok is a lease the store kept',
        );
      }
      const renewHolders = await held(keys.renew);
      assert.deepEqual(
        renewHolders.map((h) => h.fence),
        [toRenew.fence],
        'the lease renewed (or not) is still held',
      );
      if (typeof renew === 'object')
        assert.equal(renewHolders[0]!.expiresAt, renew.expiresAt, 'a renew answered ok is the expiry the store kept');
      if (release === 'ok') assert.deepEqual(await held(keys.release), [], 'a release answered ok left no holder');
      // what the probes still hold (a release answered `unavailable` may have been applied: not_owner then)
      const leases = [
        toRenew,
        ...(release === 'ok' ? [] : [toRelease]),
        ...(typeof acquire === 'object' ? [acquire] : []),
      ];
      for (const lease of leases) await whenBack(() => dibs.locks.release(lease)).catch(() => undefined);
      return fences;
    },
  };
}
