/**
 * The service as a real process: HTTP over a socket, and a graceful SIGTERM with claims in
 * flight — it exits 0 and every claim it answered 2xx is in the store afterwards.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { CLI, ROOT } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('dibs serve', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('serves over HTTP and shuts down gracefully without losing an answered claim', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--demo', '--store', temp.store], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      let stderr = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (d) => {
          stderr += d;
          const match = /dibs is serving (http:\/\/\S+)/.exec(stderr);
          if (match) resolve(match[1]!);
        });
        void exited.then(() => reject(new Error(`server exited early:\n${stderr}`)));
      });
      const health = await fetch(`${url}/readyz`);
      assert.equal(health.status, 200);

      // A burst of claims; SIGTERM lands while they are in flight.
      const answered: { claimant: string; code: string }[] = [];
      let firstAnswer!: () => void;
      const answeredOnce = new Promise<void>((resolve) => (firstAnswer = resolve));
      const claims = Array.from({ length: 150 }, async (_, i) => {
        try {
          const res = await fetch(`${url}/v1/pools/demo/claims`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ claimant: `c${i}` }) });
          if (res.status === 201) {
            answered.push({ claimant: `c${i}`, code: ((await res.json()) as { code: string }).code });
            firstAnswer();
          } else await res.body?.cancel();
        } catch {
          // refused after shutdown began: not acknowledged, nothing to check
        }
      });
      await answeredOnce;
      child.kill('SIGTERM');
      await Promise.all(claims);
      assert.equal(await exited, 0, 'exit code 0 after SIGTERM');
      assert.ok(answered.length > 0, 'some claims were answered before shutdown');

      const dibs = await openDibs(temp.store);
      try {
        for (const { claimant, code } of answered) assert.equal((await dibs.pools.code('demo', code)).claimant, claimant);
        assert.deepEqual(await dibs.pools.audit('demo'), []);
      } finally {
        await dibs.close();
      }
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
