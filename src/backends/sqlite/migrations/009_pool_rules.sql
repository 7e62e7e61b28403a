-- Pool rules, evaluated inside the claim and redeem steps by SQLite's clock:
-- - a validity window: codes are handed out and redeemed only from starts_at (inclusive) until
--   expires_at (exclusive); ISO 8601 UTC text, NULL = open on that side;
-- - redemption limits: at most max_redemptions codes of the pool redeemed in all, and at most
--   max_redemptions_per_claimant by one claimant; NULL = no limit;
-- - public codes: a code never claimed may be redeemed directly, its redeemer becoming its holder;
-- - the code format (JSON) of generated codes, so validate can refuse a mistyped code unseen.
ALTER TABLE dibs_pools ADD COLUMN starts_at TEXT;
ALTER TABLE dibs_pools ADD COLUMN expires_at TEXT;
ALTER TABLE dibs_pools ADD COLUMN max_redemptions INTEGER;
ALTER TABLE dibs_pools ADD COLUMN max_redemptions_per_claimant INTEGER;
ALTER TABLE dibs_pools ADD COLUMN public_codes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_pools ADD COLUMN code_format TEXT;
