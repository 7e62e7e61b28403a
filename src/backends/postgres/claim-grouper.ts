/**
 * Grouped claims: single-code claims of one pool that wait in this process at the same time are
 * served by ONE statement (claim-group.sql) that takes k free rows and assigns them to k claimants.
 * Callers do not notice: each gets its own row of the answer, decided exactly like a single claim.
 *
 * Batching is opportunistic, never timed: claims arriving in the same turn of the event loop, or
 * while `groupConcurrency` group statements of that pool are already running, form the next group.
 * So an idle process answers one claim with one statement at once, and a busy one amortises each
 * round trip and each index descent over many claims.
 * A group never holds the same claimant or key twice (the statement relies on it); a repeat waits
 * for the next group, where it sees the first one's holding.
 */
import type pg from 'pg';
import { loadQueries } from '../shared/sql-files.js';
import { prepared, translate, withTransaction, type PgOptions } from './connection.js';
import type { ClaimRequest, ClaimRow } from './claim.js';
import { settleLowStock } from './low-stock.js';
import { takeGroup } from '../shared/take-group.js';

const GROUP = loadQueries(new URL('./claim-group.sql', import.meta.url), ['claimGroup']);

interface Waiting {
  request: ClaimRequest;
  resolve(row: ClaimRow): void;
  reject(error: unknown): void;
}

export class ClaimGrouper {
  private readonly queues = new Map<string, Waiting[]>();
  private readonly running = new Map<string, number>();
  private readonly scheduled = new Set<string>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgOptions,
    private readonly settles: (pool: string) => boolean,
  ) {}

  claim(request: ClaimRequest): Promise<ClaimRow> {
    return new Promise<ClaimRow>((resolve, reject) => {
      const queue = this.queues.get(request.pool) ?? [];
      queue.push({ request, resolve, reject });
      this.queues.set(request.pool, queue);
      this.schedule(request.pool);
    });
  }

  private schedule(pool: string): void {
    if (this.scheduled.has(pool)) return;
    this.scheduled.add(pool);
    // setImmediate: let every claim issued in this turn of the event loop join the group.
    setImmediate(() => {
      this.scheduled.delete(pool);
      this.dispatch(pool);
    });
  }

  private dispatch(pool: string): void {
    const queue = this.queues.get(pool);
    while (queue && queue.length > 0 && (this.running.get(pool) ?? 0) < this.options.groupConcurrency) {
      const group = takeGroup(queue, this.options.groupMax);
      if (queue.length === 0) this.queues.delete(pool);
      this.running.set(pool, (this.running.get(pool) ?? 0) + 1);
      void this.run(pool, group).finally(() => {
        const left = (this.running.get(pool) ?? 1) - 1;
        if (left === 0) this.running.delete(pool);
        else this.running.set(pool, left);
        if (this.queues.has(pool)) this.schedule(pool);
      });
    }
  }

  private async run(pool: string, group: Waiting[]): Promise<void> {
    const settle = this.settles(pool);
    const params = [pool, group.map((w) => w.request.claimant), group.map((w) => w.request.key), Math.random(), Math.random(), settle];
    try {
      const rows = settle
        ? await withTransaction(this.pool, async (client) => {
            const result = (await client.query<ClaimRow & { i: string }>(prepared('dibs_claim_group', GROUP.claimGroup, params))).rows;
            if (result.some((r) => r.taken.length > 0)) await settleLowStock(client, result[0]!.pool_id!, true);
            return result;
          })
        : (await this.pool.query<ClaimRow & { i: string }>(prepared('dibs_claim_group', GROUP.claimGroup, params)).catch((error: unknown) => {
            throw translate(error);
          })).rows;
      for (const row of rows) group[Number(row.i) - 1]!.resolve(row);
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  }
}
