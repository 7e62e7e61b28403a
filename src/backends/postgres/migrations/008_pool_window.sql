-- Validity windows of pools (issue 12): codes are handed out and redeemed only from starts_at
-- (inclusive) until expires_at (exclusive), by the server's clock. NULL = open on that side.
ALTER TABLE pools ADD COLUMN starts_at timestamptz, ADD COLUMN expires_at timestamptz;
