-- A buy (or a reserve: p_ttl_ms not null) as one step, under the sale row lock. Units granted to
-- the fast path and still unused (escrow, sale_grants) count against the cap. p_via_ticket: the
-- caller holds an admitted waiting-room ticket. Outcomes:
--   not_found | replay (key_* describe the stored request, result_id its order/hold)
--   | ok (result_id = the new order / the new or replaced hold)
--   | a refusal's reason id from core/refusals.ts, with ctx naming its context as the reason does:
--     sale_not_live (status) | sale_ticket_required | sale_limit (units = what the customer has,
--     quantity = what was asked beyond it, limit) | sale_sold_out (available) | hold_in_cart (a
--     reserve whose own hold is a cart's line: hold, cart)
-- The opening (lock, replay, expiry, status, waiting room) is sale_take_open, shared with sale_take_granted.
-- The 6-argument form (before p_via_ticket) goes: with it beside this one, a 6-argument call would be
-- ambiguous; so does the form with one column per context field (before ctx): result columns
-- cannot be replaced in place.
DROP FUNCTION IF EXISTS sale_take(text, text, integer, text, text, double precision);
DROP FUNCTION IF EXISTS sale_take(text, text, integer, text, text, double precision, boolean);
CREATE OR REPLACE FUNCTION sale_take(p_sale text, p_customer text, p_quantity integer, p_key text, p_new_id text, p_ttl_ms double precision, p_via_ticket boolean DEFAULT false)
RETURNS TABLE (outcome text, result_id text, key_kind text, key_customer text, key_quantity integer, ctx jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  o record;
  ordered integer;
  own_id text;
  own integer;
  own_cart text;
  ask integer;
  left_ integer;
  kind text := CASE WHEN p_ttl_ms IS NULL THEN 'buy' ELSE 'reserve' END;
BEGIN
  -- A sale behind a waiting room sells only through admitted tickets (reserve, then confirm).
  SELECT * INTO o FROM sale_take_open(p_sale, p_customer, p_key, kind = 'reserve' AND p_via_ticket);
  IF o.o_outcome IS NOT NULL THEN
    RETURN QUERY SELECT o.o_outcome, (o.o_key).result_id, (o.o_key).kind, (o.o_key).customer, (o.o_key).quantity, o.o_ctx;
    RETURN;
  END IF;
  s := o.o_sale;
  ordered := o.o_ordered;
  SELECT id, quantity, cart_id INTO own_id, own, own_cart FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  own := COALESCE(own, 0);
  -- A cart's line is replaced only with its whole cart.
  IF kind = 'reserve' AND own_cart IS NOT NULL THEN
    RETURN QUERY SELECT 'hold_in_cart'::text, NULL::text, NULL::text, NULL::text, NULL::int, jsonb_build_object('hold', own_id, 'cart', own_cart);
    RETURN;
  END IF;
  -- A reserve replaces the customer's own hold; a buy comes on top of it.
  ask := CASE WHEN kind = 'reserve' THEN p_quantity - own ELSE p_quantity END;
  IF ordered + own + ask > s.per_customer_limit THEN
    RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text, NULL::text, NULL::int,
      jsonb_build_object('units', ordered + own, 'quantity', ask, 'limit', s.per_customer_limit);
    RETURN;
  END IF;
  IF s.cap IS NOT NULL THEN
    -- Everyone else's holds count against the cap (for a reserve, the own hold is being replaced).
    left_ := s.cap - s.sold - s.escrow - (s.held - CASE WHEN kind = 'reserve' THEN own ELSE 0 END);
    IF p_quantity > left_ THEN
      RETURN QUERY SELECT 'sale_sold_out'::text, NULL::text, NULL::text, NULL::text, NULL::int, jsonb_build_object('available', greatest(left_, 0));
      RETURN;
    END IF;
  END IF;
  IF kind = 'buy' THEN
    INSERT INTO sale_orders (id, sale_id, customer, quantity) VALUES (p_new_id, p_sale, p_customer, p_quantity);
    -- The counters go through sale_counts_add (written at once, or once at the end of a group);
    -- s is the locked row with every earlier step's counts, so it is the row as updated.
    PERFORM sale_counts_add(p_sale, p_quantity, 0);
    s.sold := s.sold + p_quantity;
    IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
      INSERT INTO outbox (type, idempotency_key, sale, payload)
      VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
      ON CONFLICT (idempotency_key) DO NOTHING;
    END IF;
    result_id := p_new_id;
  ELSIF own_id IS NOT NULL THEN
    UPDATE sale_holds SET quantity = p_quantity, expires_at = now() + make_interval(secs => p_ttl_ms / 1000) WHERE id = own_id;
    PERFORM sale_counts_add(p_sale, 0, p_quantity - own);
    result_id := own_id;
  ELSE
    INSERT INTO sale_holds (id, sale_id, customer, quantity, expires_at)
    VALUES (p_new_id, p_sale, p_customer, p_quantity, now() + make_interval(secs => p_ttl_ms / 1000));
    PERFORM sale_counts_add(p_sale, 0, p_quantity);
    result_id := p_new_id;
  END IF;
  IF p_key IS NOT NULL THEN
    INSERT INTO sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (p_sale, p_key, kind, p_customer, p_quantity, result_id);
  END IF;
  RETURN QUERY SELECT 'ok'::text, result_id, NULL::text, NULL::text, NULL::int, NULL::jsonb;
END
$$;
