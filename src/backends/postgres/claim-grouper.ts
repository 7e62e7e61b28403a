/**
 * Grouped claims (shared/group-queue.ts says why and how they group): single-code claims of one
 * pool that wait in this process at the same time are served by ONE run of the claim statement
 * (claim.sql, one request per claimant), which takes k free rows and assigns them to k claimants,
 * each decided exactly like a single claim.
 * The statement relies on the group's claimants and keys being pairwise distinct.
 */
import type pg from 'pg';
import type { PgOptions } from './connection.js';
import type { ClaimRequest, ClaimRow } from './claim-shapes.js';
import { runClaim } from './claim-statement.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';

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
    const rows = await runClaim(
      this.pool,
      pool,
      group.map((w) => w.request),
      this.settles(pool),
    );
    for (const row of rows) group[Number(row.i) - 1]!.resolve(row);
  }
}
