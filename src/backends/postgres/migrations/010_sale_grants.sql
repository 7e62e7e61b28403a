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

-- sale_take (005) again, with escrowed units counted against the cap. Only the `left_` line changed.
DROP FUNCTION sale_take(text, text, integer, text, text, double precision, boolean);

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
    left_ := s.cap - s.sold - s.escrow - (s.held - CASE WHEN kind = 'reserve' THEN own ELSE 0 END);
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

-- Revokes the sale's open grants — all of them (p_all) or only those past their expiry — and
-- gives their unused units back. The sale row must be locked by the caller. → units returned
CREATE FUNCTION sale_grants_revoke_locked(p_sale text, p_all boolean) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  units integer;
BEGIN
  WITH revoked AS (
    UPDATE sale_grants SET revoked_at = now()
    WHERE sale_id = p_sale AND revoked_at IS NULL AND (p_all OR expires_at <= now())
    RETURNING size - used AS unused
  )
  SELECT COALESCE(sum(unused), 0)::int INTO units FROM revoked;
  IF units > 0 THEN
    UPDATE sales SET escrow = escrow - units WHERE id = p_sale;
  END IF;
  RETURN units;
END
$$;

-- A new grant of up to p_size units for the fast path, valid p_ttl_ms. First expires stale holds
-- and revokes the sale's expired grants (all open grants with p_revoke_all: Redis lost them).
-- Outcomes: not_found | not_live (status) | ledger_only (unlimited sale or waiting room: the ledger
-- sells it) | empty (nothing left to grant; escrow = units still granted elsewhere) | ok (grant_id, size).
CREATE FUNCTION sale_grant(p_sale text, p_size integer, p_ttl_ms double precision, p_revoke_all boolean)
RETURNS TABLE (outcome text, status text, grant_id bigint, size integer, escrow integer, per_customer_limit integer, ends_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  st text;
  left_ integer;
  g bigint;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::bigint, NULL::int, NULL::int, NULL::int, NULL::timestamptz;
    RETURN;
  END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
  END IF;
  PERFORM sale_grants_revoke_locked(p_sale, p_revoke_all);
  SELECT * INTO s FROM sales WHERE id = p_sale;
  st := sale_status(s);
  IF st = 'sold_out' THEN
    -- Every unit sold: Redis may answer sold_out itself for a while.
    RETURN QUERY SELECT 'empty'::text, st, NULL::bigint, 0, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  ELSIF st <> 'live' THEN
    RETURN QUERY SELECT 'not_live'::text, st, NULL::bigint, NULL::int, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  IF s.cap IS NULL OR EXISTS (SELECT 1 FROM waiting_rooms w WHERE w.sale_id = p_sale) THEN
    RETURN QUERY SELECT 'ledger_only'::text, st, NULL::bigint, NULL::int, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  left_ := least(p_size, s.cap - s.sold - s.held - s.escrow);
  IF left_ <= 0 THEN
    RETURN QUERY SELECT 'empty'::text, st, NULL::bigint, 0, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  INSERT INTO sale_grants (sale_id, size, expires_at) VALUES (p_sale, left_, now() + make_interval(secs => p_ttl_ms / 1000)) RETURNING id INTO g;
  UPDATE sales SET escrow = sales.escrow + left_ WHERE id = p_sale;
  RETURN QUERY SELECT 'ok'::text, st, g, left_, s.escrow + left_, s.per_customer_limit, s.ends_at;
END
$$;

-- Revokes every open grant of a sale (reconciliation after Redis lost its data or went away).
-- → units returned to the ungranted capacity
CREATE FUNCTION sale_grants_revoke(p_sale text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN sale_grants_revoke_locked(p_sale, true);
END
$$;

-- Closes a grant the fast path stopped selling from, returning the p_unused units Redis had not
-- sold (never more than the grant has unused). Units already decided in Redis stay in the grant
-- for their ledger writes. → units returned
CREATE FUNCTION sale_grant_close(p_grant bigint, p_unused integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  sid text;
  n integer;
BEGIN
  SELECT sale_id INTO sid FROM sale_grants WHERE id = p_grant;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM sales WHERE id = sid FOR UPDATE;
  SELECT least(p_unused, size - used) INTO n FROM sale_grants WHERE id = p_grant AND revoked_at IS NULL;
  IF n > 0 THEN
    UPDATE sale_grants SET size = size - n WHERE id = p_grant;
  END IF;
  n := COALESCE(n, 0);
  IF n > 0 THEN
    UPDATE sales SET escrow = escrow - n WHERE id = sid;
  END IF;
  RETURN n;
END
$$;

-- A fast-path order: Redis decided this buyer wins a unit of grant p_grant; the ledger records the
-- order only if the grant is still open and has the units, and judges the window, the per-customer
-- limit and the idempotency key again, under the sale row lock. Outcomes: not_found | replay (key_*) |
-- not_live (status) | limit_reached (units, more, lim) | revoked (the grant is gone: use the ledger
-- path) | ok (result_id = the new order).
CREATE FUNCTION sale_take_granted(p_sale text, p_grant bigint, p_customer text, p_quantity integer, p_key text, p_new_id text)
RETURNS TABLE (outcome text, status text, result_id text, units integer, more integer, key_kind text, key_customer text, key_quantity integer, lim integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  k sale_keys%ROWTYPE;
  st text;
  ordered integer;
  own integer;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::text, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
    RETURN;
  END IF;
  IF p_key IS NOT NULL THEN
    SELECT * INTO k FROM sale_keys WHERE sale_id = p_sale AND key = p_key;
    IF FOUND THEN
      RETURN QUERY SELECT 'replay'::text, NULL::text, k.result_id, NULL::int, NULL::int, k.kind, k.customer, k.quantity, NULL::int;
      RETURN;
    END IF;
  END IF;
  IF s.held > 0 THEN
    s.held := s.held - sale_expire_stale(p_sale);
  END IF;
  st := sale_status(s);
  IF st <> 'live' THEN
    RETURN QUERY SELECT 'not_live'::text, st, NULL::text, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
    RETURN;
  END IF;
  SELECT COALESCE(sum(quantity), 0) INTO ordered FROM sale_orders WHERE sale_id = p_sale AND customer = p_customer;
  SELECT COALESCE(sum(quantity), 0) INTO own FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  IF ordered + own + p_quantity > s.per_customer_limit THEN
    RETURN QUERY SELECT 'limit_reached'::text, NULL::text, NULL::text, ordered + own, p_quantity, NULL::text, NULL::text, NULL::int, s.per_customer_limit;
    RETURN;
  END IF;
  UPDATE sale_grants SET used = used + p_quantity
  WHERE id = p_grant AND sale_id = p_sale AND revoked_at IS NULL AND used + p_quantity <= size;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'revoked'::text, NULL::text, NULL::text, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
    RETURN;
  END IF;
  INSERT INTO sale_orders (id, sale_id, customer, quantity, grant_id) VALUES (p_new_id, p_sale, p_customer, p_quantity, p_grant);
  UPDATE sales SET sold = sold + p_quantity, escrow = escrow - p_quantity WHERE id = p_sale RETURNING * INTO s;
  IF s.sold >= s.cap THEN
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
    ON CONFLICT (idempotency_key) DO NOTHING;
  END IF;
  IF p_key IS NOT NULL THEN
    INSERT INTO sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (p_sale, p_key, 'buy', p_customer, p_quantity, p_new_id);
  END IF;
  RETURN QUERY SELECT 'ok'::text, NULL::text, p_new_id, NULL::int, NULL::int, NULL::text, NULL::text, NULL::int, NULL::int;
END
$$;

-- The units-sync job: revokes grants past their expiry across all sales (a process that died
-- between a Redis decision and its ledger write strands its unit at most until then). → units
CREATE FUNCTION sale_grants_expire(p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  sid text;
  total integer := 0;
BEGIN
  FOR sid IN SELECT DISTINCT g.sale_id FROM (SELECT sale_id FROM sale_grants WHERE revoked_at IS NULL AND expires_at <= now() LIMIT p_limit) g ORDER BY 1 LOOP
    PERFORM 1 FROM sales WHERE id = sid FOR UPDATE;
    total := total + sale_grants_revoke_locked(sid, false);
  END LOOP;
  RETURN total;
END
$$;
