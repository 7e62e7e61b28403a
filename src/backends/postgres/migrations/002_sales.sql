-- Flash sales on PostgreSQL, and outbox delivery state for every event (pool and sale).
--
-- Concurrency design (see sales.sql):
-- - every step that changes a sale's units (buy, reserve, confirm, cancel, expire, update, cancel
--   sale) runs in one READ COMMITTED transaction that first locks the sale row (FOR UPDATE); the
--   statements after the lock see every earlier committed step, so the window, cap, per-customer
--   limit, idempotency key and hold expiry are all decided on current state, with now(); the hot
--   steps (buy, reserve, confirm) are the plpgsql functions at the end of this file, so that
--   transaction is a single statement and the lock is never held across client round trips;
-- - `sold` and `held` on the sale row move in the same transaction as the orders/holds they count,
--   and CHECK constraints make `sold <= cap` and `sold + held <= cap` (I3) impossible to break;
-- - creating/moving a sale takes a transaction advisory lock on its SKU, so two overlapping sales
--   of one SKU cannot pass the preflight side by side;
-- - activation/expiration mark the sale with a conditional UPDATE (re-checked after any wait for
--   the row lock) and write their events in the same transaction; events have unique idempotency
--   keys, so a second writer cannot add a duplicate (I7).

-- Timestamps in event payloads as fixed-width UTC ISO strings, the same shape every backend returns.
CREATE FUNCTION iso_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE TABLE sales (
  id                 text        PRIMARY KEY,
  sku                text        NOT NULL,
  starts_at          timestamptz NOT NULL,
  ends_at            timestamptz NOT NULL,
  cap                integer     CHECK (cap >= 0),            -- NULL = unlimited
  per_customer_limit integer     NOT NULL CHECK (per_customer_limit >= 1),
  metadata           jsonb       NOT NULL DEFAULT '{}',
  cancelled_at       timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  sold               integer     NOT NULL DEFAULT 0 CHECK (sold >= 0),
  -- Units in holds still marked active (some may be past expiry until the next step expires them).
  held               integer     NOT NULL DEFAULT 0 CHECK (held >= 0),
  announced_at       timestamptz,
  ended_recorded_at  timestamptz,
  -- I3 by construction for capped sales: the row cannot be written with sold (or sold plus
  -- holds) over the cap, whatever the code above it does.
  CONSTRAINT sales_sold_within_cap CHECK (cap IS NULL OR sold <= cap),
  CONSTRAINT sales_committed_within_cap CHECK (cap IS NULL OR sold + held <= cap)
) WITH (fillfactor = 70);  -- the sale row is rewritten by every step: leave room for HOT updates

CREATE INDEX sales_sku ON sales (sku, starts_at);
CREATE INDEX sales_to_announce ON sales (starts_at) WHERE announced_at IS NULL AND cancelled_at IS NULL;
CREATE INDEX sales_to_end ON sales (ends_at) WHERE ended_recorded_at IS NULL;

CREATE TABLE sale_orders (
  id         text        PRIMARY KEY,
  sale_id    text        NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  customer   text        NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity >= 1),
  hold_id    text        UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sale_orders_customer ON sale_orders (sale_id, customer);

CREATE TABLE sale_holds (
  id         text        PRIMARY KEY,
  sale_id    text        NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  customer   text        NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity >= 1),
  status     text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'confirmed', 'cancelled', 'expired')),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  order_id   text
);

-- One active hold per customer and sale: reserving again replaces it.
CREATE UNIQUE INDEX sale_holds_one_active ON sale_holds (sale_id, customer) WHERE status = 'active';
CREATE INDEX sale_holds_expiry ON sale_holds (expires_at) WHERE status = 'active';
CREATE INDEX sale_holds_sale_expiry ON sale_holds (sale_id, expires_at) WHERE status = 'active';

CREATE TABLE sale_keys (
  sale_id   text    NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  key       text    NOT NULL,
  kind      text    NOT NULL CHECK (kind IN ('buy', 'reserve')),
  customer  text    NOT NULL,
  quantity  integer NOT NULL,
  result_id text    NOT NULL,
  PRIMARY KEY (sale_id, key)
);

CREATE TABLE wishlist (
  sku        text        NOT NULL,
  customer   text        NOT NULL,
  channels   jsonb       NOT NULL,   -- { email?, webPush?, webhook? }
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sku, customer)
);

-- The outbox of 001 carries sale events too, and the delivery state of every event.
ALTER TABLE outbox
  ADD COLUMN sale            text,
  ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
  ADD COLUMN next_attempt_at timestamptz,
  ADD COLUMN locked_until    timestamptz,
  ADD COLUMN last_error      text,
  ADD COLUMN dead_at         timestamptz;

