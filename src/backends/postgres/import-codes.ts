/**
 * Code import through COPY: a batch is streamed into a per-connection temporary staging table,
 * then moved into the pool by one INSERT … SELECT … ON CONFLICT DO NOTHING (dedupe inside the
 * batch and against the pool) — with the counter shard and the low-stock re-arm in the same
 * transaction.
 */
import type pg from 'pg';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { from as copyFrom } from 'pg-copy-streams';
import { notFound } from '../../core/errors.js';
import type { ImportedCode, InsertResult } from '../../core/types.js';
import { withWindow } from '../shared/imported-code.js';
import { loadQueries } from '../shared/sql-files.js';
import { causeState, sqlState, withTransaction } from './connection.js';
import { settleLowStock } from './low-stock.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), [
  'poolByName',
  'createStaging',
  'copyIntoStaging',
  'insertFromStaging',
  'insertFreshFromStaging',
  'moveCounters',
  'codesRowEstimate',
  'analyzeCodes',
]);

/**
 * COPY text format: the code's place in its batch (ids are drawn in that order), then the code —
 * backslash is the escape character (codes carry no control characters, so no tab or newline);
 * `\N` is NULL, an open side of the window.
 */
function copyLine(ord: number, entry: ImportedCode): string {
  const { code, startsAt, expiresAt } = withWindow(entry);
  return `${ord}\t${code.replace(/\\/g, '\\\\')}\t${startsAt ?? '\\N'}\t${expiresAt ?? '\\N'}\n`;
}

const DEADLOCK_ATTEMPTS = 8;

/** Batches of one import run in parallel; how many (the server does ~1.8× more with 3 than 1). */
export const IMPORT_CONCURRENCY = 3;

export async function insertCodes(pool: pg.Pool, name: string, codes: readonly ImportedCode[]): Promise<InsertResult> {
  // Parallel batches that share codes in opposite orders can deadlock; PostgreSQL aborts one of
  // them, which then retries from scratch (its transaction left nothing behind) after a short
  // random pause, so the two do not meet again in step. The error arrives already translated
  // (withClient: a deadlock is `unavailable`), hence its cause's state.
  for (let attempt = 1; ; attempt++) {
    try {
      return await insertBatch(pool, name, codes);
    } catch (error) {
      if (causeState(error) !== '40P01' || attempt >= DEADLOCK_ATTEMPTS) throw error;
      await sleep(Math.random() * 20 * attempt);
    }
  }
}

function insertBatch(pool: pg.Pool, name: string, codes: readonly ImportedCode[]): Promise<InsertResult> {
  return withTransaction(pool, async (client) => {
    const row = (await client.query<{ id: string; low_stock_threshold: number | null }>(Q.poolByName, [name])).rows[0];
    if (!row) throw notFound('pool', name);
    if (codes.length === 0) return { inserted: 0, duplicates: 0 };
    await client.query(Q.createStaging);
    await pipeline(Readable.from(chunks(codes)), client.query(copyFrom(Q.copyIntoStaging)));
    const inserted = await moveFromStaging(client, row.id);
    if (inserted > 0) {
      await client.query(Q.moveCounters, [row.id, Math.random(), inserted, inserted, 0, 0, 0]);
      if (row.low_stock_threshold !== null) await settleLowStock(client, row.id, false);
    }
    return { inserted, duplicates: codes.length - inserted };
  });
}

/**
 * Moves the staged batch into the pool: first as a plain insert (all codes new: the common case,
 * and the cheaper statement), and only when a code is already there — in the pool, earlier in the
 * batch, or in a parallel batch — again with ON CONFLICT DO NOTHING. The savepoint keeps the
 * batch's transaction usable after the plain insert's unique violation; the failed attempt stops
 * at the first such code, so a re-run of a whole file pays little for trying.
 */
async function moveFromStaging(client: pg.PoolClient, poolId: string): Promise<number> {
  await client.query('SAVEPOINT dibs_import_fresh');
  try {
    return (await client.query(Q.insertFreshFromStaging, [poolId])).rowCount ?? 0;
  } catch (error) {
    if (sqlState(error) !== '23505') throw error;
    await client.query('ROLLBACK TO SAVEPOINT dibs_import_fresh');
    return (await client.query(Q.insertFromStaging, [poolId])).rowCount ?? 0;
  }
}

/** The batch as COPY text in ~64 KiB chunks (few stream writes, no giant string). */
function* chunks(codes: readonly ImportedCode[]): Generator<string> {
  let buffer = '';
  for (let ord = 0; ord < codes.length; ord++) {
    buffer += copyLine(ord, codes[ord]!);
    if (buffer.length >= 65_536) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

/**
 * After an import: when it grew the codes table by 10 % or more of what the planner last counted
 * (autovacuum's own default threshold), ANALYZE it now. Claims run with generic plans
 * (plan_cache_mode=force_generic_plan, connection.ts) cached per connection; a plan made while the
 * table was small (a scan that was cheap then) stays until the table's statistics change, i.e.
 * until autovacuum's next analyze, up to a minute or more later. Measured: 50 claims on a pool
 * imported with 300,000 codes (mostly not yet valid) by a process whose connections had claimed
 * from a 100-code pool: 16.6 ms per claim, 0.63 ms after a 57 ms ANALYZE.
 */
export async function refreshStatistics(pool: pg.Pool, inserted: number): Promise<void> {
  const estimate = Number((await pool.query<{ n: string }>(Q.codesRowEstimate)).rows[0]?.n ?? -1);
  if (estimate >= 0 && inserted < Math.max(1000, estimate * 0.1)) return;
  await pool.query(Q.analyzeCodes);
}
