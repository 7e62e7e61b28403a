/**
 * One OS process of a claim storm (spawned by storm.ts), standing in for one serverless
 * instance. It opens its own Dibs on the store URL, says `ready`, waits for `go` on stdin
 * (so all processes start together), runs its claims with bounded concurrency and writes
 * every outcome as JSON to the result file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isDibsError, openDibs } from '../../src/index.js';
import type { StormOp, StormOutcome, WorkerConfig } from './storm.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WorkerConfig;
const dibs = await openDibs(config.store, config.storeOptions ?? {});
process.stdout.write('ready\n');
await new Promise<void>((resolve) => {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() === 'go') {
      lines.close();
      resolve();
    }
  });
});

async function run(op: StormOp): Promise<StormOutcome> {
  const started = performance.now();
  try {
    const result = await dibs.pools.claim(config.pool, op.claimant, op.key ? { idempotencyKey: op.key } : {});
    return { ...op, status: result.status, code: result.code, held: result.held, replayed: result.replayed, ms: performance.now() - started };
  } catch (error) {
    return { ...op, status: 'error', error: isDibsError(error) ? error.code : String(error), ms: performance.now() - started };
  }
}

const outcomes: StormOutcome[] = [];
let next = 0;
await Promise.all(
  Array.from({ length: config.concurrency }, async () => {
    while (next < config.ops.length) outcomes.push(await run(config.ops[next++]!));
  }),
);
writeFileSync(config.resultFile, JSON.stringify(outcomes));
await dibs.close();
process.exit(0);
