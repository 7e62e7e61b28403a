/**
 * Claims on PostgreSQL. The rules live in claim.sql (one statement for single and grouped claims);
 * this module runs it and turns its per-request answers into results, retrying the few situations the
 * statement reports instead of resolving itself:
 * - a unique violation (23505): a racing claim of the same claimant or key won; the retry sees it
 *   (a failed group retries as a group once, then alone);
 * - `busy`: nothing was free that was not locked by an in-flight claim, yet the snapshot still saw
 *   free codes — those claims may roll back, so sold_out would be a lie; wait a moment, retry;
 * - `needs_tx`: the pool has a low-stock threshold; run again inside a transaction that settles it;
 * - `stale`: the pool's rules changed (updatePool) after the statement read them; it took nothing;
 * - a spent idempotency key (all its codes released/revoked): forget it, then claim afresh.
 */
import { judgeClaimKey } from '../../core/model/pools.js';
import { refusal } from '../../core/refusals.js';
import type pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { notFound, unavailable } from '../../core/errors.js';
import type { ClaimManyResult } from '../../core/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { outsideWindow } from '../../core/window.js';
import { causeState, connectionSlot, prepared, query, translate, withClient, type PgOptions } from './connection.js';
import { ClaimGrouper } from './claim-grouper.js';
import type { ClaimRequest, ClaimRow } from './claim-shapes.js';
import { runClaim } from './claim-statement.js';
import { noteStoreRetry } from '../../tracing/retries.js';

const FAST = loadQueries(new URL('./claim-fast.sql', import.meta.url), ['claimFast']);
const SPENT = loadQueries(new URL('./pools.sql', import.meta.url), ['deleteSpentKey']);

/** How long this process trusts that a pool's rules keep its claims off the fast statement. */
const NOT_FAST_TTL_MS = 5_000;

/** How long a claim keeps retrying races before it answers `unavailable`. */
const RETRY_DEADLINE_MS = 10_000;

type Decision = { result: ClaimManyResult } | { retry: 'race' | 'busy' | 'needs_tx' | 'spent_key'; poolId?: string };

export class PgClaims {
  /** Pools known to have a low-stock threshold: their claims go straight to the transactional path. */
  private readonly settled = new Set<string>();
  /**
   * Pools whose rules claim-fast.sql cannot serve (limit above 1, a window, a threshold) as the last
   * full statement saw them, with the time until which that is trusted: their claims skip the fast
   * statement's wasted round trip. Only a shortcut — claim.sql enforces every rule whatever this
   * says, so a stale entry (the pool changed in another process) costs speed, never correctness, and
   * lasts at most NOT_FAST_TTL_MS.
   */
  private readonly notFast = new Map<string, number>();
  private readonly grouper: ClaimGrouper | null;

  constructor(
    private readonly pool: pg.Pool,
    options: PgOptions,
  ) {
    this.grouper = options.grouped ? new ClaimGrouper(pool, options, (name) => this.settled.has(name)) : null;
  }

  /** Called when this process learns that a pool's threshold changed. */
  thresholdChanged(pool: string, threshold: number | null): void {
    if (threshold === null) this.settled.delete(pool);
    else this.settled.add(pool);
  }

