/**
 * The service under a memory limit: `dibs serve` as a real process with V8's heap capped
 * (`node --max-old-space-size=64`), over SQLite. A CSV import streams into the store as it arrives
 * and an export streams out in batches (backpressure from the socket), so neither holds the codes
 * in memory: a large import, two concurrent exports of all of it, and a JSON body over the body
 * limit (413, refused rather than buffered) must leave the process up and
 * answering. The process' peak resident size (VmHWM) is printed.
 *
 * CI size: 60,000 codes (1.2 MB of CSV in, 1.8 MB out per export) — a smoke test of the limit, not
 * a proof that buffering would fail; FAULTS_LONG=1: 1,000,000 codes (20 MB in, 30 MB per export).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CLI_ARGS, ROOT } from '../support/cli.js';
import { LONG } from '../support/faults.js';

const HEAP_MB = 64;
const CODES = LONG ? 1_000_000 : 60_000;

describe(`dibs serve with a ${HEAP_MB} MB heap`, {
  skip: process.platform !== 'linux' ? 'reads /proc' : false,
  timeout: LONG ? 900_000 : 300_000,
}, () => {
  it(`imports ${CODES.toLocaleString('en')} codes as a CSV stream and exports them twice at once without running out of memory`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dibs-memory-'));
    const child = spawn(
      process.execPath,
      [
        `--max-old-space-size=${HEAP_MB}`,
        ...CLI_ARGS,
        'serve',
        '--port',
        '0',
        '--demo',
        '--rate-limit',
        '0',
        '--store',
        `sqlite:${join(dir, 'dibs.db')}`,
      ],
      {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<string>((resolve) =>
      child.on('exit', (code, signal) => resolve(String(code ?? signal))),
    );
    let gone: string | undefined;
    void exited.then((how) => (gone = how));
    const killer = setTimeout(() => child.kill('SIGKILL'), LONG ? 850_000 : 280_000);
    const peakMb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
    try {
      const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
        child.stderr.on('data', () => {
          const u = /dibs is serving (http:\/\/\S+)/.exec(stderr);
          const k = /\b(dibs_[0-9a-f]+_[A-Za-z0-9_-]+)/.exec(stderr);
          if (u && k) resolve({ url: u[1]!, key: k[1]! });
        });
        void exited.then(() => reject(new Error(`server exited early:\n${stderr}`)));
      });
      const auth = { authorization: `Bearer ${key}` };
      const idleMb = peakMb();
      assert.equal(
        (
          await fetch(`${url}/v1/pools`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'big' }),
          })
        ).status,
        201,
      );

      // the import: generated as it is sent, 5,000 lines per chunk
      let next = 0;
      const csv = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (next >= CODES) return controller.close();
          let chunk = '';
          for (let j = 0; j < 5000 && next < CODES; j++, next++)
            chunk += `CODE-${String(next).padStart(10, '0')}-XYZ\n`;
          controller.enqueue(new TextEncoder().encode(chunk));
        },
      });
      let started = performance.now();
      const imported = await fetch(`${url}/v1/pools/big/codes`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'text/csv' },
        body: csv,
        duplex: 'half',
      } as RequestInit);
      assert.equal(imported.status, 200);
      assert.deepEqual(await imported.json(), { imported: CODES, duplicates: 0, invalid: 0 });
      const importS = (performance.now() - started) / 1000;
      const afterImportMb = peakMb();

      // two exports at once, read to the end
      started = performance.now();
      const exportAll = async () => {
        const res = await fetch(`${url}/v1/pools/big/export`, { headers: auth });
        assert.equal(res.status, 200);
        let lines = 0;
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
          for (const byte of chunk) if (byte === 10) lines++;
        return lines;
      };
      assert.deepEqual(
        await Promise.all([exportAll(), exportAll()]),
        [CODES + 1, CODES + 1],
        'both exports complete: a header and every code',
      );
      const exportS = (performance.now() - started) / 1000;

      // a JSON body over the 1 MiB limit is refused, not buffered
      const huge = JSON.stringify({ codes: Array.from({ length: 120_000 }, (_, i) => `J-${i}-PADDING`) });
      const refused = await fetch(`${url}/v1/pools/big/codes`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: huge,
      });
      assert.equal(refused.status, 413, await refused.text());

      const pool = (await (await fetch(`${url}/v1/pools/big`, { headers: auth })).json()) as {
        stats?: { total?: number };
        total?: number;
      };
      assert.equal(gone, undefined, `the service is still up:\n${stderr.slice(-2000)}`);
      const claimed = await fetch(`${url}/v1/pools/big/claims`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ claimant: 'after' }),
      });
      assert.equal(claimed.status, 201, 'and answers claims');
      console.log(
        `[memory] dibs serve, --max-old-space-size=${HEAP_MB}: imported ${CODES} codes (${((CODES * 20) / 1e6).toFixed(1)} MB CSV) in ${importS.toFixed(1)} s, two concurrent exports in ${exportS.toFixed(1)} s, a ${(huge.length / 1e6).toFixed(1)} MB JSON body refused 413; peak RSS ${idleMb.toFixed(0)} MB idle → ${afterImportMb.toFixed(0)} MB after the import → ${peakMb().toFixed(0)} MB after the exports; still serving (${JSON.stringify(pool.stats ?? pool.total ?? '')})`,
      );
    } finally {
      clearTimeout(killer);
      if (gone === undefined) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
