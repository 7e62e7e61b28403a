/**
 * One worker process of `dibs loadtest`, standing in for one serverless instance. It opens its
 * own client (the library on a store URL, or HTTP to a service), says `ready`, waits for `go`
 * on stdin so every process starts together, then sends its planned requests — each at its
 * planned time, at most `concurrency` in flight — and appends every answer to its result file
 * as one JSON line the moment it arrives. The coordinator tails those files for live progress,
 * and a process that dies leaves behind exactly the answers it had received.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { openWorkClient } from './targets/target.js';
import type { WorkerConfig } from './spawn.js';
import type { TimedOutcome } from './types.js';

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as WorkerConfig;
const client = await openWorkClient(config.target, config.mode, config.pool);
const out = openSync(config.resultFile, 'a');
process.stdout.write('ready\n');

const go = await new Promise<boolean>((resolve) => {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() === 'go') {
      resolve(true); // before close(): close() emits 'close' synchronously
      lines.close();
    }
  });
  // The coordinator went away before the start: nothing to do.
  lines.on('close', () => resolve(false));
});

if (go) {
  const start = performance.now();
  const ops = config.ops;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(config.concurrency, ops.length) }, async () => {
      while (next < ops.length) {
        const op = ops[next++]!;
        const wait = op.at - (performance.now() - start);
        if (wait > 0) await sleep(wait);
        const sent = performance.now() - start;
        const answer = await client.run(op);
        const outcome: TimedOutcome = {
          ...op,
          ...answer,
          process: config.index,
          sent: round(sent),
          ms: round(performance.now() - start - sent),
        };
        writeSync(out, `${JSON.stringify(outcome)}\n`);
      }
    }),
  );
}
closeSync(out);
await client.close();
process.exit(0);

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