  async claim(request: ClaimRequest): Promise<ClaimManyResult> {
    const deadline = Date.now() + RETRY_DEADLINE_MS;
    let useGroup = this.grouper !== null && request.count === 1;
    let failedGroups = 0;
    if (!useGroup) {
      const fast = await this.tryFast(request);
      if (fast) return fast;
    }
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) noteStoreRetry();
      let row: ClaimRow;
      try {
        row = useGroup ? await this.grouper!.claim(request) : await this.runSingle(request);
      } catch (error) {
        // Look through translation: a deadlock inside a group or a settling transaction arrives
        // here already wrapped as `unavailable`, and is just as safe to retry.
        const state = causeState(error);
        if (state !== '23505' && state !== '40P01' && state !== '40001') throw translate(error);
        // A race with another claim of the same claimant/key (or a deadlock victim) failed the
        // statement. The winner has committed or rolled back by now (a unique check and a deadlock
        // wait for it), so the next statement sees it and one collision never fails a group twice:
        // the first time, every claim of the group joins the next group again — one more grouped
        // statement each, where a claim of its own each queued a group's worth of claims for the
        // process's connections at once (most of the seed scenario's slowest 1% on PostgreSQL).
        // A claim whose group fails again retries alone, so it cannot keep failing others' groups.
        if (useGroup && ++failedGroups > 1) useGroup = false;
        if (Date.now() > deadline)
          throw unavailable(`claim kept colliding with concurrent claims for ${RETRY_DEADLINE_MS} ms`, error);
        continue;
      }
      if (!useGroup) this.noteFastness(request.pool, row);
      const decision = decide(request, row);
      if ('result' in decision) return decision.result;
      if (Date.now() > deadline)
        throw unavailable(`claim could not settle within ${RETRY_DEADLINE_MS} ms (${decision.retry})`);
      switch (decision.retry) {
        case 'needs_tx':
          this.settled.add(request.pool);
          break;
        case 'spent_key':
          await query(this.pool, SPENT.deleteSpentKey, [decision.poolId, request.key]);
          break;
        case 'busy':
          // Every free row was locked by an in-flight claim; they finish within a round trip.
          await sleep(1 + Math.random() * Math.min(20, 2 * attempt));
          break;
        case 'race':
          break;
      }
    }
  }

  /**
   * claim-fast.sql: the happy path of the commonest claim (one code, with or without a key, limit 1,
   * no threshold) at about the cost of a bare SKIP LOCKED update. null means "not answered here":
   * the full statement runs next and decides (already-held, a replayed or conflicting key, sold
   * out, busy, other rules).
   */
  private async tryFast(r: ClaimRequest): Promise<ClaimManyResult | null> {
    if (r.count !== 1 || this.settled.has(r.pool)) return null;
    const until = this.notFast.get(r.pool);
    if (until !== undefined && until > Date.now()) return null;
    let rows: { code: string }[];
    try {
      rows = await withClient(
        this.pool,
        async (client) =>
          (
            await client.query<{ code: string }>(
              prepared('dibs_claim_fast', FAST.claimFast, [
                r.pool,
                r.claimant,
                Math.random(),
                connectionSlot(client),
                r.key,
              ]),
            )
          ).rows,
      );
    } catch (error) {
      const state = causeState(error);
      if (state === '23505' || state === '40P01' || state === '40001') return null;
      throw error;
    }
    const code = rows[0]?.code;
    return code === undefined
      ? null
      : { pool: r.pool, claimant: r.claimant, status: 'claimed', codes: [code], held: [code], replayed: false };
  }

  /** Remembers whether claim-fast.sql can serve the pool, from a full statement's answer. */
  private noteFastness(pool: string, row: ClaimRow): void {
    if (row.pool_id === null || row.per_claimant_limit === null) return;
    if (row.per_claimant_limit === 1 && row.threshold === null && row.starts_at === null && row.expires_at === null) {
      this.notFast.delete(pool);
      return;
    }
    if (this.notFast.size >= 10_000) this.notFast.clear();
    this.notFast.set(pool, Date.now() + NOT_FAST_TTL_MS);
  }

  /** The claim statement for this request alone (autocommit, or settling low stock when the pool has a threshold). */
  private async runSingle(r: ClaimRequest): Promise<ClaimRow> {
    return (await runClaim(this.pool, r.pool, [r], this.settled.has(r.pool)))[0]!;
  }
}

/** Turns a statement's answer into the caller's result, or says why to run it again. */
export function decide(r: ClaimRequest, row: ClaimRow): Decision {
  if (row.pool_id === null) throw notFound('pool', r.pool);
  const answer = (status: ClaimManyResult['status'], codes: string[], held: string[], replayed: boolean): Decision => ({
    result: { pool: r.pool, claimant: r.claimant, status, codes, held, replayed },
  });
  if (row.prior_claimant !== null) {
    judgeClaimKey(r.key!, { claimant: row.prior_claimant, count: row.prior_count! }, r.claimant, r.count);
    if (row.key_codes.length > 0) return answer('claimed', row.key_codes, row.held_before, true);
    return { retry: 'spent_key', poolId: row.pool_id };
  }
  if (row.taken.length > 0) return answer('claimed', row.taken, [...row.held_before, ...row.taken], false);
  // judged by rules that changed before it could commit (I8): judge it again by the new ones
  if (row.stale) return { retry: 'race' };
  if (row.window_state !== 'open') {
    throw outsideWindow(
      r.pool,
      { startsAt: row.starts_at?.toISOString() ?? null, expiresAt: row.expires_at?.toISOString() ?? null },
      row.window_state,
    );
  }
  // The statement refuses to take codes outside a transaction when the pool has a threshold.
  if (row.threshold !== null && !row.settled) return { retry: 'needs_tx' };
  if (row.room === 0) return answer('already-held', [], row.held_before, false);
  if (Number(row.free_seen) > 0) return { retry: 'busy' };
  throw refusal('pool_sold_out', { pool: r.pool });
}
