-- Validity windows of pools (issue 12): codes are handed out and redeemed only from starts_at
-- (inclusive) until expires_at (exclusive), by SQLite's clock. ISO 8601 UTC text, NULL = open.
ALTER TABLE dibs_pools ADD COLUMN starts_at TEXT;
ALTER TABLE dibs_pools ADD COLUMN expires_at TEXT;
