/**
 * SQLite sharded counters. SQLite has a single writer, so shards cannot relieve contention
 * here; the design is kept identical to the server stores (Bluecore: add shards when writes
 * contend, never shrink) so the contract and tests are the same. Contention signal: the write
 * had to wait for the database lock longer than CONTENDED_MS.
 */
import type { CounterBackend } from '../../core/locks/backend.js';
import type { CounterValue } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions } from './database.js';

const Q = loadQueries(new URL('./counters.sql', import.meta.url), [
  'shardCount',
  'ensureCounter',
  'growShards',
  'addToShard',
  'sum',
  'deleteShards',
  'deleteCounter',
  'listNames',
]);
const CONTENDED_MS = 2;
const MAX_SHARDS = 64;

export class SqliteCounters implements CounterBackend {
  private readonly s;
  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.s = prepareAll(db, Q);
  }

  async incr(name: string, by: number): Promise<CounterValue> {
    const asked = performance.now();
    let waitedMs = 0;
    return write(this.db, this.options, () => {
      waitedMs = performance.now() - asked;
      this.s.ensureCounter.run(name);
      let { shards } = this.s.shardCount.get(name) as { shards: number };
      if (waitedMs > CONTENDED_MS && shards < MAX_SHARDS) {
        shards *= 2;
        this.s.growShards.run({ name, shards });
      }
      this.s.addToShard.run({ name, shard: Math.floor(Math.random() * shards), by });
      const sum = this.s.sum.get(name, name) as { value: number; shards: number };
      return { name, value: sum.value, shards: sum.shards };
    });
  }

  async get(name: string): Promise<CounterValue> {
    const sum = await read(this.options, () => this.s.sum.get(name, name) as { value: number; shards: number });
    return { name, value: sum.value, shards: sum.shards };
  }

  async listNames({ limit, after }: { limit: number; after?: string }): Promise<Page<string>> {
    const rows = await read(this.options, () => this.s.listNames.all(after ?? '', limit + 1) as { name: string }[]);
    const items = rows.slice(0, limit).map((r) => r.name);
    return { items, nextCursor: rows.length > limit ? items.at(-1)! : null };
  }

  async reset(name: string): Promise<void> {
    await write(this.db, this.options, () => {
      this.s.deleteShards.run(name);
      this.s.deleteCounter.run(name);
    });
  }
}
