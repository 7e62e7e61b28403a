/**
 * The service under a cgroup memory limit: `dibs serve` over SQLite (synchronous=full) as a real
 * process inside a child memory cgroup (test/support/cgroup.ts: cgroup v2 `memory.max`, or v1
 * `memory.limit_in_bytes` where the memory controller is on the v1 hierarchy, as in this
 * container), with the limit a little above what the idle process takes. Unlike V8's heap cap
 * (memory-limit.test.ts) this bounds everything the process holds: the heap, SQLite's page cache,
 * socket buffers, the code itself.
 *
 * A claim storm through HTTP (16 clients from this process, each claimant once) while one client
 * (two with FAULTS_LONG=1) exports the whole pool over and over for memory pressure. If the kernel's OOM killer ends the
 * service, its supervisor (the test) starts it again in the same cgroup and the clients carry on
 * against the new process; a claim whose connection broke is unacknowledged. Judged by the client
 * ledger against the store afterwards (the product's verifier, as for every claim storm): only 201
 * or 503 answers (never a 500), every acknowledged code held by its claimant, no code acknowledged
 * twice, nobody over the limit, the pool's audit clean.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { createMemoryCgroup, memoryCgroupUnavailable, type MemoryCgroup } from '../support/cgroup.js';
import { CLI_ARGS, ROOT } from '../support/cli.js';
import { LONG } from '../support/faults.js';
import { assertStormInvariants, type StormOutcome } from '../support/storm.js';

const skip = memoryCgroupUnavailable();
const CODES = LONG ? 10_000 : 3000;

/**
 * CI: a limit the service stays under (≈ 70–90 MB at peak here) — the storm must simply stay
 * correct. FAULTS_LONG=1 adds a limit just above what the process holds once the pool is imported,
 * where the OOM killer ends it again and again mid-storm and every restart must lose nothing.
 */
const ROUNDS: Array<{ limitMb: number; claimants: number; tightenToMb?: number }> = [
  { limitMb: Number(process.env.DIBS_CGROUP_LIMIT_MB ?? 128), claimants: LONG ? 4000 : 300 },
  // the limit lowered, once the pool is imported, to what the process then holds + 8 MB (≈ 72 MB
  // running from the sources through tsx, ≈ 48 MB from the built dist/)
  ...(LONG ? [{ limitMb: 128, claimants: 1200, tightenToMb: 8 }] : []),
];

interface Serving {
  child: ChildProcess;
  url: string;
  auth: string;
  exited: Promise<string>;
}

