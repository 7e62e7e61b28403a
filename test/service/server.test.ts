/**
 * The service as a real process: HTTP over a socket, and a graceful SIGTERM with claims in
 * flight — it exits 0 and every claim it answered 2xx is in the store after a restart, seen both
 * through a restarted service and through the library.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { CLI, ROOT } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';

interface Served {
  child: ChildProcess;
  url: string;
  key: string;
  exited: Promise<number | null>;
}

/** Starts `dibs serve --demo` and reads its URL and the printed admin key from stderr. */
async function serve(store: string): Promise<Served> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--demo', '--rate-limit', '0', '--store', store], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      stderr += d;
      const url = /dibs is serving (http:\/\/\S+)/.exec(stderr);
      const key = /(dibs_[a-f0-9]{16}_[A-Za-z0-9_-]{32})/.exec(stderr);
      if (url && key) resolve({ url: url[1]!, key: key[1]! });
    });
    void exited.then(() => reject(new Error(`server exited early:\n${stderr}`)));
  });
  return { child, url, key, exited };
}

describe('dibs serve', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('serves over HTTP and shuts down gracefully without losing an answered claim', async () => {
    const first = await serve(temp.store);
    const killer = setTimeout(() => first.child.kill('SIGKILL'), 180_000); // a bound, not a speed test
    const answered: { claimant: string; code: string }[] = [];
    try {
      assert.equal((await fetch(`${first.url}/readyz`)).status, 200);
      assert.equal((await fetch(`${first.url}/v1/pools/demo`)).status, 401, 'no key → 401');

      // A burst of claims (half with an Idempotency-Key); SIGTERM lands while they are in flight.
      let firstAnswer!: () => void;
      const answeredOnce = new Promise<void>((resolve) => (firstAnswer = resolve));
      const claims = Array.from({ length: 150 }, async (_, i) => {
        try {
          const res = await fetch(`${first.url}/v1/pools/demo/claims`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${first.key}`, ...(i % 2 ? { 'idempotency-key': `k${i}` } : {}) },
            body: JSON.stringify({ claimant: `c${i}` }),
          });
          if (res.status === 201) {
            answered.push({ claimant: `c${i}`, code: ((await res.json()) as { code: string }).code });
            firstAnswer();
          } else await res.body?.cancel();
        } catch {
          // refused after shutdown began: not acknowledged, nothing to check
        }
      });
      await answeredOnce;
      first.child.kill('SIGTERM');
      await Promise.all(claims);
      assert.equal(await first.exited, 0, 'exit code 0 after SIGTERM');
      assert.ok(answered.length > 0, 'some claims were answered before shutdown');
    } finally {
      clearTimeout(killer);
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }

    // Restart: every acknowledged claim is there, through HTTP and through the library.
    const second = await serve(temp.store);
    const killer2 = setTimeout(() => second.child.kill('SIGKILL'), 60_000);
    try {
      for (const { claimant, code } of answered) {
        const res = await fetch(`${second.url}/v1/pools/demo/codes/${code}`, { headers: { authorization: `Bearer ${second.key}` } });
        assert.equal(res.status, 200);
        assert.equal(((await res.json()) as { claimant: string }).claimant, claimant);
      }
      // The first run's key was revoked by the second --demo start (a fresh one is printed each time).
      assert.equal((await fetch(`${second.url}/v1/pools/demo`, { headers: { authorization: `Bearer ${first.key}` } })).status, 401);
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    } finally {
      clearTimeout(killer2);
      if (second.child.exitCode === null) second.child.kill('SIGKILL');
    }
    const dibs = await openDibs(temp.store);
    try {
      for (const { claimant, code } of answered) assert.equal((await dibs.pools.code('demo', code)).claimant, claimant);
      assert.deepEqual(await dibs.pools.audit('demo'), []);
    } finally {
      await dibs.close();
    }
  });
});
