import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { FenceGuard, openDibs } from '../../src/index.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { workerArgs } from '../support/node-worker.js';

const HOLDER = new URL('../support/lease-holder.ts', import.meta.url).pathname;

describe('sqlite: a holder paused past its TTL', () => {
  it('loses its lease (signal fires) and its late write is rejected by the fence guard', async () => {
    const temp = tempSqliteStore();
    const dibs = await openDibs(temp.store);
    const child = spawn(process.execPath, [...workerArgs(HOLDER), temp.store, 'job', '1000'], {
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
      await sleep(2_500);
      const lease = await dibs.locks.acquire('job', { ttlMs: 30_000, waitMs: 30_000 });
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
      temp.cleanup();
    }
  });
});
