-- Releases every line of a cart as one step (cart row, then its sales in id order). Outcomes:
-- not_found | cart_confirmed (the refusal's reason id in core/refusals.ts) | ok (cancelled now, or
-- already cancelled or expired: nothing to do).
CREATE OR REPLACE FUNCTION cart_cancel(p_cart text)
RETURNS TABLE (outcome text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  h sale_holds%ROWTYPE;
BEGIN
  SELECT * INTO c FROM carts WHERE id = p_cart FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text;
    RETURN;
  ELSIF c.status = 'confirmed' THEN
    RETURN QUERY SELECT 'cart_confirmed'::text;
    RETURN;
  ELSIF c.status = 'cancelled' OR c.expires_at <= now() THEN
    RETURN QUERY SELECT 'ok'::text;
    RETURN;
  END IF;
  PERFORM 1 FROM sales WHERE id IN (SELECT sale_id FROM sale_holds WHERE cart_id = p_cart) ORDER BY id FOR UPDATE;
  FOR h IN SELECT * FROM sale_holds WHERE cart_id = p_cart AND status = 'active' LOOP
    UPDATE sale_holds SET status = 'cancelled' WHERE id = h.id;
    UPDATE sales SET held = held - h.quantity WHERE id = h.sale_id;
  END LOOP;
  UPDATE carts SET status = 'cancelled' WHERE id = p_cart;
  RETURN QUERY SELECT 'ok'::text;
END
$$;
