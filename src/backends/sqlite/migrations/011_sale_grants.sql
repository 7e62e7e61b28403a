-- Tiered mode (a Redis fast path over this ledger): capacity granted to the fast path in chunks.
--
-- A grant escrows `size` units of a capped sale for the fast path; every fast-path order consumes
-- one unit of its grant (`used`) in the same transaction that writes the order, and only while the
-- grant is not revoked and `used + quantity <= size`. `escrow` on the sale row is the unused part of
-- its open grants, and counts against the cap like sold and held units:
--   sold + held + escrow <= cap            (CHECK below, so the ledger can never oversell)
-- Revoking a grant (Redis lost its data, is unreachable, or the grant expired) gives its unused
-- units back at once; a late fast-path write against it is refused and served by the ledger path.

ALTER TABLE dibs_sales ADD COLUMN escrow INTEGER NOT NULL DEFAULT 0
  CHECK (escrow >= 0 AND (cap IS NULL OR sold + held + escrow <= cap));

CREATE TABLE dibs_sale_grants (
  id         INTEGER PRIMARY KEY,
  sale_id    TEXT    NOT NULL REFERENCES dibs_sales (id) ON DELETE CASCADE,
  size       INTEGER NOT NULL CHECK (size >= 0),
  used       INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= size),
  revoked_at TEXT,
  expires_at TEXT    NOT NULL,
  created_at TEXT    NOT NULL
) STRICT;

CREATE INDEX dibs_sale_grants_open ON dibs_sale_grants (sale_id) WHERE revoked_at IS NULL;
CREATE INDEX dibs_sale_grants_expiry ON dibs_sale_grants (expires_at) WHERE revoked_at IS NULL;

-- The grant a fast-path order consumed (NULL for orders of the ledger path and confirmations).
ALTER TABLE dibs_orders ADD COLUMN grant_id INTEGER;
CREATE INDEX dibs_orders_grant ON dibs_orders (grant_id) WHERE grant_id IS NOT NULL;
