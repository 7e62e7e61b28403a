/**
 * Grouped claims (shared/group-queue.ts says why and how they group): single-code claims of one
 * pool that wait in this process at the same time are served by ONE statement (claim-group.sql)
 * that takes k free rows and assigns them to k claimants, each decided exactly like a single claim.
 * The statement relies on the group's claimants and keys being pairwise distinct.
 */
import type pg from 'pg';
import { loadQueries } from '../shared/sql-files.js';
import { prepared, translate, withTransaction, type PgOptions } from './connection.js';
import type { ClaimRequest, ClaimRow } from './claim-shapes.js';
import { settleLowStock } from './low-stock.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';

const GROUP = loadQueries(new URL('./claim-group.sql', import.meta.url), ['claimGroup']);

export class ClaimGrouper {
  private readonly queue: GroupQueue<ClaimRequest, ClaimRow>;

  constructor(
    private readonly pool: pg.Pool,
    options: PgOptions,
    private readonly settles: (pool: string) => boolean,
  ) {
    this.queue = new GroupQueue(
      { max: options.groupMax, concurrency: options.groupConcurrency, identify: (request) => request },
      (pool, group) => this.run(pool, group),
    );
  }

  claim(request: ClaimRequest): Promise<ClaimRow> {
    return this.queue.add(request.pool, request);
  }

  private async run(pool: string, group: readonly Waiting<ClaimRequest, ClaimRow>[]): Promise<void> {
    const settle = this.settles(pool);
    const params = [
      pool,
      group.map((w) => w.request.claimant),
      group.map((w) => w.request.key),
      Math.random(),
      Math.random(),
      settle,
    ];
    const rows = settle
      ? await withTransaction(this.pool, async (client) => {
          const result = (
            await client.query<ClaimRow & { i: string }>(prepared('dibs_claim_group', GROUP.claimGroup, params))
          ).rows;
          if (result.some((r) => r.taken.length > 0)) await settleLowStock(client, result[0]!.pool_id!, true);
          return result;
        })
      : (
          await this.pool
            .query<ClaimRow & { i: string }>(prepared('dibs_claim_group', GROUP.claimGroup, params))
            .catch((error: unknown) => {
              throw translate(error);
            })
        ).rows;
    for (const row of rows) group[Number(row.i) - 1]!.resolve(row);
  }
}
