-- Confirms every line of a cart as one step: the cart row is locked, then its sales in id order.
-- p_order_ids: one new order id per line, in line order. Outcomes: not_found | replay | ok | a
-- refusal's reason id from core/refusals.ts with its context in ctx: cart_cancelled | cart_expired
-- (expiresAt) | cart_line_cancelled (sale: the sale whose hold was cancelled with it). Each line's
-- units move from held to sold, so sold + held is unchanged on every sale.
-- The form with result_id and expires_at (before ctx) goes: result columns cannot be replaced in place.
DROP FUNCTION IF EXISTS cart_confirm(text, text[]);
CREATE OR REPLACE FUNCTION cart_confirm(p_cart text, p_order_ids text[])
RETURNS TABLE (outcome text, ctx jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  h sale_holds%ROWTYPE;
  s sales%ROWTYPE;
BEGIN
  SELECT * INTO c FROM carts WHERE id = p_cart FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::jsonb;
    RETURN;
  ELSIF c.status = 'confirmed' THEN
    RETURN QUERY SELECT 'replay'::text, NULL::jsonb;
    RETURN;
  ELSIF c.status = 'cancelled' THEN
    RETURN QUERY SELECT 'cart_cancelled'::text, NULL::jsonb;
    RETURN;
  ELSIF c.expires_at <= now() THEN
    RETURN QUERY SELECT 'cart_expired'::text, jsonb_build_object('expiresAt', iso_utc(c.expires_at));
    RETURN;
  END IF;
  PERFORM 1 FROM sales WHERE id IN (SELECT sale_id FROM sale_holds WHERE cart_id = p_cart) ORDER BY id FOR UPDATE;
  -- Unexpired, so no line is stale; a line that is not active was cancelled with its sale.
  SELECT * INTO h FROM sale_holds WHERE cart_id = p_cart AND status <> 'active' ORDER BY cart_line LIMIT 1;
  IF FOUND THEN
    RETURN QUERY SELECT 'cart_line_cancelled'::text, jsonb_build_object('sale', h.sale_id);
    RETURN;
  END IF;
  FOR h IN SELECT * FROM sale_holds WHERE cart_id = p_cart ORDER BY cart_line LOOP
    INSERT INTO sale_orders (id, sale_id, customer, quantity, hold_id)
    VALUES (p_order_ids[h.cart_line + 1], h.sale_id, h.customer, h.quantity, h.id);
    UPDATE sale_holds SET status = 'confirmed', order_id = p_order_ids[h.cart_line + 1] WHERE id = h.id;
    UPDATE sales SET sold = sold + h.quantity, held = held - h.quantity WHERE id = h.sale_id RETURNING * INTO s;
    IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
      INSERT INTO outbox (type, idempotency_key, sale, payload)
      VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
      ON CONFLICT (idempotency_key) DO NOTHING;
    END IF;
  END LOOP;
  UPDATE carts SET status = 'confirmed' WHERE id = p_cart;
  RETURN QUERY SELECT 'ok'::text, NULL::jsonb;
END
$$;
