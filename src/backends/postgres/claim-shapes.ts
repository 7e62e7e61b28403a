/** What a claim asks and what claim.sql / claim-group.sql answer: shared by claim.ts and claim-grouper.ts. */
/** The one-row answer of claim.sql (and each row of claim-group.sql). */
export interface ClaimRow {
  pool_id: string | null;
  threshold: number | null;
  /** The pool's perClaimantLimit (claim.sql only). */
  per_claimant_limit?: number;
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
