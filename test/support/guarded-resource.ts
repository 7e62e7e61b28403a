/**
 * The resource a lock guards in the history tests: a PostgreSQL table that applies a write only
 * with a fence at least as high as the last one (guarded/write.sql), and logs what it applied in
 * apply order. `broken: true` uses guarded/write-broken.sql, which applies everything — the checker
 * must then find the stale writes.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { LogRecord } from './history-checker.js';

const sql = (name: string) => readFileSync(new URL(`./guarded/${name}`, import.meta.url), 'utf8');

export interface GuardedResourceConfig {
  url: string;
  schema: string;
  broken?: boolean;
}

export class GuardedResource {
  private readonly pool: pg.Pool;
  private readonly writeSql: string;
  constructor(
    readonly config: GuardedResourceConfig,
    poolSize = 2,
  ) {
    // Short client-side limits: a write stuck behind a partition must end (as `unknown`) rather
    // than hold the worker; the statement may still have been applied — the checker allows that.
    this.pool = new pg.Pool({
      connectionString: config.url,
      max: poolSize,
      options: `-c search_path=${config.schema}`,
      connectionTimeoutMillis: 5000,
      query_timeout: 5000,
    });
    // A connection reset while idle or checked out: the pool drops it (a write on it is `unknown`).
    this.pool.on('error', () => undefined);
    this.pool.on('connect', (client) => client.on('error', () => undefined));
    this.writeSql = sql(config.broken ? 'write-broken.sql' : 'write.sql');
  }

  async create(): Promise<void> {
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS "${this.config.schema}"`);
    await this.pool.query(sql('schema.sql'));
  }

  /** true when applied, false when refused; throws when the answer is unknown. */
  async write(key: string, fence: number, lease: string, writeId: string): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      const result = await client.query(this.writeSql, [key, fence, lease, writeId]);
      client.release();
      return result.rowCount === 1;
    } catch (error) {
      // A connection that timed out may still carry the statement: never reuse it.
      client.release(true);
      throw error;
    }
  }

  async log(): Promise<LogRecord[]> {
    const { rows } = await this.pool.query<{
      seq: string;
      key: string;
      write_id: string;
      fence: string;
      lease: string;
    }>('SELECT seq, key, write_id, fence, lease FROM guarded_log ORDER BY seq');
    return rows.map((r) => ({
      seq: Number(r.seq),
      key: r.key,
      writeId: r.write_id,
      fence: Number(r.fence),
      lease: r.lease,
    }));
  }

  async drop(): Promise<void> {
    await this.pool.query(`DROP SCHEMA IF EXISTS "${this.config.schema}" CASCADE`);
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
