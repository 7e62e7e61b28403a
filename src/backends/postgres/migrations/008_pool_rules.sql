-- Pool rules, evaluated inside the claim and redeem steps by the server's clock:
-- - a validity window: codes are handed out and redeemed only from starts_at (inclusive) until
--   expires_at (exclusive); NULL = open on that side;
-- - redemption limits: at most max_redemptions codes of the pool redeemed in all, and at most
--   max_redemptions_per_claimant by one claimant; NULL = no limit. A redeem of a limited pool
--   takes the pool row lock, so concurrent redeems count one after the other;
-- - public codes: a code never claimed may be redeemed directly, its redeemer becoming its holder;
-- - the code format of generated codes, so validate can refuse a mistyped code unseen.
ALTER TABLE pools
  ADD COLUMN starts_at timestamptz,
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN max_redemptions integer CHECK (max_redemptions >= 0),
  ADD COLUMN max_redemptions_per_claimant integer CHECK (max_redemptions_per_claimant >= 1),
  ADD COLUMN public_codes boolean NOT NULL DEFAULT false,
  ADD COLUMN code_format jsonb;
