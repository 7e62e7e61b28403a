/**
 * Sale jobs raced from several OS processes at once: activation, expiration and the hold sweep
 * run in a tight loop in every process while sales come due, and each sale must still be
 * announced once, each wishlister notified once per channel, each end and expiry recorded once
 * (I7). Written once, run against every store that sells.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Sale } from '../../src/index.js';
import type { StormEnv } from './sale-storm-suite.js';
import { workerArgs } from './node-worker.js';

const WORKER = fileURLToPath(new URL('./job-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface WorkerReport {
  announced: string[];
  notifications: number;
  ended: string[];
  expired: number;
  runs: number;
}

export function jobRaceSuite(label: string, env: StormEnv, options: { processes?: number } = {}): void {
  const processes = options.processes ?? 4;

  describe(`${label}: sale jobs raced by ${processes} processes`, () => {
    it('announces, notifies, ends and expires exactly once each', async () => {
      const { dibs } = env;
      const SALES = 4;
      const FANS = 30;
      const skus = Array.from({ length: SALES }, (_, i) => `RACE-${i}`);
      for (const sku of skus) {
        for (let f = 0; f < FANS; f++)
          await dibs.sales.wish(sku, `fan-${f}`, {
            email: `fan-${f}@example.com`,
            webhook: `http://127.0.0.1:9/fan-${f}`,
          });
      }
      const workers = Array.from({ length: processes }, (_, i) => {
        const child = spawn(process.execPath, [...workerArgs(WORKER), env.store], {
          cwd: ROOT,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        const ready = new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (d) => {
            stdout += d;
            if (stdout.includes('ready\n')) resolve();
          });
          child.once('exit', (code) =>
            reject(new Error(`job worker ${i} exited (${code}) before it was ready:\n${stderr}`)),
          );
        });
        const report = new Promise<WorkerReport>((resolve, reject) =>
          child.once('exit', (code) =>
            code === 0
              ? resolve(
                  JSON.parse(
                    stdout
                      .split('\n')
                      .filter((l) => l.startsWith('{'))
                      .pop()!,
                  ) as WorkerReport,
                )
              : reject(new Error(`job worker ${i} failed (${code}):\n${stderr}`)),
          ),
        );
        ready.catch(() => {});
        report.catch(() => {});
        return { child, ready, report };
      });
      const timer = setTimeout(() => workers.forEach((w) => w.child.kill('SIGKILL')), 120_000);
      try {
        await Promise.all(workers.map((w) => w.ready));
        // The sales come due while every worker is already looping over the jobs.
        const sales: Sale[] = [];
        for (const sku of skus) {
          sales.push(
            await dibs.sales.create({
              sku,
              startsAt: new Date(Date.now() + 800).toISOString(),
              endsAt: new Date(Date.now() + 6000).toISOString(),
              cap: 50,
              perCustomerLimit: 5,
            }),
          );
        }
        for (const w of workers) w.child.stdin.write('go\n');
        // Holds that expire under the racing sweepers.
        for (
          const deadline = Date.now() + 30_000;
          (await dibs.sales.get(sales[0]!.id)).status === 'scheduled' && Date.now() < deadline;
        )
          await sleep(20);
        const reserved = new Map<string, number>(); // sale id -> holds placed (left to expire)
        for (const sale of sales) {
          for (let c = 0; c < 5; c++) {
            const ok = await dibs.sales.reserve(sale.id, `shopper-${c}`, 1, 1000).then(
              () => 1,
              () => 0,
            );
            reserved.set(sale.id, (reserved.get(sale.id) ?? 0) + ok);
          }
        }
        // Run until every sale's end has been recorded (bounded, generously).
        const ended = async () => {
          for (const sale of sales)
            if (!(await dibs.sales.events({ sale: sale.id, limit: 1000 })).some((e) => e.type === 'sale.ended'))
              return false;
          return true;
        };
        for (const deadline = Date.now() + 60_000; !(await ended()) && Date.now() < deadline; ) await sleep(50);
        await sleep(1200); // past every hold's expiry, so the sweepers have it too
        for (const w of workers) w.child.stdin.end('stop\n');
        const reports = await Promise.all(workers.map((w) => w.report));
        assert.ok(
          reports.every((r) => r.runs > 0),
          'every process ran the jobs',
        );

        const announced = reports.flatMap((r) => r.announced).sort();
        assert.deepEqual(announced, sales.map((s) => s.id).sort(), 'each sale announced by exactly one process');
        assert.equal(
          reports.reduce((n, r) => n + r.notifications, 0),
          SALES * FANS * 2,
          'notifications counted once across processes',
        );
        assert.deepEqual(
          reports.flatMap((r) => r.ended).sort(),
          sales.map((s) => s.id).sort(),
          'each end recorded by exactly one process',
        );
        for (const sale of sales) {
          const events = await dibs.sales.events({ sale: sale.id, limit: 1000 });
          const count = (type: string) => events.filter((e) => e.type === type).length;
          assert.equal(count('sale.live'), 1);
          assert.equal(count('sale.live.notify'), FANS * 2);
          assert.equal(new Set(events.map((e) => e.idempotencyKey)).size, events.length);
          assert.equal(count('sale.ended'), 1);
          assert.equal(count('hold.expired'), reserved.get(sale.id), 'every abandoned hold expired exactly once');
          assert.deepEqual(await dibs.sales.audit(sale.id), []);
          assert.equal((await dibs.sales.get(sale.id)).stats.held, 0);
        }
        assert.ok(
          [...reserved.values()].some((n) => n > 0),
          'holds were placed while the sales were live',
        );
      } finally {
        clearTimeout(timer);
        for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
      }
    });
  });
}
