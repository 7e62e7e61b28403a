/**
 * The predicted-empty alert raced by several OS processes: each runs the alert check in a tight
 * loop while the test drains a few watched pools past their "empty within a minute" line. Each
 * crossing must be recorded once (one `pool.empty_soon` event per pool, key `…:1`), and the
 * processes' acknowledged answers — the alerts `checkWatches` told them they fired — must name
 * each pool exactly once in total: no alert lost, none doubled.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Dibs } from '../../src/index.js';
import { workerArgs } from './node-worker.js';

const WORKER = fileURLToPath(new URL('./forecast-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function assertAlertRace(
  dibs: Dibs,
  store: string,
  { processes = 3, pools = 3, env = process.env }: { processes?: number; pools?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ runs: number; fired: number }> {
  const names = Array.from({ length: pools }, (_, i) => `race-${i}`);
  for (const name of names) {
    await dibs.pools.create({ name });
    await dibs.pools.importCodes(
      name,
      Array.from({ length: 40 }, (_, i) => `${name}-${i}`),
    );
    await dibs.forecasts.watchPool(name, 60_000);
  }
  const workers = Array.from({ length: processes }, () => {
    const child = spawn(process.execPath, [...workerArgs(WORKER), store], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { child, output: () => out, exited };
  });
  const deadline = Date.now() + 60_000;
  try {
    while (!workers.every((w) => w.output().includes('ready\n'))) {
      assert.ok(Date.now() < deadline, 'the workers did not start');
      await sleep(50);
    }
    for (const w of workers) w.child.stdin!.write('go\n');
    // drain every pool to 10 left, fast: each is then predicted empty within seconds
    await Promise.all(
      names.map(async (name) => {
        for (let i = 0; i < 30; i++) await dibs.pools.claim(name, `u${i}`);
      }),
    );
    const events = async () => (await dibs.pools.events({ limit: 1000 })).filter((e) => e.type === 'pool.empty_soon');
    while ((await events()).length < pools && Date.now() < deadline) await sleep(200);
    await sleep(1000); // more racing checks after the crossings: none may fire again
  } finally {
    for (const w of workers) w.child.stdin!.end('stop\n');
  }
  // a check stuck retrying (contention that never resolves) must fail the race, not hang it
  const timer = setTimeout(() => {
    for (const w of workers) w.child.kill('SIGKILL');
  }, 30_000);
  const codes = await Promise.all(workers.map((w) => w.exited));
  clearTimeout(timer);
  assert.deepEqual(
    codes,
    workers.map(() => 0),
    'every worker stops within 30 s of being told, and exits cleanly',
  );
  const reports = workers.map(
    (w) => JSON.parse(w.output().trim().split('\n').at(-1)!) as { fired: string[]; runs: number },
  );
  const fired = reports.flatMap((r) => r.fired).sort();
  const recorded = (await dibs.pools.events({ limit: 1000 })).filter((e) => e.type === 'pool.empty_soon');
  assert.deepEqual(
    recorded.map((e) => e.idempotencyKey).sort(),
    names.map((n) => `pool.empty_soon:${n}:1`),
    'one recorded crossing per pool',
  );
  assert.deepEqual(fired, names, 'the processes were told of each crossing exactly once in total');
  return { runs: reports.reduce((a, r) => a + r.runs, 0), fired: fired.length };
}
