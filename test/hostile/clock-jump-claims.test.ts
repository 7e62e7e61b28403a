/**
 * Store clock jumps under a claim storm: a pool's validity window (`startsAt` … `expiresAt`) is
 * decided by the store's clock, so when that clock jumps forward past `expiresAt` the pool is
 * expired, when it jumps back before `startsAt` it is not yet valid, and when it comes back the
 * pool is open again. The same test-owned stores as clock-jump.test.ts (a PostgreSQL under
 * libfaketime, a redis-server with a preloaded clock shift; under FAULTS_LONG=1 also a 3-master
 * Redis Cluster with every node's clock moved), a claim storm from 2 processes (3 under FAULTS_LONG=1) running while the test
 * walks the store clock through real → +1 h → real → −1 h → real.
 *
 * Judged from the client side: every claim records when it was sent and answered (one wall clock
 * for all processes here); a claim that ran wholly inside one phase (after the store was seen at
 * that phase's offset, before the next jump) must have been answered by that phase's window — no
 * code newly handed out while the store's clock was outside the window (a keyed retry still replays
 * the code it got inside), no `expired`/`not_yet_valid`
 * while it was inside. The product's verifier checks the rest (no code acknowledged twice, every
 * acknowledged claim still held, the store's audit).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { uniqueId } from '../support/assert.js';
import {
  clockShiftUnavailable,
  faketimeUnavailable,
  startFakeClockCluster,
  startFakeClockPostgres,
  startFakeClockRedis,
  type FakeClockStore,
} from '../support/faketime.js';
import { LONG } from '../support/faults.js';
import { assertStormInvariants, runClaimStorm, type StormOutcome } from '../support/storm.js';

const WINDOW_S = 1800; // the pool is open from 30 min before the storm until 30 min after
const JUMP_S = 3600;

interface Phase {
  offsetS: number;
  /** What the pool's window is at this offset of the store's clock. */
  state: 'open' | 'expired' | 'not_yet_valid';
  /** Real time (ms) from when the store was seen at this offset until the next jump was issued. */
  from: number;
  to: number;
}

/** Claims that ran wholly inside one phase and were answered against that phase's window. */
export function windowViolations(outcomes: StormOutcome[], phases: Phase[]): string[] {
  const violations: string[] = [];
  for (const o of outcomes) {
    const phase = phases.find((p) => p.from <= o.startedAt! && o.endedAt! <= p.to);
    // straddles a jump: either answer is right; a keyed replay repeats its first answer, whenever it comes
    if (!phase || o.replayed) continue;
    const answered = o.status === 'error' ? o.error! : o.status;
    const right =
      phase.state === 'open' ? answered !== 'expired' && answered !== 'not_yet_valid' : answered === phase.state;
    if (!right)
      violations.push(
        `${o.claimant} answered ${answered}${o.code ? ` (${o.code})` : ''} while the store's clock was at ${phase.offsetS} s (window ${phase.state})`,
      );
  }
  return violations;
}

const stores: Array<{
  label: string;
  skip: string | false;
  start(): Promise<FakeClockStore>;
  scoped(url: string, tag: string): string;
}> = [
  {
    label: 'PostgreSQL',
    skip: faketimeUnavailable() ?? false,
    start: startFakeClockPostgres,
    scoped: (url, tag) => `${url}?schema=${tag}&queryTimeoutMs=5000`,
  },
  {
    label: 'Redis',
    skip: clockShiftUnavailable() ?? false,
    start: startFakeClockRedis,
    scoped: (url, tag) => `${url}?prefix=${tag}`,
  },
  {
    label: 'Redis Cluster',
    skip: LONG ? (clockShiftUnavailable() ?? false) : 'FAULTS_LONG=1 only',
    start: startFakeClockCluster,
    scoped: (url, tag) => `${url}?prefix=${tag}`,
  },
];

