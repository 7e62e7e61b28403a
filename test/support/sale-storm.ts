/**
 * Multi-process flash-sale storms: many buyers in several OS processes racing for the last
 * units, directly or through holds that are confirmed, cancelled or left to expire.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Dibs } from '../../src/index.js';
import { adminQuery } from './postgres.js';
import { workerArgs } from './node-worker.js';

export interface SaleOp {
  customer: string;
  kind: 'buy' | 'reserve';
  quantity: number;
  key?: string;
  /** For reserve: what the buyer does with the hold. */
  then?: 'confirm' | 'cancel' | 'abandon';
  thinkMs: number;
  /** Wait this long before the op (paces a storm so a fault can land in the middle of it). */
  delayMs?: number;
}

export interface SaleOutcome extends SaleOp {
  step: 'buy' | 'reserve' | 'confirm' | 'cancel';
  status: 'ok' | 'error';
  orderId?: string;
  holdId?: string;
  error?: string;
}

export interface SaleWorkerConfig {
  store: string;
  sale: string;
  ttlMs: number;
  ops: SaleOp[];
  concurrency: number;
  resultFile: string;
}

const WORKER = fileURLToPath(new URL('./sale-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `lanes` (one list of ops per process); `during` runs in this process while they work. */
export async function runSaleStorm<O = SaleOutcome>(options: {
  store: string;
  sale: string;
  lanes: SaleOp[][];
  ttlMs?: number;
  concurrency?: number;
  timeoutMs?: number;
  during?: (done: () => boolean) => Promise<void>;
  /** Another worker script with the same protocol (e.g. room-worker.ts for waiting rooms). */
  worker?: string;
  /** Per worker: the store URL it uses (default `store`) and an argv prefix that runs it on another host (`ip netns exec NS`). */
  storeFor?: (worker: number) => string;
  spawnPrefix?: (worker: number) => string[];
}): Promise<O[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-sale-storm-'));
  const timeoutMs = options.timeoutMs ?? 120_000;
  let timedOut = false;
  const answered = (configFile: string) => {
    const results = configFile.replace(/\.json$/, '.jsonl');
    return existsSync(results)
      ? readFileSync(results, 'utf8')
          .split('\n')
          .filter((l) => l.endsWith('}')).length
      : 0;
  };
  try {
    const workers = options.lanes.map((ops, i) => {
      const config: SaleWorkerConfig = {
        store: options.storeFor?.(i) ?? options.store,
        sale: options.sale,
        ttlMs: options.ttlMs ?? 1000,
        ops,
        concurrency: options.concurrency ?? 8,
        resultFile: join(dir, `w${i}.jsonl`),
      };
      const configFile = join(dir, `w${i}.json`);
      writeFileSync(configFile, JSON.stringify(config));
      const argv = [
        ...(options.spawnPrefix?.(i) ?? []),
        process.execPath,
        ...workerArgs(options.worker ?? WORKER),
        configFile,
      ];
      const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
        child.once('exit', (code) =>
          reject(new Error(`sale worker ${i} exited (${code}) before it was ready:\n${stderr}`)),
        );
      });
      const done = new Promise<void>((resolve, reject) =>
        child.once('exit', (code, signal) =>
          code === 0
            ? resolve()
            : reject(
                new Error(
                  timedOut
                    ? `sale worker ${i} was still running at the storm's timeout of ${timeoutMs} ms (killed; ${answered(configFile)} answers recorded): a step that never answers\n${stderr}`
                    : `sale worker ${i} failed (${code ?? signal}):\n${stderr}`,
                ),
              ),
        ),
      );
      ready.catch(() => {});
      done.catch(() => {});
      return { child, ready, done, config };
    });
    const timer = setTimeout(() => {
      timedOut = true;
      for (const w of workers) w.child.kill('SIGKILL');
    }, timeoutMs);
    let finished = false;
    try {
      await Promise.all(workers.map((w) => w.ready));
      for (const w of workers) w.child.stdin.end('go\n');
      const all = Promise.all(workers.map((w) => w.done)).finally(() => (finished = true));
      await Promise.all([all, options.during?.(() => finished)]);
    } finally {
      clearTimeout(timer);
      for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    }
    return workers.flatMap((w) =>
      existsSync(w.config.resultFile)
        ? readFileSync(w.config.resultFile, 'utf8')
            .split('\n')
            .filter((l) => l.endsWith('}'))
            .map((l) => JSON.parse(l) as O)
        : [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Spreads ops over `processes` lanes round-robin; op i's duplicate (if any) lands on another lane. */
export function spread(ops: SaleOp[], processes: number): SaleOp[][] {
  const lanes: SaleOp[][] = Array.from({ length: processes }, () => []);
  ops.forEach((op, i) => lanes[i % processes]!.push(op));
  return lanes;
}

/** The ids of the sale's orders as the store holds them, read raw (not through dibs). */
export const pgStoredOrders = (schema: string) => async () =>
  new Set((await adminQuery<{ id: string }>(`SELECT id FROM "${schema}".sale_orders`)).map((r) => r.id));

/**
 * The ledger check after a faulted buy storm: only sold_out / limit_reached / unavailable answers;
 * every acknowledged order is in the store (`storedOrders`, e.g. pgStoredOrders); each interrupted keyed
 * buy, retried with its key, replays or buys once (never a second unit); sold ≤ cap, and sold covers
 * every acknowledged order; the sale's audit is clean. Returns what it saw, for the test's report.
 */
export async function assertBuysSurvived(
  dibs: Dibs,
  storedOrders: () => Promise<Set<string>>,
  saleId: string,
  cap: number,
  outcomes: SaleOutcome[],
): Promise<{ unavailable: number; retried: number; sold: number }> {
  const wrong = outcomes.filter(
    (o) => o.status === 'error' && !['sold_out', 'limit_reached', 'unavailable'].includes(o.error!),
  );
  assert.deepEqual(wrong, [], 'only sold_out, limit_reached and unavailable');
  const stored = await storedOrders();
  const acknowledged = outcomes.filter((o) => o.status === 'ok').map((o) => o.orderId!);
  for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged order ${id} is in the store`);
  const interrupted = outcomes.filter((o) => o.error === 'unavailable' && o.key);
  for (const o of interrupted) {
    await dibs.sales
      .buy(saleId, o.customer, 1, { idempotencyKey: o.key! })
      .catch((error: { code?: string }) =>
        assert.ok(['sold_out', 'limit_reached'].includes(error.code!), String(error)),
      );
  }
  const final = await dibs.sales.get(saleId);
  assert.ok(final.stats.sold <= cap, `sold ${final.stats.sold} ≤ cap ${cap}`);
  assert.ok(final.stats.sold >= new Set(acknowledged).size);
  assert.deepEqual(await dibs.sales.audit(saleId), []);
  return {
    unavailable: outcomes.filter((o) => o.error === 'unavailable').length,
    retried: interrupted.length,
    sold: final.stats.sold,
  };
}
