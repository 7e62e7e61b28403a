/**
 * One OS process of a forecast-alert race (see forecast-race.ts): after the start barrier it runs
 * the alert check (`checkWatches`) in a tight loop from two lanes until told to stop, then prints
 * the alerts this process was told it fired, as one JSON line.
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

const fired: string[] = [];
let runs = 0;
await Promise.all(
  Array.from({ length: 2 }, async () => {
    while (!stopped) {
      for (const f of await dibs.forecasts.checkWatches()) fired.push(f.subject);
      runs++;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }),
);
lines.close();
await dibs.close();
process.stdout.write(`${JSON.stringify({ fired, runs })}\n`);
process.exit(0);
