/**
 * PostgreSQL sharded counters (the Bluecore design): increments go to a random shard row with
 * FOR UPDATE SKIP LOCKED; a skipped row means another writer holds it right now — contention —
 * so the counter doubles its shard rows (up to MAX_SHARDS, never shrinking) and the increment is
 * retried on the wider spread. Reads sum every shard in one statement: exact.
 * The shard count is cached per process as a hint only; the row count in the store is the truth.
 */
import type pg from 'pg';
import type { CounterBackend } from '../../core/locks/backend.js';
import type { CounterValue } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, queryPrepared, withTransaction } from './connection.js';

const Q = loadQueries(new URL('./counters.sql', import.meta.url), [
  'shards',
  'ensure',
  'tryAdd',
  'add',
  'grow',
  'get',
  'deleteShards',
  'deleteCounter',
  'listNames',
]);
export const MAX_SHARDS = 64;
/** SKIP LOCKED attempts on random shards before waiting for a row lock (always terminates). */
const TRIES = 4;

export class PgCounters implements CounterBackend {
  private readonly shardHint = new Map<string, number>();

  constructor(private readonly pool: pg.Pool) {}

  async incr(name: string, by: number): Promise<CounterValue> {
    let shards = this.shardHint.get(name) ?? (await this.ensure(name));
    for (let attempt = 0; attempt < TRIES; attempt++) {
      const shard = Math.floor(Math.random() * shards);
      const { rows } = await queryPrepared<{ added: number; present: number; value: string; shards: number }>(
        this.pool,
        'dibs_counter_try_add',
        Q.tryAdd,
        [name, shard, by],
      );
      const row = rows[0]!;
      if (row.added === 1) {
        this.shardHint.set(name, row.shards);
        return { name, value: Number(row.value), shards: row.shards };
      }
      if (row.present === 0) {
        shards = await this.ensure(name); // reset meanwhile, or our hint is stale
        continue;
      }
      // Contended: widen the spread (bounded), then try again on a random shard.
      shards = shards < MAX_SHARDS ? await this.grow(name, Math.min(MAX_SHARDS, shards * 2)) : shards;
    }
    // Still contended after TRIES misses: wait for a row lock instead of spinning.
    for (;;) {
      const { rows } = await queryPrepared<{ value: string; shards: number }>(this.pool, 'dibs_counter_add', Q.add, [
        name,
        Math.floor(Math.random() * shards),
        by,
      ]);
      if (rows[0]) {
        this.shardHint.set(name, rows[0].shards);
        return { name, value: Number(rows[0].value), shards: rows[0].shards };
      }
      shards = await this.ensure(name);
    }
  }

  async get(name: string): Promise<CounterValue> {
    const { rows } = await query<{ value: string; shards: number }>(this.pool, Q.get, [name]);
    return { name, value: Number(rows[0]!.value), shards: rows[0]!.shards };
  }

  async listNames({ limit, after }: { limit: number; after?: string }): Promise<Page<string>> {
    const { rows } = await query<{ name: string }>(this.pool, Q.listNames, [after ?? '', limit + 1]);
    const items = rows.slice(0, limit).map((r) => r.name);
    return { items, nextCursor: rows.length > limit ? items.at(-1)! : null };
  }

  async reset(name: string): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      await client.query(Q.deleteShards, [name]);
      await client.query(Q.deleteCounter, [name]);
    });
    this.shardHint.delete(name);
  }

  private async ensure(name: string): Promise<number> {
    const { rows } = await query<{ shards: number | null }>(this.pool, Q.ensure, [name]);
    const shards = rows[0]?.shards ?? 1;
    this.shardHint.set(name, shards);
    return shards;
  }

  private async grow(name: string, wanted: number): Promise<number> {
    const { rows } = await query<{ shards: number }>(this.pool, Q.grow, [name, wanted]);
    const shards = rows[0]?.shards ?? (await this.ensure(name));
    this.shardHint.set(name, shards);
    return shards;
  }
}
