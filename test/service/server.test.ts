/**
 * The service as a real process: HTTP over a socket, and a graceful SIGTERM with claims in
 * flight — it exits 0 and every claim it answered 2xx is in the store after a restart, seen both
 * through a restarted service and through the library. The same with `--workers 2` (node:cluster):
 * one demo key printed by the primary, a killed worker restarted, SIGTERM forwarded to every worker.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get, request } from 'node:http';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { CLI_ARGS, ROOT } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';

interface Served {
  child: ChildProcess;
  url: string;
  key: string;
  exited: Promise<number | null>;
  stderr: () => string;
  /** The service's log (pino writes to stdout). */
  stdout: () => string;
}

/** Starts `dibs serve --demo` and reads its URL and the printed admin key from stderr. */
async function serve(store: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const child = spawn(
    process.execPath,
    [...CLI_ARGS, 'serve', '--port', '0', '--demo', '--rate-limit', '0', '--store', store, ...extra],
    { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  let stdout = '';
  child.stdout!.on('data', (d) => (stdout += d));
  const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      stderr += d;
      const url = /dibs is serving (http:\/\/\S+)/.exec(stderr);
      const key = /(dibs_[a-f0-9]{16}_[A-Za-z0-9_-]{32})/.exec(stderr);
      if (url && key) resolve({ url: url[1]!, key: key[1]! });
    });
    void exited.then(() => reject(new Error(`server exited early:\n${stderr}`)));
  });
  return { child, url, key, exited, stderr: () => stderr, stdout: () => stdout };
}

/** GET over a new connection (no keep-alive agent): the status, or 0 when refused. */
const freshConnectionStatus = (url: string) =>
  new Promise<number>((resolve) => {
    const req = get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });

