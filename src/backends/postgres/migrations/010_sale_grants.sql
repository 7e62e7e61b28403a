-- Tiered mode (a Redis fast path over this ledger): capacity granted to the fast path in chunks.
--
-- A grant escrows `size` units of a capped sale for the fast path. Every fast-path order consumes
-- units of its grant (`used`) in the same statement that writes the order, and only while the
-- grant is not revoked and `used + quantity <= size` (sale_take_granted). `escrow` on the sale row
-- is the unused part of its open grants and counts against the cap like sold and held units:
--   sold + held + escrow <= cap        (CHECK below: the ledger can never oversell)
-- Revoking a grant (Redis lost its data or is unreachable, or the grant expired) gives its unused
-- units back at once; a late fast-path write against it is refused and served by the ledger path.
-- Lock order as everywhere: the sale row first, then its grants.

ALTER TABLE sales ADD COLUMN escrow integer NOT NULL DEFAULT 0 CHECK (escrow >= 0);
ALTER TABLE sales ADD CONSTRAINT sales_escrow_within_cap CHECK (cap IS NULL OR sold + held + escrow <= cap);

CREATE TABLE sale_grants (
  id         bigserial   PRIMARY KEY,
  sale_id    text        NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  size       integer     NOT NULL CHECK (size >= 0),
  used       integer     NOT NULL DEFAULT 0 CHECK (used >= 0),
  revoked_at timestamptz,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sale_grants_used_within_size CHECK (used <= size)
);

CREATE INDEX sale_grants_open ON sale_grants (sale_id) WHERE revoked_at IS NULL;
CREATE INDEX sale_grants_expiry ON sale_grants (expires_at) WHERE revoked_at IS NULL;

-- The grant a fast-path order consumed (NULL for orders of the ledger path and confirmations).
ALTER TABLE sale_orders ADD COLUMN grant_id bigint;
CREATE INDEX sale_orders_grant ON sale_orders (grant_id) WHERE grant_id IS NOT NULL;
