/**
 * One OS process of the lock storm. argv: JSON config. Modes:
 * - `exclusive`: for `rounds` rounds, pick keys round-robin, runExclusive a short critical
 *   section and print one JSON line { key, start, end, fence, pid } per section.
 * - `count`: `rounds` × counters.incr(name) and print { done }.
 * Prints nothing else on stdout; exits non-zero on any unexpected error.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs } from '../../src/index.js';

interface Config { store: string; mode: 'exclusive' | 'count'; keys: string[]; rounds: number; holdMs: number; counter: string }
const config = JSON.parse(process.argv[2]!) as Config;
const dibs = await openDibs(config.store);
try {
  if (config.mode === 'exclusive') {
    for (let i = 0; i < config.rounds; i++) {
      const key = config.keys[(i + process.pid) % config.keys.length]!;
      await dibs.locks.runExclusive(key, async (_signal, lease) => {
        const start = performance.timeOrigin + performance.now();
        await sleep(config.holdMs);
        const end = performance.timeOrigin + performance.now();
        process.stdout.write(JSON.stringify({ key, start, end, fence: lease.fence, pid: process.pid }) + '\n');
      }, { ttlMs: 30_000, waitMs: 60_000 });
    }
  } else {
    for (let i = 0; i < config.rounds; i++) await dibs.counters.incr(config.counter, 1);
    process.stdout.write(JSON.stringify({ done: config.rounds }) + '\n');
  }
} finally {
  await dibs.close();
}
