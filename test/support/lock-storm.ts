/**
 * Multi-process lock and counter storms against any store URL (SQLite file now; PostgreSQL
 * and Redis reuse it unchanged by passing their isolating URL).
 */
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';

const WORKER = new URL('./lock-worker.ts', import.meta.url).pathname;

export interface Section { key: string; start: number; end: number; fence: number; pid: number }

function runWorker(config: Record<string, unknown>, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.split('\n').filter(Boolean));
      else reject(new Error(`lock worker exited ${code}: ${err}`));
    });
  });
}

/** `processes` OS processes each run `rounds` critical sections over `keys`; returns the log. */
export async function runLockStorm(opts: { store: string; processes: number; keys: string[]; rounds: number; holdMs?: number; timeoutMs?: number }): Promise<Section[]> {
  const outs = await Promise.all(Array.from({ length: opts.processes }, () =>
    runWorker({ store: opts.store, mode: 'exclusive', keys: opts.keys, rounds: opts.rounds, holdMs: opts.holdMs ?? 5, counter: '' }, opts.timeoutMs ?? 120_000)));
  return outs.flat().map((line) => JSON.parse(line) as Section);
}

/** Per key: no two sections overlap and fences increase with time; across keys: some overlap. */
export function assertMutualExclusion(sections: Section[], keys: string[]): void {
  let crossKeyOverlap = false;
  for (const key of keys) {
    const mine = sections.filter((s) => s.key === key).sort((a, b) => a.start - b.start);
    for (let i = 1; i < mine.length; i++) {
      assert.ok(mine[i]!.start >= mine[i - 1]!.end, `key ${key}: sections overlap ${JSON.stringify(mine[i - 1])} / ${JSON.stringify(mine[i])}`);
      assert.ok(mine[i]!.fence > mine[i - 1]!.fence, `key ${key}: fence did not increase with time`);
    }
  }
  const all = [...sections].sort((a, b) => a.start - b.start);
  for (let i = 1; i < all.length && !crossKeyOverlap; i++) {
    for (let j = i - 1; j >= 0 && j >= i - 20; j--) if (all[j]!.key !== all[i]!.key && all[j]!.end > all[i]!.start) crossKeyOverlap = true;
  }
  assert.ok(crossKeyOverlap, 'different keys never ran concurrently: locks are too coarse');
}

/** `processes` OS processes each increment `counter` `rounds` times. */
export async function runCounterStorm(opts: { store: string; processes: number; counter: string; rounds: number; timeoutMs?: number }): Promise<void> {
  await Promise.all(Array.from({ length: opts.processes }, () =>
    runWorker({ store: opts.store, mode: 'count', keys: [], rounds: opts.rounds, holdMs: 0, counter: opts.counter }, opts.timeoutMs ?? 120_000)));
}
