/**
 * The seed scenario on every landed backend, one table: 10,000 claimants, 5,000 codes, everyone
 * at once (burst), 4 worker processes, 10% repeats — each run verified exactly-once by the load
 * tester itself. Backends whose URL scheme is not registered yet, or whose server is not
 * reachable on loopback, are listed as skipped. Each run gets its own file / schema / key prefix,
 * removed afterwards.
 *
 *   npm run bench -- loadtest
 *   BENCH_ARRIVAL=uniform BENCH_DURATION=30 npm run bench -- loadtest
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDibsError, openDibs } from '../src/index.js';
import { runLoadtest } from '../src/loadtest/run.js';
import type { ArrivalPattern, LoadtestReport } from '../src/loadtest/types.js';

const CLAIMANTS = Number(process.env.BENCH_CLAIMANTS ?? 10_000);
const CODES = Number(process.env.BENCH_CODES ?? 5_000);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 4);
const ARRIVAL = (process.env.BENCH_ARRIVAL ?? 'burst') as ArrivalPattern;
const DURATION = Number(process.env.BENCH_DURATION ?? 30);

export interface Target {
  label: string;
  port?: number;
  open(): { store: string; cleanup(): Promise<void> };
}

const id = () => `bench_lt_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`;

export const TARGETS: Target[] = [
  {
    label: 'sqlite',
    open() {
      const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-loadtest-'));
      return {
        store: `sqlite:${join(dir, 'dibs.db')}`,
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    label: 'postgres',
    port: 5432,
    open() {
      const schema = id();
      return {
        store: `postgres://root@127.0.0.1:5432/test?schema=${schema}`,
        async cleanup() {
          const { default: pg } = await import('pg');
          const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'root', database: 'test' });
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
        },
      };
    },
  },
  {
    label: 'redis',
    port: 6379,
    open() {
      const prefix = id();
      return {
        store: `redis://127.0.0.1:6379/0?prefix=${prefix}`,
        async cleanup() {
          const { Redis } = await import('ioredis');
          const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
          try {
            let cursor = '0';
            for (let round = 0; round < 10_000; round++) {
              const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
              if (keys.length > 0) await redis.del(...keys);
              cursor = next;
              if (cursor === '0') break;
            }
          } finally {
            redis.disconnect();
          }
        },
      };
    },
  },
];

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** Null when the backend can run here, else why not. */
export async function unavailable(target: Target, store: string): Promise<string | null> {
  if (target.port !== undefined && !(await reachable(target.port))) return `not reachable on 127.0.0.1:${target.port}`;
  try {
    await (await openDibs(store)).close();
    return null;
  } catch (error) {
    if (isDibsError(error, 'invalid_input') && /unsupported scheme/.test(error.message))
      return 'backend not landed yet';
    throw error;
  }
}

function row(label: string, r: LoadtestReport): string {
  const errors = Object.values(r.outcomes.errors).reduce((a, b) => a + b, 0);
  const l = r.latencyMs;
  return `| ${label} | ${r.requests.answered.toLocaleString('en-US')} | ${r.wallSeconds.toFixed(2)} | ${r.throughput.toLocaleString('en-US')} | ${l.p50} | ${l.p90} | ${l.p99} | ${l.max} | ${r.numbers.codesGiven.toLocaleString('en-US')} | ${errors} | ${r.ok ? 'clean' : `${r.violations.length} violations`} |`;
}

export async function main(): Promise<void> {
  console.log(
    `\nSeed scenario: ${CLAIMANTS.toLocaleString('en-US')} claimants, ${CODES.toLocaleString('en-US')} codes, ${ARRIVAL}${ARRIVAL === 'burst' ? '' : ` over ${DURATION} s`}, ${PROCESSES} processes, 10% repeats`,
  );
  const rows: string[] = [];
  const skipped: string[] = [];
  for (const target of TARGETS) {
    const { store, cleanup } = target.open();
    try {
      const why = await unavailable(target, store);
      if (why !== null) {
        skipped.push(`${target.label}: ${why}`);
        continue;
      }
      const report = await runLoadtest({
        target: { kind: 'store', store },
        claimants: CLAIMANTS,
        codes: CODES,
        processes: PROCESSES,
        arrival: ARRIVAL,
        durationSec: DURATION,
      });
      rows.push(row(target.label, report));
      for (const v of report.violations.slice(0, 5)) console.log(`  ${target.label} [${v.check}] ${v.message}`);
    } finally {
      await cleanup().catch(() => {});
    }
  }
  console.log(
    '\n| backend | answers | wall s | answers/s | p50 ms | p90 ms | p99 ms | max ms | codes given | errors | verdict |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const r of rows) console.log(r);
  for (const s of skipped) console.log(`skipped ${s}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