for (const kind of stores)
  describe(`${kind.label}: pool windows under store clock jumps`, { skip: kind.skip, timeout: 300_000 }, () => {
    let store: FakeClockStore;
    before(async () => {
      store = await kind.start();
    });
    after(async () => {
      await store?.stop();
    });

    it('a claim storm through jumps past expiresAt and before startsAt: no code outside the window, ledger clean', async () => {
      const tag = uniqueId('w').toLowerCase();
      const dibs = await openDibs(kind.scoped(store.url, tag));
      try {
        const claimants = LONG ? 12_000 : 700;
        const now = Date.now();
        await dibs.pools.create({
          name: 'window',
          startsAt: new Date(now - WINDOW_S * 1000).toISOString(),
          expiresAt: new Date(now + WINDOW_S * 1000).toISOString(),
        });
        await dibs.pools.importCodes(
          'window',
          Array.from({ length: claimants }, (_, i) => `W-${i}`),
        );
        const cycle: Array<[number, Phase['state']]> = [
          [0, 'open'],
          [JUMP_S, 'expired'],
          [0, 'open'],
          [-JUMP_S, 'not_yet_valid'],
        ];
        const schedule = [...Array.from({ length: LONG ? 3 : 1 }, () => cycle).flat(), [0, 'open'] as const];
        const phaseMs = LONG ? 2000 : 400;
        const phases: Phase[] = [];
        let walking: Promise<void> = Promise.resolve();
        let stormOver = false;
        const outcomes = await runClaimStorm({
          store: kind.scoped(store.url, tag),
          pool: 'window',
          processes: LONG ? 3 : 2,
          claimants,
          concurrency: 4,
          paceMs: 30, // ≤ 400 claims/s: the storm outlasts the walk
          timeoutMs: 240_000,
          onStart: () => {
            walking = (async () => {
              for (const [offsetS, state] of schedule) {
                store.jump(offsetS);
                // the phase begins once the store answers at its offset
                for (;;) {
                  const seen = ((await store.now()) - Date.now()) / 1000;
                  if (Math.abs(seen - offsetS) < 5) break;
                  await sleep(10);
                }
                const from = Date.now();
                await sleep(phaseMs);
                phases.push({ offsetS, state, from, to: Date.now() });
              }
            })();
          },
        }).finally(() => {
          stormOver = true;
        });
        const walkedDuringStorm = phases.length;
        await walking.finally(() => store.jump(0));
        assert.ok(stormOver);
        assert.equal(walkedDuringStorm, schedule.length, 'the storm outlasted the walk through the jumps');

        const violations = windowViolations(outcomes, phases);
        const inside = (state: Phase['state'], answered: string) =>
          outcomes.filter((o) =>
            phases.some(
              (p) =>
                p.state === state &&
                p.from <= o.startedAt! &&
                o.endedAt! <= p.to &&
                (o.status === 'error' ? o.error : o.status) === answered,
            ),
          ).length;
        const seen = {
          expired: inside('expired', 'expired'),
          notYet: inside('not_yet_valid', 'not_yet_valid'),
          // claims in the open phases after a jump back: the window opened again
          reopened: outcomes.filter((o) =>
            phases
              .slice(1)
              .some(
                (p) => p.state === 'open' && p.from <= o.startedAt! && o.endedAt! <= p.to && o.status === 'claimed',
              ),
          ).length,
        };
        const claimed = outcomes.filter((o) => o.status === 'claimed').length;
        console.log(
          `[clock] ${kind.label} pool window: phases ${phases.map((p) => `${p.offsetS >= 0 ? '+' : ''}${p.offsetS} s (${p.state}, ${p.to - p.from} ms)`).join(' → ')}; answers ${outcomes.length}, claimed ${claimed}, refused expired ${seen.expired} / not yet valid ${seen.notYet} inside closed phases, claimed after a jump back ${seen.reopened}; window violations ${violations.length}`,
        );
        assert.deepEqual(
          violations.slice(0, 10),
          [],
          `${violations.length} claims answered against the store's window`,
        );
        assert.ok(seen.expired > 0, 'claims were refused expired while the store clock was past expiresAt');
        assert.ok(seen.notYet > 0, 'claims were refused not_yet_valid while the store clock was before startsAt');
        assert.ok(seen.reopened > 0, 'claims succeeded again after the clock came back');
        await assertStormInvariants(dibs, 'window', outcomes, {
          codes: claimants,
          perClaimantLimit: 1,
          allowedErrors: ['expired', 'not_yet_valid'],
        });
      } finally {
        store.jump(0);
        await dibs.close();
      }
    });
  });
