/**
 * The lost-lease scenario against any store URL (the same steps as test/sqlite/lost-lease.test.ts):
 * a child holds `key` with runExclusive, is SIGSTOPped past its TTL, the parent takes the key with
 * a higher fence; after SIGCONT the child's signal fires and its late write (old fence) is
 * rejected by the fence guard.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { FenceGuard, openDibs } from '../../src/index.js';
import { workerArgs } from './node-worker.js';

const HOLDER = new URL('./lease-holder.ts', import.meta.url).pathname;

export async function assertLostLeaseIsFenced(store: string, key = 'job', ttlMs = 1000): Promise<void> {
  const dibs = await openDibs(store);
  const child = spawn(process.execPath, [...workerArgs(HOLDER), store, key, String(ttlMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const kill = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    const lines: string[] = [];
    let wake: () => void = () => {};
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      lines.push(...d.split('\n').filter(Boolean));
      wake();
    });
    const waitFor = async (prefix: string) => {
      for (let i = 0; i < 600 && !lines.some((l) => l.startsWith(prefix)); i++)
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 100);
        });
      const line = lines.find((l) => l.startsWith(prefix));
      assert.ok(line, `child never printed '${prefix}'`);
      return Number(line.split(' ')[1]);
    };
    const guard = new FenceGuard();
    const staleFence = await waitFor('held');
    guard.check('row', staleFence);
    child.kill('SIGSTOP');
    await sleep(ttlMs * 2.5);
    const lease = await dibs.locks.acquire(key, { ttlMs: 30_000, waitMs: 30_000 });
    assert.ok(lease.fence > staleFence);
    guard.check('row', lease.fence);
    child.kill('SIGCONT');
    assert.equal(await waitFor('lost'), staleFence);
    assert.equal(guard.accept('row', staleFence), false);
    await dibs.locks.release(lease);
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  } finally {
    clearTimeout(kill);
    if (child.exitCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await dibs.close();
  }
}