CREATE INDEX outbox_sale ON outbox (sale, id);
CREATE INDEX outbox_due ON outbox (id) WHERE delivered_at IS NULL AND dead_at IS NULL;

CREATE TABLE outbox_deliveries (
  id       bigserial   PRIMARY KEY,
  event_id bigint      NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
  attempt  integer     NOT NULL,
  ok       boolean     NOT NULL,
  detail   text        NOT NULL,
  at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_deliveries_event ON outbox_deliveries (event_id, id);

-- The hot steps as server-side functions: the whole step runs in ONE round trip, so the sale row
-- lock is held for the time the statements take, not for several client round trips (at 16
-- connections that was the difference between ~0.15× and ~0.5× raw speed). Inside a plpgsql
-- function each statement takes a fresh snapshot, so everything after the FOR UPDATE sees every
-- step committed before it, exactly like the client-side transactions of sales.ts.

-- Expires the (locked) sale's holds past their expiry, records one hold.expired event each, takes
-- their units off the held counter; returns those units.
CREATE FUNCTION sale_expire_stale(p_sale text) RETURNS integer LANGUAGE plpgsql AS $$
-- plpgsql rather than sql: its statement plans are cached for the session, and this runs in every step.
DECLARE
  units integer;
BEGIN
  WITH expired AS (
    UPDATE sale_holds SET status = 'expired'
    WHERE sale_id = p_sale AND status = 'active' AND expires_at <= now()
    RETURNING id, sale_id, customer, quantity, expires_at
  ), events AS (
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    SELECT 'hold.expired', 'hold.expired:' || id, sale_id,
           jsonb_build_object('sale', sale_id, 'hold', id, 'customer', customer, 'quantity', quantity, 'expiresAt', iso_utc(expires_at))
    FROM expired ORDER BY expires_at, id
    ON CONFLICT (idempotency_key) DO NOTHING
  ), moved AS (
    UPDATE sales s SET held = s.held - x.units
    FROM (SELECT sum(quantity)::int AS units FROM expired) x
    WHERE s.id = p_sale AND x.units > 0
  )
  SELECT COALESCE(sum(quantity), 0)::int INTO units FROM expired;
  RETURN units;
END
$$;

-- The status a sale is in at now() (the same rule as core/sales/rules.ts saleStatus).
CREATE FUNCTION sale_status(s sales) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN s.cancelled_at IS NOT NULL THEN 'cancelled'
    WHEN now() < s.starts_at THEN 'scheduled'
    WHEN now() >= s.ends_at THEN 'ended'
    WHEN s.cap IS NOT NULL AND s.sold >= s.cap THEN 'sold_out'
    ELSE 'live'
  END
$$;

-- A buy (or a reserve: p_ttl_ms not null) as one step. Outcomes:
--   not_found | replay (key_* describe the stored request, result_id its order/hold)
--   not_live (status) | limit_reached (units = what the customer has, more = what was asked beyond it, lim = the limit)
--   sold_out (available) | ok (result_id = the new order / the new or replaced hold)
CREATE FUNCTION sale_take(p_sale text, p_customer text, p_quantity integer, p_key text, p_new_id text, p_ttl_ms double precision)
RETURNS TABLE (outcome text, status text, result_id text, units integer, more integer, available integer, key_kind text, key_customer text, key_quantity integer, lim integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  k sale_keys%ROWTYPE;
  st text;
  ordered integer;
  own_id text;
  own integer;
  ask integer;
  left_ integer;
  kind text := CASE WHEN p_ttl_ms IS NULL THEN 'buy' ELSE 'reserve' END;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::text, NULL::int, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
    RETURN;
  END IF;
  IF p_key IS NOT NULL THEN
    SELECT * INTO k FROM sale_keys WHERE sale_id = p_sale AND key = p_key;
    IF FOUND THEN
      RETURN QUERY SELECT 'replay'::text, NULL::text, k.result_id, NULL::int, NULL::int, NULL::int, k.kind, k.customer, k.quantity, NULL::int;
      RETURN;
    END IF;
  END IF;
  -- Holds marked active are counted in held, so with held = 0 there is nothing to expire.
  IF s.held > 0 THEN
    s.held := s.held - sale_expire_stale(p_sale);
  END IF;
  st := sale_status(s);
  IF st <> 'live' THEN
    RETURN QUERY SELECT 'not_live'::text, st, NULL::text, NULL::int, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
    RETURN;
  END IF;
  SELECT COALESCE(sum(quantity), 0) INTO ordered FROM sale_orders WHERE sale_id = p_sale AND customer = p_customer;
  SELECT id, quantity INTO own_id, own FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  own := COALESCE(own, 0);
  -- A reserve replaces the customer's own hold; a buy comes on top of it.
  ask := CASE WHEN kind = 'reserve' THEN p_quantity - own ELSE p_quantity END;
  IF ordered + own + ask > s.per_customer_limit THEN
    RETURN QUERY SELECT 'limit_reached'::text, NULL::text, NULL::text, ordered + own, ask, NULL::int, NULL::text, NULL::text, NULL::int, s.per_customer_limit;
    RETURN;
  END IF;
  IF s.cap IS NOT NULL THEN
    -- Everyone else's holds count against the cap (for a reserve, the own hold is being replaced).
    left_ := s.cap - s.sold - (s.held - CASE WHEN kind = 'reserve' THEN own ELSE 0 END);
    IF p_quantity > left_ THEN
      RETURN QUERY SELECT 'sold_out'::text, NULL::text, NULL::text, NULL::int, NULL::int, greatest(left_, 0), NULL::text, NULL::text, NULL::int, NULL::int;
      RETURN;
    END IF;
  END IF;
  IF kind = 'buy' THEN
    INSERT INTO sale_orders (id, sale_id, customer, quantity) VALUES (p_new_id, p_sale, p_customer, p_quantity);
    UPDATE sales SET sold = sold + p_quantity WHERE id = p_sale RETURNING * INTO s;
    IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
      INSERT INTO outbox (type, idempotency_key, sale, payload)
      VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
      ON CONFLICT (idempotency_key) DO NOTHING;
    END IF;
    result_id := p_new_id;
  ELSIF own_id IS NOT NULL THEN
    UPDATE sale_holds SET quantity = p_quantity, expires_at = now() + make_interval(secs => p_ttl_ms / 1000) WHERE id = own_id;
    UPDATE sales SET held = held + p_quantity - own WHERE id = p_sale;
    result_id := own_id;
  ELSE
    INSERT INTO sale_holds (id, sale_id, customer, quantity, expires_at)
    VALUES (p_new_id, p_sale, p_customer, p_quantity, now() + make_interval(secs => p_ttl_ms / 1000));
    UPDATE sales SET held = held + p_quantity WHERE id = p_sale;
    result_id := p_new_id;
  END IF;
  IF p_key IS NOT NULL THEN
    INSERT INTO sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (p_sale, p_key, kind, p_customer, p_quantity, result_id);
  END IF;
  RETURN QUERY SELECT 'ok'::text, NULL::text, result_id, NULL::int, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
END
$$;

-- Confirming a hold as one step. Outcomes: not_found | replay (result_id = its order) |
-- cancelled | expired (expires_at) | sale_cancelled | ok (result_id = the new order).
-- The hold's units move from held to sold, so sold + held is unchanged and the cap still holds.
CREATE FUNCTION sale_confirm(p_hold text, p_order_id text)
RETURNS TABLE (outcome text, result_id text, expires_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  h sale_holds%ROWTYPE;
  s sales%ROWTYPE;
BEGIN
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  -- A hold's sale never changes: lock it, then look at the hold as it is now.
  SELECT * INTO s FROM sales WHERE id = h.sale_id FOR UPDATE;
  PERFORM sale_expire_stale(h.sale_id);
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF h.status = 'confirmed' THEN
    RETURN QUERY SELECT 'replay'::text, o.id, NULL::timestamptz FROM sale_orders o WHERE o.hold_id = p_hold;
    RETURN;
  ELSIF h.status = 'cancelled' THEN
    RETURN QUERY SELECT 'cancelled'::text, NULL::text, NULL::timestamptz;
    RETURN;
  ELSIF h.status = 'expired' THEN
    RETURN QUERY SELECT 'expired'::text, NULL::text, h.expires_at;
    RETURN;
  ELSIF s.cancelled_at IS NOT NULL THEN
    RETURN QUERY SELECT 'sale_cancelled'::text, NULL::text, NULL::timestamptz;
    RETURN;
  END IF;
  INSERT INTO sale_orders (id, sale_id, customer, quantity, hold_id) VALUES (p_order_id, h.sale_id, h.customer, h.quantity, p_hold);
  UPDATE sale_holds SET status = 'confirmed', order_id = p_order_id WHERE id = p_hold;
  UPDATE sales SET sold = sold + h.quantity, held = held - h.quantity WHERE id = h.sale_id RETURNING * INTO s;
  IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
    ON CONFLICT (idempotency_key) DO NOTHING;
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_order_id, NULL::timestamptz;
END
$$;
