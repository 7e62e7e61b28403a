/**
 * Runs claim.sql — the one claim step of single and grouped claims — for one or more requests of
 * one pool: autocommit, or inside a transaction that settles the pool's low-stock state when the
 * pool has a threshold (`settle`).
 */
import type pg from 'pg';
import { loadQueries } from '../shared/sql-files.js';
import { prepared, withClient, withTransaction } from './connection.js';
import type { ClaimRequest, ClaimRow } from './claim-shapes.js';
import { settleLowStock } from './low-stock.js';

const CLAIM = loadQueries(new URL('./claim.sql', import.meta.url), ['claim']);

/** The statement's rows, one per request in the order given. */
export async function runClaim(
  pool: pg.Pool,
  name: string,
  requests: readonly ClaimRequest[],
  settle: boolean,
): Promise<ClaimRow[]> {
  const params = [
    name,
    requests.map((r) => r.claimant),
    requests.map((r) => r.key),
    requests.map((r) => r.count),
    Math.random(),
    Math.random(),
    settle,
  ];
  const statement = prepared('dibs_claim', CLAIM.claim, params);
  // On a connection kept after a SQL error (withClient, not pool.query): a racing claim's unique
  // violation is retried at once, and a new connection would first have to plan this statement.
  if (!settle) return withClient(pool, async (client) => (await client.query<ClaimRow>(statement)).rows);
  return withTransaction(pool, async (client) => {
    const rows = (await client.query<ClaimRow>(statement)).rows;
    if (rows.some((r) => r.taken.length > 0)) await settleLowStock(client, rows[0]!.pool_id!, true);
    return rows;
  });
}
