-- Confirming a hold as one step. Outcomes: not_found | replay (result_id = its order) | ok
-- (result_id = the new order) | a refusal's reason id from core/refusals.ts with its context in ctx:
-- hold_cancelled | hold_in_cart (cart: its lines are confirmed with it) | hold_expired (expiresAt) |
-- sale_not_live (sale, status 'cancelled').
-- The hold's units move from held to sold, so sold + held is unchanged and the cap still holds.
-- ok also answers the new order's customer and quantity (its created_at is the transaction's now()),
-- so a grouped confirmation is answered without reading the order back; other outcomes leave them null.
-- Result columns cannot be replaced in place: the earlier forms go first.
DROP FUNCTION IF EXISTS sale_confirm(text, text);
CREATE OR REPLACE FUNCTION sale_confirm(p_hold text, p_order_id text)
RETURNS TABLE (outcome text, result_id text, ctx jsonb, order_customer text, order_quantity integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  h sale_holds%ROWTYPE;
  s sales%ROWTYPE;
BEGIN
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::jsonb, NULL::text, NULL::integer;
    RETURN;
  END IF;
  -- A hold's sale never changes: lock it, then look at the hold as it is now.
  SELECT * INTO s FROM sales WHERE id = h.sale_id FOR UPDATE;
  -- Inside a group (sale_step_group) the counters its earlier steps added are not written yet.
  IF current_setting('dibs.sale_defer', true) = h.sale_id THEN
    s.sold := s.sold + current_setting('dibs.sale_d_sold')::integer;
    s.held := s.held + current_setting('dibs.sale_d_held')::integer;
  END IF;
  PERFORM sale_expire_stale(h.sale_id);
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF h.status = 'confirmed' THEN
    RETURN QUERY SELECT 'replay'::text, o.id, NULL::jsonb, NULL::text, NULL::integer FROM sale_orders o WHERE o.hold_id = p_hold;
    RETURN;
  ELSIF h.status = 'cancelled' THEN
    RETURN QUERY SELECT 'hold_cancelled'::text, NULL::text, NULL::jsonb, NULL::text, NULL::integer;
    RETURN;
  ELSIF h.cart_id IS NOT NULL THEN
    RETURN QUERY SELECT 'hold_in_cart'::text, NULL::text, jsonb_build_object('cart', h.cart_id), NULL::text, NULL::integer;
    RETURN;
  ELSIF h.status = 'expired' THEN
    RETURN QUERY SELECT 'hold_expired'::text, NULL::text, jsonb_build_object('expiresAt', iso_utc(h.expires_at)), NULL::text, NULL::integer;
    RETURN;
  ELSIF s.cancelled_at IS NOT NULL THEN
    RETURN QUERY SELECT 'sale_not_live'::text, NULL::text, jsonb_build_object('sale', h.sale_id, 'status', 'cancelled'), NULL::text, NULL::integer;
    RETURN;
  END IF;
  INSERT INTO sale_orders (id, sale_id, customer, quantity, hold_id) VALUES (p_order_id, h.sale_id, h.customer, h.quantity, p_hold);
  UPDATE sale_holds SET status = 'confirmed', order_id = p_order_id WHERE id = p_hold;
  -- Written at once, or once at the end of a group (sale_counts_add). Only s.sold is read below
  -- (s.held would still count holds sale_expire_stale just took off).
  PERFORM sale_counts_add(h.sale_id, h.quantity, -h.quantity);
  s.sold := s.sold + h.quantity;
  IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
    ON CONFLICT (idempotency_key) DO NOTHING;
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_order_id, NULL::jsonb, h.customer, h.quantity;
END
$$;
