-- All-or-nothing carts: a cart's lines are holds of their sales (so caps, per-customer limits,
-- expiry and the audit count them like any hold), tagged with the cart and the line's position.
-- The cart row keeps the customer, the one expiry of every line, and the idempotency key.
-- The steps are functions/cart_hold.sql, cart_confirm.sql and cart_cancel.sql.

CREATE TABLE carts (
  id          text        PRIMARY KEY,
  customer    text        NOT NULL,
  -- 'expired' is never stored: an active cart past expires_at is expired by the clock.
  status      text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'confirmed', 'cancelled')),
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  key         text        UNIQUE,
  fingerprint text
);

ALTER TABLE sale_holds ADD COLUMN cart_id text REFERENCES carts (id);
ALTER TABLE sale_holds ADD COLUMN cart_line integer;
CREATE INDEX sale_holds_cart ON sale_holds (cart_id, cart_line) WHERE cart_id IS NOT NULL;
