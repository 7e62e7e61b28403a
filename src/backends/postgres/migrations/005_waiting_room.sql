-- Waiting rooms for flash sales (see src/core/sales/waiting-room.ts and waiting-room.ts here).
-- Tickets are numbered per sale from next_number in the join transaction, under the sale's row
-- lock: arrival order as the server saw it. UNIQUE (sale_id, customer) makes a second ticket for
-- one customer impossible.

CREATE TABLE waiting_rooms (
  sale_id          text             PRIMARY KEY REFERENCES sales (id) ON DELETE CASCADE,
  admit_per_second double precision NOT NULL CHECK (admit_per_second > 0),
  window_ms        integer          NOT NULL CHECK (window_ms > 0),
  -- HMAC key of the tickets; never leaves the store
  secret           text             NOT NULL,
  next_number      bigint           NOT NULL DEFAULT 1,
  -- admission is strictly in number order, so tickets 1..admitted_through have been admitted and
  -- every later one still waits (until the line closes): positions and counts are O(1)
  admitted_through bigint           NOT NULL DEFAULT 0,
  -- token bucket of admissions: `budget` tickets may be admitted, refilled since `refilled_at`
  budget           double precision NOT NULL DEFAULT 0,
  refilled_at      timestamptz      NOT NULL DEFAULT now(),
  created_at       timestamptz      NOT NULL DEFAULT now()
);

CREATE TABLE tickets (
  sale_id        text        NOT NULL REFERENCES waiting_rooms (sale_id) ON DELETE CASCADE,
  number         bigint      NOT NULL,
  customer       text        NOT NULL,
  status         text        NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'admitted', 'used', 'expired', 'sold_out')),
  joined_at      timestamptz NOT NULL DEFAULT now(),
  admitted_until timestamptz,
  hold_id        text,
  PRIMARY KEY (sale_id, number),
  UNIQUE (sale_id, customer)
);

-- admitted tickets are few (bounded by the units left): their windows and count come from here
CREATE INDEX tickets_admitted ON tickets (sale_id, admitted_until) WHERE status = 'admitted';

-- sale_take gains p_via_ticket: a plain buy or reserve of a sale with a waiting room is refused
-- (outcome ticket_required) inside the same locked step; the waiting room's reserve passes true
-- after checking an admitted ticket in the same transaction. Existing 6-argument calls keep working.
DROP FUNCTION sale_take(text, text, integer, text, text, double precision);

CREATE FUNCTION sale_take(p_sale text, p_customer text, p_quantity integer, p_key text, p_new_id text, p_ttl_ms double precision, p_via_ticket boolean DEFAULT false)
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
  -- A sale behind a waiting room sells only through admitted tickets (reserve, then confirm).
  IF (kind = 'buy' OR NOT p_via_ticket) AND EXISTS (SELECT 1 FROM waiting_rooms WHERE sale_id = p_sale) THEN
    RETURN QUERY SELECT 'ticket_required'::text, NULL::text, NULL::text, NULL::int, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
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

-- One admission step for a sale, server-side so the sale row is locked for one statement, not for
-- a dozen client round trips (with thousands polling one line, round trips under the lock made the
-- queue slower than the admission window). Mirrors core/sales/waiting-room.ts `admissions()`:
-- expire unused windows, refill the token bucket (at most one second's worth, at least 1), admit
-- the next tickets in number order while units remain ((cap − sold − held − admitted-unused ×
-- limit) / limit, rounded up), close the line when the sale is over or sold out.
-- p_customer/p_join: join the line first (one ticket per customer) and return that ticket too.
-- Returns nothing when the sale or its room does not exist.
CREATE FUNCTION room_step(p_sale text, p_customer text DEFAULT NULL, p_join boolean DEFAULT false)
RETURNS TABLE (sale_id text, admit_per_second double precision, window_ms integer, secret text,
               admitted_through bigint, created_at timestamptz,
               number bigint, customer text, status text, admitted_until timestamptz, hold_id text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  r waiting_rooms%ROWTYPE;
  t tickets%ROWTYPE;
  st text;
  unused integer;
  bucket double precision;
  slots bigint;
  n bigint;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  IF NOT FOUND THEN RETURN; END IF;
  IF p_join AND NOT EXISTS (SELECT 1 FROM tickets WHERE sale_id = p_sale AND customer = p_customer) THEN
    UPDATE waiting_rooms SET next_number = next_number + 1 WHERE sale_id = p_sale RETURNING * INTO r;
    INSERT INTO tickets (sale_id, number, customer) VALUES (p_sale, r.next_number - 1, p_customer);
  END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
    SELECT * INTO s FROM sales WHERE id = p_sale;
  END IF;
  UPDATE tickets SET status = 'expired' WHERE sale_id = p_sale AND status = 'admitted' AND admitted_until <= now();
  st := sale_status(s);
  IF st IN ('ended', 'cancelled') OR (s.cap IS NOT NULL AND s.sold >= s.cap) THEN
    UPDATE tickets SET status = 'sold_out' WHERE sale_id = p_sale AND number > r.admitted_through AND status = 'waiting';
  ELSIF st = 'live' THEN
    SELECT count(*) INTO unused FROM tickets WHERE sale_id = p_sale AND status = 'admitted';
    bucket := least(greatest(1.0, r.admit_per_second), r.budget + greatest(0, extract(epoch FROM now() - r.refilled_at)) * r.admit_per_second);
    slots := greatest(0, ceil((s.cap - s.sold - s.held - unused * s.per_customer_limit)::double precision / s.per_customer_limit));
    n := greatest(0, least(floor(bucket)::bigint, slots, r.next_number - 1 - r.admitted_through));
    IF n > 0 THEN
      UPDATE tickets SET status = 'admitted', admitted_until = now() + make_interval(secs => r.window_ms / 1000.0)
      WHERE sale_id = p_sale AND number > r.admitted_through AND number <= r.admitted_through + n AND status = 'waiting';
    END IF;
    UPDATE waiting_rooms SET budget = bucket - n, refilled_at = now(), admitted_through = admitted_through + n
    WHERE sale_id = p_sale RETURNING * INTO r;
  END IF;
  IF p_customer IS NOT NULL THEN
    SELECT * INTO t FROM tickets WHERE sale_id = p_sale AND customer = p_customer;
  END IF;
  RETURN QUERY SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
                      t.number, t.customer, t.status, t.admitted_until, t.hold_id;
END
$$;