/** Child processes of `pid` (the cluster's workers). */
const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function waitFor(what: string, ok: () => boolean | Promise<boolean>, ms = 120_000): Promise<void> {
  for (const until = Date.now() + ms; !(await ok()); ) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * 150 claims (half with an Idempotency-Key); SIGTERM lands once one is answered — twice, and on
 * every process of the service (primary and workers), as systemd's KillMode=control-group and
 * `kill -TERM -<pgid>` do: a repeated SIGTERM must not cut the graceful shutdown short. Waits
 * for the exit; returns the answered claims.
 */
async function claimBurstThenTerm(
  served: Served,
  prefix: string,
  workers: number[] = [],
): Promise<{ claimant: string; code: string }[]> {
  const answered: { claimant: string; code: string }[] = [];
  let firstAnswer!: () => void;
  const answeredOnce = new Promise<void>((resolve) => (firstAnswer = resolve));
  const claims = Array.from({ length: 150 }, async (_, i) => {
    try {
      const res = await fetch(`${served.url}/v1/pools/demo/claims`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${served.key}`,
          ...(i % 2 ? { 'idempotency-key': `${prefix}k${i}` } : {}),
        },
        body: JSON.stringify({ claimant: `${prefix}c${i}` }),
      });
      if (res.status === 201) {
        answered.push({ claimant: `${prefix}c${i}`, code: ((await res.json()) as { code: string }).code });
        firstAnswer();
      } else await res.body?.cancel();
    } catch {
      // refused after shutdown began: not acknowledged, nothing to check
    }
  });
  await answeredOnce;
  served.child.kill('SIGTERM');
  const termAt = Date.now();
  for (const pid of [served.child.pid!, ...workers]) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await Promise.all(claims);
  // The claims' keep-alive connections stay open on this side: a server that waited for them to
  // go away would exit only after its 72 s keep-alive timeout (it once did, after a worker restart).
  // A bound far above a graceful exit (about 2 s), far below that timeout: not a speed test.
  await served.exited;
  assert.ok(
    Date.now() - termAt < 45_000,
    `exited ${Date.now() - termAt} ms after SIGTERM: idle keep-alive connections held the shutdown`,
  );
  return answered;
}

describe('dibs serve', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('serves over HTTP and shuts down gracefully without losing an answered claim', async () => {
    const first = await serve(temp.store);
    const killer = setTimeout(() => first.child.kill('SIGKILL'), 180_000); // a bound, not a speed test
    let answered: { claimant: string; code: string }[];
    try {
      assert.equal((await fetch(`${first.url}/readyz`)).status, 200);
      assert.equal((await fetch(`${first.url}/v1/pools/demo`)).status, 401, 'no key → 401');
      answered = await claimBurstThenTerm(first, '');
      assert.equal(await first.exited, 0, 'exit code 0 after SIGTERM');
      assert.ok(answered.length > 0, 'some claims were answered before shutdown');
    } finally {
      clearTimeout(killer);
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
    await assertKept(temp.store, answered, first.key);
  });

  it('--workers 2: one demo key, a killed worker is restarted, SIGTERM reaches every worker and no answered claim is lost', async () => {
    const store = tempSqliteStore();
    const first = await serve(store.store, ['--workers', '2']);
    const killer = setTimeout(() => first.child.kill('SIGKILL'), 360_000); // a bound, not a speed test
    let answered: { claimant: string; code: string }[];
    let workers: number[] = [];
    try {
      assert.match(first.stderr(), /\(2 workers\)/);
      assert.equal(first.stderr().match(/local admin API key/g)?.length, 1, 'the primary prints the demo key once');
      workers = childrenOf(first.child.pid!);
      assert.equal(workers.length, 2, 'two workers');

      // A worker dies: the primary forks a replacement, and the port keeps serving.
      process.kill(workers[0]!, 'SIGKILL');
      await waitFor('a replacement worker', () => /worker \d+ \(restarted\) is serving/.test(first.stderr()), 180_000);
      await waitFor('every worker to serve', async () => {
        // Each fetch opens its own connection (round-robin across workers): a few must all succeed.
        const answers = await Promise.all(
          Array.from({ length: 4 }, () => freshConnectionStatus(`${first.url}/readyz`)),
        );
        return answers.every((status) => status === 200);
      });
      workers = childrenOf(first.child.pid!);
      assert.equal(workers.length, 2);

      answered = await claimBurstThenTerm(first, 'w', workers);
      assert.equal(await first.exited, 0, 'the primary exits 0 once every worker shut down gracefully');
      assert.ok(answered.length > 0, 'some claims were answered before shutdown');
      for (const pid of workers) await waitFor(`worker ${pid} to exit`, () => !alive(pid), 30_000);
    } finally {
      clearTimeout(killer);
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
      for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    try {
      await assertKept(store.store, answered, first.key);
    } finally {
      store.cleanup();
    }
  });

  it('a lock acquire still waiting when SIGTERM lands is answered 503 (retriable) and does not hold the shutdown', async () => {
    const store = tempSqliteStore();
    const served = await serve(store.store);
    const killer = setTimeout(() => served.child.kill('SIGKILL'), 120_000); // a bound, not a speed test
    try {
      const call = (path: string, body?: unknown) =>
        fetch(`${served.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${served.key}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      assert.equal((await call('/v1/locks/door/acquire', { ttlMs: 600_000 })).status, 201);
      // Ten minutes of waiting allowed: without the shutdown signal the process would stay up for them.
      const waiting = call('/v1/locks/door/acquire', { waitMs: 600_000 });
      await waitFor(
        'the waiter to register',
        async () => ((await (await call('/v1/locks/door')).json()) as { waiters: number }).waiters === 1,
        30_000,
      );
      served.child.kill('SIGTERM');
      const answer = await waiting;
      assert.equal(answer.status, 503);
      assert.equal(answer.headers.get('retry-after'), '1');
      const body = (await answer.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'unavailable');
      assert.match(body.error.message, /shutting down/);
      assert.equal(await served.exited, 0);
    } finally {
      clearTimeout(killer);
      if (served.child.exitCode === null) served.child.kill('SIGKILL');
      store.cleanup();
    }
  });

  it('a request that never ends (a stalled CSV upload) holds the shutdown only until shutdownTimeoutMs, a repeated SIGTERM does not cut it short, the store closes and the process exits 0', async () => {
    const store = tempSqliteStore();
    const served = await serve(store.store, [], { DIBS_SHUTDOWN_TIMEOUT_MS: '1500' });
    const killer = setTimeout(() => served.child.kill('SIGKILL'), 120_000); // a bound, not a speed test
    try {
      const { hostname, port } = new URL(served.url);
      const upload = request({
        hostname,
        port,
        method: 'POST',
        path: '/v1/pools/demo/codes',
        headers: { authorization: `Bearer ${served.key}`, 'content-type': 'text/csv', 'transfer-encoding': 'chunked' },
      });
      const cut = new Promise<string>((resolve) => {
        upload.on('response', (res) => resolve(`answered ${res.statusCode}`));
        upload.on('error', (error) => resolve(`cut: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
      });
      upload.write('code\nSTALL-1\n'); // and never ends
      await new Promise((resolve) => setTimeout(resolve, 300));
      served.child.kill('SIGTERM');
      const termAt = Date.now();
      // A second SIGTERM in the middle of the shutdown (systemd signals every process of the
      // unit; a supervisor may repeat itself) changes nothing: no default "terminate at once".
      await new Promise((resolve) => setTimeout(resolve, 400));
      served.child.kill('SIGTERM');
      // Node itself would drop the upload only at its 300 s requestTimeout.
      assert.equal(await served.exited, 0);
      assert.ok(Date.now() - termAt < 60_000, `exited ${Date.now() - termAt} ms after SIGTERM`);
      assert.match(await cut, /^cut: /, 'the stalled upload was never answered');
      assert.match(served.stdout(), /shutdown deadline reached/);
      // the store was closed cleanly and the pool is intact
      const dibs = await openDibs(store.store);
      try {
        assert.deepEqual(await dibs.pools.audit('demo'), []);
      } finally {
        await dibs.close();
      }
    } finally {
      clearTimeout(killer);
      if (served.child.exitCode === null) served.child.kill('SIGKILL');
      store.cleanup();
    }
  });
});

/** Restarts the service on `store`: every acknowledged claim is there, through HTTP and through the library. */
async function assertKept(
  store: string,
  answered: { claimant: string; code: string }[],
  oldKey: string,
): Promise<void> {
  const second = await serve(store);
  const killer2 = setTimeout(() => second.child.kill('SIGKILL'), 60_000);
  try {
    for (const { claimant, code } of answered) {
      const res = await fetch(`${second.url}/v1/pools/demo/codes/${code}`, {
        headers: { authorization: `Bearer ${second.key}` },
      });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { claimant: string }).claimant, claimant);
    }
    // The first run's key was revoked by the second --demo start (a fresh one is printed each time).
    assert.equal(
      (await fetch(`${second.url}/v1/pools/demo`, { headers: { authorization: `Bearer ${oldKey}` } })).status,
      401,
    );
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  } finally {
    clearTimeout(killer2);
    if (second.child.exitCode === null) second.child.kill('SIGKILL');
  }
  const dibs = await openDibs(store);
  try {
    for (const { claimant, code } of answered) assert.equal((await dibs.pools.code('demo', code)).claimant, claimant);
    assert.deepEqual(await dibs.pools.audit('demo'), []);
  } finally {
    await dibs.close();
  }
}
