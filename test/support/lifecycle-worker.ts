/**
 * One OS process of a lifecycle storm (lifecycle-storm.test.ts files), on the sale-storm protocol
 * (config file, start barrier, JSON lines): op kind 'buy' claims one code for claimant `op.key`;
 * kind 'reserve' holds code `op.customer` for claimant `op.key` (60 s checkout) and then redeems
 * it for that claimant; kind 'buy' with `op.customer` set redeems that (multi-use) code directly for
 * claimant and order `op.key`. `op.delayMs` paces an op (so some run after a window opened or closed).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs } from '../../src/index.js';
import { readyThenGo } from './go.js';
import { retryUnavailable } from './retry-unavailable.js';
import type { SaleWorkerConfig } from './sale-storm.js';

export interface LifecycleOutcome {
  step: 'claim' | 'hold' | 'redeem';
  claimant: string;
  /** The code claimed, or the one held / redeemed. */
  code: string | null;
  status: 'ok' | 'error';
  error?: string;
}

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SaleWorkerConfig;
const dibs = await openDibs(config.store);
await readyThenGo();

const record = (outcome: LifecycleOutcome) => appendFileSync(config.resultFile, `${JSON.stringify(outcome)}\n`);
const errorCode = (error: unknown) => (isDibsError(error) ? error.code : String(error));
// every step is retried after a non-ambiguous `unavailable`, as the contract tells a client: a starved
// emulator answered some claims so after its 30 s contention bound (CI: "unexpected unavailable")

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) {
      const op = config.ops[next++]!;
      if (op.delayMs) await sleep(op.delayMs);
      const claimant = op.key!;
      if (op.kind === 'buy' && op.customer) {
        try {
          await retryUnavailable(() => dibs.pools.redeem(config.sale, op.customer, { claimant, orderId: claimant }));
          record({ step: 'redeem', claimant, code: op.customer, status: 'ok' });
        } catch (error) {
          record({ step: 'redeem', claimant, code: op.customer, status: 'error', error: errorCode(error) });
        }
        continue;
      }
      if (op.kind === 'buy') {
        try {
          record({
            step: 'claim',
            claimant,
            code: (await retryUnavailable(() => dibs.pools.claim(config.sale, claimant))).code,
            status: 'ok',
          });
        } catch (error) {
          record({ step: 'claim', claimant, code: null, status: 'error', error: errorCode(error) });
        }
        continue;
      }
      try {
        await retryUnavailable(() => dibs.pools.hold(config.sale, op.customer, claimant, 60_000));
        record({ step: 'hold', claimant, code: op.customer, status: 'ok' });
      } catch (error) {
        record({ step: 'hold', claimant, code: op.customer, status: 'error', error: errorCode(error) });
        continue;
      }
      try {
        await retryUnavailable(() =>
          dibs.pools.redeem(config.sale, op.customer, { claimant, orderId: `order-${claimant}` }),
        );
        record({ step: 'redeem', claimant, code: op.customer, status: 'ok' });
      } catch (error) {
        record({ step: 'redeem', claimant, code: op.customer, status: 'error', error: errorCode(error) });
      }
    }
  }),
);
await dibs.close();
process.exit(0);
