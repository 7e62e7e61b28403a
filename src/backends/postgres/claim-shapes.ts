/** What a claim asks and what claim.sql answers: shared by claim.ts, claim-grouper.ts and claim-statement.ts. */
/** claim.sql's answer to one request (one row per request). */
export interface ClaimRow {
  /** The request's 1-based position in the statement's arrays. */
  i: string;
  pool_id: string | null;
  threshold: number | null;
  /** The pool's perClaimantLimit. */
  per_claimant_limit: number | null;
  prior_claimant: string | null;
  prior_count: number | null;
  key_codes: string[];
  held_before: string[];
  taken: string[];
  room: number;
  free_seen: string;
  /** Echo of the settle parameter: whether this ran inside a low-stock-settling transaction. */
  settled: boolean;
  /** The pool's validity window at the statement's now(). */
  window_state: 'open' | 'not_yet_valid' | 'expired';
  starts_at: Date | null;
  expires_at: Date | null;
  /** The pool's rules changed while the statement ran: it took nothing; run it again. */
  stale: boolean;
}

export interface ClaimRequest {
  pool: string;
  claimant: string;
  count: number;
  key: string | null;
}
