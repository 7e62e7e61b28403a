/**
 * The raw PostgreSQL claim every claim benchmark measures dibs against: the claim DESIGN.md
 * describes and nothing else — a random start point, SKIP LOCKED, wrap-around, a unique index that
 * forbids a second holding. No idempotency, no counters.
 */
export const RAW_SCHEMA = `
  CREATE TABLE raw_codes (id bigserial PRIMARY KEY, code text NOT NULL UNIQUE, claimant text, rnd double precision NOT NULL DEFAULT random());
  CREATE INDEX raw_codes_free ON raw_codes (rnd) WHERE claimant IS NULL;
  CREATE UNIQUE INDEX raw_codes_claimant ON raw_codes (claimant) WHERE claimant IS NOT NULL;`;
/** $1 claimant, $2 a random start point in [0, 1). */
export const RAW_CLAIM = `UPDATE raw_codes SET claimant = $1
  WHERE id = (SELECT id FROM raw_codes WHERE claimant IS NULL AND rnd >= $2 ORDER BY rnd LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING code`;
/** When nothing was free past the start point: from the beginning. $1 claimant. */
export const RAW_CLAIM_WRAP = `UPDATE raw_codes SET claimant = $1
  WHERE id = (SELECT id FROM raw_codes WHERE claimant IS NULL ORDER BY rnd LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING code`;
