/**
 * Contended lock handoff: W waiters in one process contend for one key; each holds it ~1 ms.
 * Handoff latency = from the start of release() to the next waiter's grant (so it includes the
 * release round trip, the wake-up and the winning acquire); the releaser waits for someone else's
 * grant before queueing again, so every grant is a real handoff between waiters. p50/p99 and
 * acquisitions/s (= handoffs/s), per store:
 *   sqlite    dibs (in-process release event)         vs a seed-style 1 s polling lock
 *   postgres  dibs (lease rows + NOTIFY/LISTEN)        vs pg_advisory_lock (session lock, one
 *             connection per waiter, woken by the server's lock manager) vs 1 s polling
 *   redis     dibs (Lua + pub/sub)                     vs the redis-semaphore package (Mutex,
 *             default 10 ms retry) vs 1 s polling
 *
 *   npm run bench -- locks                 (LOCK_BENCH_N acquisitions per run, default 200;
 *   LOCK_BENCH_STORES=postgres,redis …      polling runs do LOCK_BENCH_POLL_N, default 10)
 * Each store also runs dibs with `fair: true` (FIFO across instances by the store's tickets) on
 * another key, compared with the default in the same run.
 * Noisy on a shared 2-core machine; ratios are taken within one run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Mutex } from 'redis-semaphore';
import { openDibs, type Dibs } from '../src/index.js';

const WAITERS = Number(process.env.LOCK_BENCH_WAITERS ?? 4);
const ACQUISITIONS = Number(process.env.LOCK_BENCH_N ?? 200);
const POLL_ACQUISITIONS = Number(process.env.LOCK_BENCH_POLL_N ?? 10);
const STORES = (process.env.LOCK_BENCH_STORES ?? 'sqlite,postgres,redis').split(',');
const PG_URL = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.DIBS_TEST_REDIS ?? 'redis://127.0.0.1:6379/0';

export interface Result {
  label: string;
  p50: number;
  p99: number;
  perSecond: number;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** `waiter(i)` returns that waiter's acquire/release pair (some baselines need a connection each). */
