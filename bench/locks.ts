/**
 * Contended lock handoff on SQLite: dibs locks (release event wakes in-process waiters, bounded
 * safety-net poll otherwise) vs a seed-style lock that re-polls every second. W waiters in one
 * process contend for one key; each holds it for ~1 ms. Reports handoff latency (release →
 * next grant) p50/p99 and acquisitions/s, plus ratios. Noisy on a shared machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Lease } from '../src/index.js';

const WAITERS = 4;
const ACQUISITIONS = Number(process.env.LOCK_BENCH_N ?? 40);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function run(label: string, acquire: (key: string) => Promise<Lease>, release: (l: Lease) => Promise<void>) {
  const handoffs: number[] = [];
  let lastRelease = 0;
  let done = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: WAITERS }, async () => {
    while (done < ACQUISITIONS) {
      const lease = await acquire('hot');
      if (lastRelease) handoffs.push(performance.now() - lastRelease);
      done++;
      await sleep(1);
      lastRelease = performance.now();
      await release(lease);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  const r = { label, p50: pct(handoffs, 50), p99: pct(handoffs, 99), perSecond: done / seconds };
  console.log(`${label.padEnd(28)} handoff p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  ${r.perSecond.toFixed(1)} acq/s`);
  return r;
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-locks-'));
  const dibs = await openDibs(`sqlite:${join(dir, 'dibs.db')}`);
  try {
    // Baseline: try once, otherwise sleep 1 s and retry (the seed's polling lock).
    const polling = await run('sqlite 1 s polling lock', async (key) => {
      for (;;) {
        const lease = await dibs.locks.tryAcquire(key, { ttlMs: 30_000 });
        if (lease) return lease;
        await sleep(1000);
      }
    }, (l) => dibs.locks.release(l));
    const evented = await run('sqlite dibs.locks.acquire', (key) => dibs.locks.acquire(key, { ttlMs: 30_000, waitMs: 60_000 }), (l) => dibs.locks.release(l));
    console.log(`ratio: handoff p50 ${(polling.p50 / evented.p50).toFixed(0)}× lower, p99 ${(polling.p99 / evented.p99).toFixed(0)}× lower, throughput ${(evented.perSecond / polling.perSecond).toFixed(0)}× higher`);
  } finally {
    await dibs.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
