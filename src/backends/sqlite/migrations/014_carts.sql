-- All-or-nothing carts: a cart's lines are holds of their sales (so caps, per-customer limits,
-- expiry and the audit count them like any hold), tagged with the cart and the line's position.
-- The cart row keeps the customer, the one expiry of every line, and the idempotency key.

CREATE TABLE dibs_carts (
  id          TEXT NOT NULL PRIMARY KEY,
  customer    TEXT NOT NULL,
  -- 'expired' is never stored: an active cart past expires_at is expired by the clock.
  status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'confirmed', 'cancelled')),
  expires_at  TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  key         TEXT UNIQUE,
  fingerprint TEXT
) STRICT, WITHOUT ROWID;

ALTER TABLE dibs_holds ADD COLUMN cart_id TEXT REFERENCES dibs_carts (id);
ALTER TABLE dibs_holds ADD COLUMN cart_line INTEGER;
CREATE INDEX dibs_holds_cart ON dibs_holds (cart_id, cart_line) WHERE cart_id IS NOT NULL;
