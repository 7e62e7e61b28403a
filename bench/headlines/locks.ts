/**
 * Headline: PostgreSQL lock handoff (bench/locks.ts: 4 waiters in one process, each holding ~1 ms;
 * handoff = from release() to the next waiter's grant) of dibs vs pg_advisory_lock (a session each,
 * woken by the server's lock manager), as interleaved rounds: p50 ratio and throughput ratio.
 */
import pg from 'pg';
import { openDibs } from '../../src/index.js';
import { dibsWaiter, run, type Result } from '../locks.js';
import type { RunStats } from '../lib/measure.js';
import { interleave, loadNow, p50, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import type { Sizes } from './sizes.js';

const PG_URL = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';

const asStats = (r: Result, ops: number): RunStats => ({
  label: r.label,
  ops,
  seconds: ops / r.perSecond,
  perSecond: r.perSecond,
  p50: r.p50,
  p99: r.p99,
});

export async function postgresLocks(sizes: Sizes): Promise<Ratio[]> {
  const schema = `bench_sum_locks_${process.pid}`;
  const url = new URL(PG_URL);
  url.searchParams.set('schema', schema);
  const dibs = await openDibs(url.href);
  const clients: pg.Client[] = [];
  try {
    await dibs.locks.inspect('warm');
    let n = 0;
    const load = loadNow();
    const [advisory, leases] = await interleave(sizes.rounds, [
      {
        label: 'advisory',
        run: async () => {
          const key = 424_000 + ++n;
          return asStats(
            await run('postgres pg_advisory_lock', sizes.handoffs, async () => {
              const client = new pg.Client({ connectionString: PG_URL });
              await client.connect();
              clients.push(client);
              return {
                acquire: async () => {
                  await client.query('SELECT pg_advisory_lock($1)', [key]);
                },
                release: async () => {
                  await client.query('SELECT pg_advisory_unlock($1)', [key]);
                },
              };
            }),
            sizes.handoffs,
          );
        },
      },
      {
        label: 'dibs',
        run: async () =>
          asStats(
            await run('postgres dibs.locks.acquire', sizes.handoffs, dibsWaiter(dibs, `hot-${++n}`)),
            sizes.handoffs,
          ),
      },
    ]);
    const during = `${load} → ${loadNow()}`;
    return [
      ratio(
        'PostgreSQL lock handoff p50, dibs vs pg_advisory_lock (lower is better)',
        '≤ 1.5×',
        'ms p50',
        advisory!,
        leases!,
        p50,
        during,
      ),
      ratio(
        'PostgreSQL lock throughput, dibs vs pg_advisory_lock',
        '≥ 0.9×',
        'acq/s',
        advisory!,
        leases!,
        perSecond,
        during,
      ),
    ];
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
    await dibs.close();
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => admin.end());
  }
}
