/**
 * One OS process of an admin-change claim storm (admin-storm-suite.ts): claims on a schedule (each
 * op at `atMs` after the start barrier), every answer appended as a JSON line stamped with
 * CLOCK_MONOTONIC when the request was sent and when the answer came back.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs } from '../../src/index.js';
import { monoUs } from './admin-storm.js';
import { readyThenGo } from './go.js';
import { retryUnavailable } from './retry-unavailable.js';
import type { ClaimOp, ClaimRecord } from './admin-storm-suite.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  store: string;
  pool: string;
  ops: ClaimOp[];
  concurrency: number;
  resultFile: string;
};
const dibs = await openDibs(config.store);
await readyThenGo();
const start = Date.now();

async function run(op: ClaimOp): Promise<ClaimRecord> {
  await sleep(Math.max(0, start + op.atMs - Date.now()));
  const t0 = monoUs();
  try {
    // t0 stays the first attempt's: the record spans every retry, so the checker's candidate rule versions do too
    const r = await retryUnavailable(() =>
      dibs.pools.claim(config.pool, op.claimant, op.key ? { idempotencyKey: op.key } : {}),
    );
    return { ...op, t0, t1: monoUs(), status: r.status, code: r.code, held: r.held, replayed: r.replayed };
  } catch (error) {
    return { ...op, t0, t1: monoUs(), status: 'error', error: isDibsError(error) ? error.code : String(error) };
  }
}

let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length)
      appendFileSync(config.resultFile, `${JSON.stringify(await run(config.ops[next++]!))}\n`);
  }),
);
await dibs.close();
process.exit(0);
