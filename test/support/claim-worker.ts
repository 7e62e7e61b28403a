/**
 * One OS process of a claim storm (spawned by storm.ts), standing in for one serverless
 * instance. It opens its own Dibs on the store URL, says `ready`, waits for `go` on stdin
 * (so all processes start together), runs its claims with bounded concurrency and appends
 * every outcome to the result file as one JSON line the moment it is answered — so a process
 * killed mid-storm leaves behind exactly the answers it had received.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { readyThenGo } from './go.js';
import { isDibsError } from '../../src/index.js';
import { openWhenReachable } from './open-store.js';
import { retryUnavailable } from './retry-unavailable.js';
import type { StormOp, StormOutcome, WorkerConfig } from './storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WorkerConfig;
const dibs = await openWhenReachable(config.store, config.storeOptions ?? {});
await readyThenGo();

async function run(op: StormOp): Promise<StormOutcome> {
  if (config.paceMs) await new Promise((resolve) => setTimeout(resolve, config.paceMs));
  const started = performance.now();
  const startedAt = Date.now();
  let retries = 0;
  let outcome: Pick<StormOutcome, 'status' | 'code' | 'held' | 'replayed' | 'error'>;
  try {
    // any `unavailable`, ambiguous ones too (StormOptions.retryUnavailable: with the same key)
    const result = await retryUnavailable(
      () => dibs.pools.claim(config.pool, op.claimant, op.key ? { idempotencyKey: op.key } : {}),
      config.retryUnavailable ?? 0,
      { ambiguous: true, onRetry: () => retries++ },
    );
    outcome = { status: result.status, code: result.code, held: result.held, replayed: result.replayed };
  } catch (error) {
    outcome = { status: 'error', error: isDibsError(error) ? error.code : String(error) };
  }
  return {
    ...op,
    ...outcome,
    ...(retries ? { retries } : {}),
    ms: performance.now() - started,
    startedAt,
    endedAt: Date.now(),
  };
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
