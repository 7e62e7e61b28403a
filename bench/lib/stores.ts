/**
 * Runs one benchmark body on fresh, throw-away stores of each kind — a SQLite file in a temp
 * directory, a PostgreSQL schema (BENCH_PG), a Redis key prefix (BENCH_REDIS) — and removes each
 * afterwards, whatever happened.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';

export const BENCH_PG = process.env.BENCH_PG ?? 'postgres://root@127.0.0.1:5432/test';
export const BENCH_REDIS = process.env.BENCH_REDIS ?? 'redis://127.0.0.1:6379/0';

export type StoreKind = 'sqlite' | 'postgres' | 'redis';
const LABELS: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL', redis: 'Redis' };

export async function onEachStore(
  name: string,
  kinds: readonly StoreKind[],
  run: (label: string, store: string) => Promise<void>,
): Promise<void> {
  const tag = `bench_${name}_${process.pid}`;
  for (const kind of kinds) {
    if (kind === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), `dibs-${tag}-`));
      try {
        await run(LABELS[kind], `sqlite:${join(dir, 'bench.db')}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } else if (kind === 'postgres') {
      try {
        await run(LABELS[kind], `${BENCH_PG}?schema=${tag}`);
      } finally {
        const admin = new pg.Client({ connectionString: BENCH_PG });
        await admin.connect();
        await admin.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
        await admin.end();
      }
    } else {
      try {
        await run(LABELS[kind], `${BENCH_REDIS}?prefix=${tag}`);
      } finally {
        const client = new Redis(BENCH_REDIS);
        const keys = await client.keys(`*${tag}*`);
        if (keys.length) await client.del(...keys);
        client.disconnect();
      }
    }
  }
}
