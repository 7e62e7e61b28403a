-- Holds every line of a cart as one step, or none. Lines are p_sales[i] × p_quantities[i] (no sale
-- twice; the caller checked). The sale rows are locked in id order (two carts over the same sales
-- never deadlock), then every line is judged as sale_take judges a reservation — window, waiting
-- room, an existing hold of the customer, the per-customer limit, the cap (escrow counted) — and
-- only when all pass are the holds written, all with one expiry. A key is serialized by a
-- transaction advisory lock taken before the sale locks. Outcomes:
--   replay (result_id = the cart, fingerprint = its request) | ok (result_id = the cart) | a
--   refusal's reason id from core/refusals.ts, with ctx naming the first line that failed (line:
--   0-based, in the caller's order; sale) and the rest of its context: cart_line_no_sale |
--   sale_not_live (status) | cart_line_room | cart_line_held (hold) | sale_limit (units, quantity,
--   limit) | sale_sold_out (available)
-- The form with one column per context field (before ctx) goes: result columns cannot be replaced in place.
DROP FUNCTION IF EXISTS cart_hold(text, text, text[], integer[], double precision, text, text, text[]);
CREATE OR REPLACE FUNCTION cart_hold(p_cart text, p_customer text, p_sales text[], p_quantities integer[], p_ttl_ms double precision, p_key text, p_fingerprint text, p_hold_ids text[])
RETURNS TABLE (outcome text, result_id text, fingerprint text, ctx jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  s sales%ROWTYPE;
  st text;
  ordered integer;
  own_id text;
  left_ integer;
  i integer;
  at_line jsonb;
  n integer := array_length(p_sales, 1);
  expiry timestamptz := now() + make_interval(secs => p_ttl_ms / 1000);
BEGIN
  IF p_key IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('dibs.cart_key:' || p_key, 0));
    SELECT * INTO c FROM carts WHERE key = p_key;
    IF FOUND THEN
      RETURN QUERY SELECT 'replay'::text, c.id, c.fingerprint, NULL::jsonb;
      RETURN;
    END IF;
  END IF;
  PERFORM 1 FROM sales WHERE id = ANY (p_sales) ORDER BY id FOR UPDATE;
  FOR i IN 1 .. n LOOP
    at_line := jsonb_build_object('line', i - 1, 'sale', p_sales[i]);
    SELECT * INTO s FROM sales WHERE id = p_sales[i];
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'cart_line_no_sale'::text, NULL::text, NULL::text, at_line;
      RETURN;
    END IF;
    IF s.held > 0 THEN
      s.held := s.held - sale_expire_stale(s.id);
    END IF;
    st := sale_status(s);
    IF st <> 'live' THEN
      RETURN QUERY SELECT 'sale_not_live'::text, NULL::text, NULL::text, at_line || jsonb_build_object('status', st);
      RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM waiting_rooms WHERE sale_id = s.id) THEN
      RETURN QUERY SELECT 'cart_line_room'::text, NULL::text, NULL::text, at_line;
      RETURN;
    END IF;
    own_id := NULL;
    SELECT id INTO own_id FROM sale_holds WHERE sale_id = s.id AND customer = p_customer AND status = 'active';
    IF own_id IS NOT NULL THEN
      RETURN QUERY SELECT 'cart_line_held'::text, NULL::text, NULL::text, at_line || jsonb_build_object('hold', own_id);
      RETURN;
    END IF;
    SELECT COALESCE(sum(quantity), 0) INTO ordered FROM sale_orders WHERE sale_id = s.id AND customer = p_customer;
    IF ordered + p_quantities[i] > s.per_customer_limit THEN
      RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text,
        at_line || jsonb_build_object('units', ordered, 'quantity', p_quantities[i], 'limit', s.per_customer_limit);
      RETURN;
    END IF;
    IF s.cap IS NOT NULL THEN
      left_ := s.cap - s.sold - s.escrow - s.held;
      IF p_quantities[i] > left_ THEN
        RETURN QUERY SELECT 'sale_sold_out'::text, NULL::text, NULL::text, at_line || jsonb_build_object('available', greatest(left_, 0));
        RETURN;
      END IF;
    END IF;
  END LOOP;
  -- Every line passed: write them all (nothing was written before, so a refusal above leaves no line).
  INSERT INTO carts (id, customer, expires_at, key, fingerprint) VALUES (p_cart, p_customer, expiry, p_key, p_fingerprint);
  FOR i IN 1 .. n LOOP
    INSERT INTO sale_holds (id, sale_id, customer, quantity, expires_at, cart_id, cart_line)
    VALUES (p_hold_ids[i], p_sales[i], p_customer, p_quantities[i], expiry, p_cart, i - 1);
    UPDATE sales SET held = held + p_quantities[i] WHERE id = p_sales[i];
  END LOOP;
  RETURN QUERY SELECT 'ok'::text, p_cart, NULL::text, NULL::jsonb;
END
$$;
