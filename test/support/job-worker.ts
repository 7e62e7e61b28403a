/**
 * One OS process of a job race (see job-race.ts): after the start barrier it runs the sale jobs
 * (activation, expiration, hold sweep) in a tight loop from two lanes until told to stop, then
 * prints what this process claims to have done as one JSON line.
 */
import { createInterface } from 'node:readline';
import { openDibs } from '../../src/index.js';

const dibs = await openDibs(process.argv[2]!);
const lines = createInterface({ input: process.stdin });
let stopped = false;
const go = new Promise<void>((resolve) => {
  lines.on('line', (line) => {
    if (line === 'go') resolve();
    if (line === 'stop') stopped = true;
  });
});
process.stdout.write('ready\n');
await go;

const done = { announced: [] as string[], notifications: 0, ended: [] as string[], expired: 0, runs: 0 };
await Promise.all(
  Array.from({ length: 2 }, async () => {
    while (!stopped) {
      const activation = await dibs.sales.activateDue();
      done.announced.push(...activation.sales);
      done.notifications += activation.notifications;
      done.ended.push(...(await dibs.sales.endDue()));
      done.expired += await dibs.sales.expireHolds();
      done.runs++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }),
);
lines.close();
await dibs.close();
process.stdout.write(`${JSON.stringify(done)}\n`);
process.exit(0);