export async function run<H>(
  label: string,
  count: number,
  waiter: (i: number) => Promise<{ acquire: () => Promise<H>; release: (h: H) => Promise<void> }>,
): Promise<Result> {
  const pairs = await Promise.all(Array.from({ length: WAITERS }, (_, i) => waiter(i)));
  const handoffs: number[] = [];
  let lastRelease = 0;
  let lastHolder = -1;
  let done = 0;
  let granted: (() => void)[] = [];
  const nextGrant = () => new Promise<void>((resolve) => granted.push(resolve));
  const started = performance.now();
  await Promise.all(
    pairs.map(async ({ acquire, release }, me) => {
      while (done < count) {
        const h = await acquire();
        if (lastRelease) handoffs.push(performance.now() - lastRelease);
        lastHolder = me;
        done++;
        for (const wake of granted) wake();
        granted = [];
        await sleep(1);
        lastRelease = performance.now();
        await release(h);
        // Every grant is a handoff to ANOTHER waiter: the releaser queues again only after someone
        // else got the lock. (Otherwise an unfair lock re-taken by its releaser shows a fake
        // sub-millisecond "handoff" and the waiters that actually wait are not measured.)
        while (lastHolder === me && done < count) await nextGrant();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const r = { label, p50: pct(handoffs, 50), p99: pct(handoffs, 99), perSecond: done / seconds };
  console.log(
    `${label.padEnd(34)} handoff p50 ${r.p50.toFixed(2).padStart(7)} ms  p99 ${r.p99.toFixed(2).padStart(8)} ms  ${r.perSecond.toFixed(1).padStart(7)} acq/s`,
  );
  return r;
}

function fairRatio(dibs: Result, fair: Result): void {
  console.log(
    `  fair vs default: handoff p50 ×${(fair.p50 / dibs.p50).toFixed(2)}, p99 ×${(fair.p99 / dibs.p99).toFixed(2)}, throughput ×${(fair.perSecond / dibs.perSecond).toFixed(2)}`,
  );
}

function ratios(dibs: Result, other: Result): void {
  console.log(
    `  dibs vs ${other.label}: handoff p50 ×${(other.p50 / dibs.p50).toFixed(2)} lower, p99 ×${(other.p99 / dibs.p99).toFixed(2)} lower, throughput ×${(dibs.perSecond / other.perSecond).toFixed(2)}`,
  );
}

export const dibsWaiter =
  (dibs: Dibs, key: string, fair = false) =>
  async () => ({
    acquire: () => dibs.locks.acquire(key, { ttlMs: 30_000, waitMs: 120_000, fair }),
    release: (l: Awaited<ReturnType<Dibs['locks']['acquire']>>) => dibs.locks.release(l),
  });

/** The seed's lock: try once, otherwise sleep 1 s and retry. */
const pollingWaiter = (dibs: Dibs, key: string) => async () => ({
  acquire: async () => {
    for (;;) {
      const lease = await dibs.locks.tryAcquire(key, { ttlMs: 30_000 });
      if (lease) return lease;
      await sleep(1000);
    }
  },
  release: (l: Awaited<ReturnType<Dibs['locks']['acquire']>>) => dibs.locks.release(l),
});

async function benchSqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-locks-'));
  const dibs = await openDibs(`sqlite:${join(dir, 'dibs.db')}`);
  try {
    const polling = await run('sqlite 1 s polling lock', POLL_ACQUISITIONS, pollingWaiter(dibs, 'poll'));
    const evented = await run('sqlite dibs.locks.acquire', ACQUISITIONS, dibsWaiter(dibs, 'hot'));
    fairRatio(evented, await run('sqlite dibs.locks.acquire fair', ACQUISITIONS, dibsWaiter(dibs, 'hot-fair', true)));
    ratios(evented, polling);
  } finally {
    await dibs.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchPostgres(): Promise<void> {
  const schema = `bench_locks_${process.pid}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  const dibs = await openDibs(url.href);
  const clients: pg.Client[] = [];
  try {
    // pg_advisory_lock: each waiter blocks in the server on its own session.
    const advisory = await run('postgres pg_advisory_lock', ACQUISITIONS, async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      clients.push(client);
      return {
        acquire: async () => {
          await client.query('SELECT pg_advisory_lock(424242)');
        },
        release: async () => {
          await client.query('SELECT pg_advisory_unlock(424242)');
        },
      };
    });
    const polling = await run('postgres 1 s polling lock', POLL_ACQUISITIONS, pollingWaiter(dibs, 'poll'));
    await dibs.locks.inspect('warm'); // connections and prepared statements warm before timing
    const evented = await run('postgres dibs.locks.acquire', ACQUISITIONS, dibsWaiter(dibs, 'hot'));
    fairRatio(evented, await run('postgres dibs.locks.acquire fair', ACQUISITIONS, dibsWaiter(dibs, 'hot-fair', true)));
    ratios(evented, advisory);
    ratios(evented, polling);
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
    await dibs.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

async function benchRedis(): Promise<void> {
  const prefix = `bench-locks-${process.pid}`;
  const dibs = await openDibs(`${REDIS_URL}?prefix=${prefix}`);
  const client = new Redis(REDIS_URL);
  try {
    const semaphore = await run('redis redis-semaphore Mutex', ACQUISITIONS, async () => ({
      acquire: async () => {
        const mutex = new Mutex(client, `${prefix}-mutex`, {
          lockTimeout: 30_000,
          acquireTimeout: 120_000,
          refreshInterval: 0,
        });
        await mutex.acquire();
        return mutex;
      },
      release: (mutex: Mutex) => mutex.release(),
    }));
    const polling = await run('redis 1 s polling lock', POLL_ACQUISITIONS, pollingWaiter(dibs, 'poll'));
    const evented = await run('redis dibs.locks.acquire', ACQUISITIONS, dibsWaiter(dibs, 'hot'));
    fairRatio(evented, await run('redis dibs.locks.acquire fair', ACQUISITIONS, dibsWaiter(dibs, 'hot-fair', true)));
    ratios(evented, semaphore);
    ratios(evented, polling);
  } finally {
    await dibs.close();
    const keys = [...(await client.keys(`{${prefix}:*`)), ...(await client.keys(`mutex:${prefix}-*`))];
    if (keys.length) await client.del(...keys);
    client.disconnect();
  }
}

export async function main(): Promise<void> {
  if (STORES.includes('sqlite')) await benchSqlite();
  if (STORES.includes('postgres'))
    await benchPostgres().catch((e: unknown) => console.log(`postgres skipped: ${(e as Error).message}`));
  if (STORES.includes('redis'))
    await benchRedis().catch((e: unknown) => console.log(`redis skipped: ${(e as Error).message}`));
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
