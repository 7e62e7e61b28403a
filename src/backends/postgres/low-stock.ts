/**
 * The low-stock step shared by every operation that moves the free count of a pool that has a
 * threshold. It runs at the END of the operation's transaction (after the code rows and the counter
 * shard were written): it locks the pool row, and the next statement's snapshot then includes every
 * earlier settled move, so "free just crossed the threshold" is decided exactly once (I7).
 * Pools without a threshold never come here, so their claims never touch the pool row.
 */
import type pg from 'pg';
import { lowStockEvent } from '../../core/events.js';
import { loadQueries } from '../shared/sql-files.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), ['lockPoolRow', 'settleLowStock', 'insertEvent']);

export async function settleLowStock(client: pg.ClientBase, poolId: string, freeDropped: boolean): Promise<void> {
  await client.query(Q.lockPoolRow, [poolId]);
  const { rows } = await client.query<{
    fire: boolean;
    name: string;
    free: number;
    threshold: number;
    low_stock_events: number;
  }>(Q.settleLowStock, [poolId, freeDropped]);
  const row = rows[0];
  if (!row?.fire) return;
  const event = lowStockEvent(row.name, row.low_stock_events, row.free, row.threshold);
  await client.query(Q.insertEvent, [event.type, event.idempotencyKey, row.name, JSON.stringify(event.payload)]);
}