for (const { limitMb: LIMIT_MB, claimants: CLAIMANTS, tightenToMb } of ROUNDS)
  describe(`dibs serve in a ${tightenToMb ? `memory cgroup tightened to its use + ${tightenToMb} MB` : `${LIMIT_MB} MB memory cgroup`}`, {
    skip: skip ?? false,
    timeout: LONG ? 900_000 : 240_000,
  }, () => {
    let cgroup: MemoryCgroup;
    let dir: string;
    const children: ChildProcess[] = [];
    before(() => {
      cgroup = createMemoryCgroup(LIMIT_MB);
      dir = mkdtempSync(join(tmpdir(), 'dibs-cgroup-'));
    });
    after(() => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      cgroup?.remove();
      rmSync(dir, { recursive: true, force: true });
    });

    const store = () => `sqlite:${join(dir, 'dibs.db')}`;
    const serve = async (): Promise<Serving> => {
      const argv = cgroup.wrap([
        process.execPath,
        ...CLI_ARGS,
        'serve',
        '--port',
        '0',
        '--demo',
        '--rate-limit',
        '0',
        '--store',
        store(),
      ]);
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      const exited = new Promise<string>((resolve) =>
        child.on('exit', (code, signal) => resolve(String(signal ?? code))),
      );
      const started = await new Promise<{ url: string; key: string }>((resolve, reject) => {
        child.stderr!.on('data', (d) => {
          stderr += d;
          const u = /dibs is serving (http:\/\/\S+)/.exec(stderr);
          const k = /\b(dibs_[0-9a-f]+_[A-Za-z0-9_-]+)/.exec(stderr);
          if (u && k) resolve({ url: u[1]!, key: k[1]! });
        });
        void exited.then((how) =>
          reject(new Error(`the service exited (${how}) while starting:\n${stderr.slice(-2000)}`)),
        );
      });
      return { child, url: started.url, auth: `Bearer ${started.key}`, exited };
    };

    it('a claim storm through HTTP with exports for pressure: only 201/503, an OOM-kill loses no acknowledged claim', async () => {
      let service = await serve();
      const idle = cgroup.stats().peakBytes;
      const post = (path: string, body: string, type: string) =>
        fetch(`${service.url}${path}`, {
          method: 'POST',
          headers: { authorization: service.auth, 'content-type': type },
          body,
          signal: AbortSignal.timeout(60_000),
        });
      assert.equal((await post('/v1/pools', JSON.stringify({ name: 'mem' }), 'application/json')).status, 201);
      const csv = Array.from({ length: CODES }, (_, i) => `MEM-${String(i).padStart(8, '0')}-PADDING-PADDING`).join(
        '\n',
      );
      assert.equal((await post('/v1/pools/mem/codes', csv, 'text/csv')).status, 200);

      if (tightenToMb) cgroup.setLimit(cgroup.usage() + tightenToMb * 1024 * 1024);
      // the supervisor: a service that exits mid-storm (the OOM killer) is started again
      let done = false;
      const restarts: string[] = [];
      let back: Promise<void> = Promise.resolve();
      const supervise = (s: Serving) => {
        void s.exited.then((how) => {
          if (done) return;
          restarts.push(how);
          back = serve().then((next) => {
            service = next;
            supervise(next);
          });
        });
      };
      supervise(service);

      const outcomes: StormOutcome[] = [];
      const statuses = new Map<string, number>();
      let next = 0;
      const claimer = async () => {
        for (let i = next++; i < CLAIMANTS; i = next++) {
          const claimant = `c-${i}`;
          const started = performance.now();
          let outcome: StormOutcome;
          try {
            const res = await post('/v1/pools/mem/claims', JSON.stringify({ claimant }), 'application/json');
            const body = (await res.json()) as { code?: string; error?: { code: string } };
            statuses.set(String(res.status), (statuses.get(String(res.status)) ?? 0) + 1);
            outcome =
              res.status === 201
                ? { claimant, attempt: 0, status: 'claimed', code: body.code!, ms: performance.now() - started }
                : { claimant, attempt: 0, status: 'error', error: body.error?.code ?? String(res.status), ms: 0 };
          } catch {
            // the connection broke (the process was killed): unacknowledged; wait for the restart
            statuses.set('connection lost', (statuses.get('connection lost') ?? 0) + 1);
            outcome = { claimant, attempt: 0, status: 'error', error: 'connection-lost', ms: 0 };
            await sleep(100);
            await back.catch(() => undefined);
          }
          outcomes.push(outcome);
        }
      };
      let exports = 0;
      const exporter = async () => {
        while (!done) {
          try {
            const res = await fetch(`${service.url}/v1/pools/mem/export`, {
              headers: { authorization: service.auth },
              signal: AbortSignal.timeout(60_000),
            });
            for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>) {
              /* read to the end */
            }
            exports++;
          } catch {
            await sleep(100);
            await back.catch(() => undefined);
          }
        }
      };
      // (one exporter in CI: an export holds SQLite while it reads a batch, and the claims wait for it)
      const pressure = LONG ? [exporter(), exporter()] : [exporter()];
      const startedAt = performance.now();
      await Promise.all(Array.from({ length: 16 }, claimer));
      const stormS = (performance.now() - startedAt) / 1000;
      done = true;
      await Promise.all(pressure);
      await back;
      const { peakBytes, oomKills } = cgroup.stats();
      console.log(
        `[memory] dibs serve in a ${(cgroup.limitBytes / 1048576).toFixed(0)} MB cgroup (v${cgroup.version}): ${CODES} codes, ${CLAIMANTS} claims through HTTP in ${stormS.toFixed(1)} s with ${exports} full exports alongside; answers ${[...statuses].map(([s, n]) => `${s} ×${n}`).join(', ')}; peak ${(idle / 1048576).toFixed(0)} MB idle → ${(peakBytes / 1048576).toFixed(0)} MB; OOM kills ${oomKills}, restarts ${restarts.length}${restarts.length ? ` (${restarts.join(', ')})` : ''}`,
      );
      assert.deepEqual(
        [...statuses.keys()].filter((s) => !['201', '503', 'connection lost'].includes(s)),
        [],
        'only 201, 503 or a broken connection (a killed process), never a 500',
      );
      assert.equal(
        restarts.length > 0,
        statuses.has('connection lost'),
        'connections broke only when the process was killed',
      );

      // the ledger against the store, read by a separate handle after the service stopped
      service.child.kill('SIGTERM');
      await service.exited;
      const dibs = await openDibs(store());
      try {
        const summary = await assertStormInvariants(dibs, 'mem', outcomes, {
          codes: CODES,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable', 'connection-lost'],
          allowUnacknowledged: true,
        });
        console.log(`[memory] cgroup: codes given ${summary.codesGiven}, ledger violations 0, audit clean`);
      } finally {
        await dibs.close();
      }
    });
  });
