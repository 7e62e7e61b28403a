/**
 * One process of sqlite-tail-ab.ts, run against any checkout `<root>` (its own src/, so an older
 * tree needs no copy of this file):
 *   seed  <root> <store> <codes>                    pool `bench` with `codes` codes
 *   claim <root> <store> <claims> <id> <in flight>  claims after the barrier; prints one JSON line
 * The JSON has the latencies and start times (ms since the start), the event loop's delay, GC
 * pauses, and — when the tree carries sqlite-write-probe.patch and DIBS_PROBE=1 — its write
 * batches and checkpoints.
 */
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { barrier } from '../lib/measure.js';

interface Dibs {
  pools: {
    create(spec: { name: string }): Promise<unknown>;
    importCodes(pool: string, codes: Iterable<string>): Promise<unknown>;
    claim(pool: string, claimant: string): Promise<unknown>;
  };
  close(): Promise<void>;
}

const [mode, root, store, count, id, inflight] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const srcOf = (path: string) => pathToFileURL(join(root, 'src', path)).href;
const { openDibs } = (await import(srcOf('index.ts'))) as { openDibs(store: string): Promise<Dibs> };
const dibs = await openDibs(store);

if (mode === 'seed') {
  await dibs.pools.create({ name: 'bench' });
  await dibs.pools.importCodes(
    'bench',
    (function* () {
      for (let i = 0; i < Number(count); i++) yield `DIBS-${i}`;
    })(),
  );
  await dibs.close();
} else {
  const database = (await import(srcOf('backends/sqlite/database.ts'))) as { probe?: { batches: number[][] } };
  let gcMs = 0;
  let gcMax = 0;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcMax = Math.max(gcMax, e.duration);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  const loop = monitorEventLoopDelay({ resolution: 1 });
  await barrier();
  loop.enable();
  const latencies: number[] = [];
  const starts: number[] = [];
  const claims = Number(count);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Number(inflight) }, async () => {
      while (next < claims) {
        const i = next++;
        const t = performance.now();
        await dibs.pools.claim('bench', `${id}-${i}`);
        starts.push(t - started);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  loop.disable();
  gc.disconnect();
  await dibs.close();
  const batches = (database.probe?.batches ?? []).map((b) => [b[0]! - started, ...b.slice(1)]);
  process.stdout.write(
    JSON.stringify({
      latencies,
      starts,
      seconds,
      batches,
      loop: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      gcMs,
      gcMax,
    }),
  );
}
