/**
 * The price of replica acknowledgement, same run: dibs `pools.claim` on a test-owned master with
 * one replica (loopback), without acks and with `acks=replicas:1` (EVALSHA + WAIT 1 per claim),
 * 1 process with 32 claims in flight. Rounds alternate (off, on, off, on, …) so a machine busy
 * with other work slows both alike; the table shows every round.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { openDibs } from '../src/index.js';
import { printTable, summarise, timeOps, type RunStats } from './lib/measure.js';
import { seedDibs } from './lib/seed.js';
import { startRedis } from '../test/support/redis.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export async function main(): Promise<void> {
  const master = await startRedis();
  const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
  try {
    const probe = new Redis(replica.url);
    while (!String(await probe.info('replication')).includes('master_link_status:up')) await sleep(100);
    probe.disconnect();
    const rows: RunStats[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const acks of [false, true]) {
        const store = `${master.url}?prefix=b${round}${acks ? 'a' : 'n'}${acks ? '&acks=replicas:1' : ''}`;
        await seedDibs(store, CLAIMS);
        const dibs = await openDibs(store);
        const run = await timeOps(CLAIMS, CONCURRENCY, (i) => dibs.pools.claim('bench', `user-${i}`));
        await dibs.close();
        rows.push(
          summarise(`round ${round + 1}: ${acks ? 'acks=replicas:1' : 'no acks        '}`, run.latencies, run.seconds),
        );
      }
    }
    printTable(
      `Redis claims with and without replica acks (1 replica, loopback; ${CLAIMS} per run, ${CONCURRENCY} in flight; ratio vs round 1 without)`,
      rows,
      rows[0]!,
    );
  } finally {
    await replica.stop();
    await master.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main().then(() => process.exit(0));
