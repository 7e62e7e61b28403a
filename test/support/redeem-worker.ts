/**
 * One OS process of a redemption storm (redeem-storm.ts), on the sale-storm protocol (config file,
 * start barrier, JSON lines): each op redeems code `op.customer` for order `op.key` — as its holder,
 * or, when `op.then` is 'confirm', directly as the claimant `op.key` (a public code never claimed, or
 * a multi-use code); with `op.kind` 'reserve' the claimant first holds the code for checkout
 * (`pools.hold`, 60 s) and then redeems it.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { isDibsError, openDibs } from '../../src/index.js';
import { readyThenGo } from './go.js';
import type { SaleWorkerConfig } from './sale-storm.js';
import type { RedeemOutcome } from './redeem-storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SaleWorkerConfig;
const dibs = await openDibs(config.store);
await readyThenGo();

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) {
      const op = config.ops[next++]!;
      let outcome: RedeemOutcome;
      try {
        const direct = op.then === 'confirm';
        if (op.kind === 'reserve') await dibs.pools.hold(config.sale, op.customer, op.key!, 60_000);
        const info = await dibs.pools.redeem(config.sale, op.customer, {
          orderId: op.key!,
          ...(direct ? { claimant: op.key! } : {}),
        });
        outcome = {
          code: op.customer,
          orderId: op.key!,
          status: 'ok',
          storedOrder: info.orderId,
          holder: info.claimant,
        };
      } catch (error) {
        outcome = {
          code: op.customer,
          orderId: op.key!,
          status: 'error',
          error: isDibsError(error) ? error.code : String(error),
        };
      }
      appendFileSync(config.resultFile, `${JSON.stringify(outcome)}\n`);
    }
  }),
);
await dibs.close();
process.exit(0);
