-- A fast-path order: Redis decided this buyer wins a unit of grant p_grant; the ledger records the
-- order only if the grant is still open and has the units, and judges the window, the per-customer
-- limit, the waiting room and the idempotency key again, under the sale row lock. Outcomes:
-- not_found | replay (key_*) | revoked (the grant is gone: use the ledger path) | ok (result_id =
-- the new order) | a refusal's reason id from core/refusals.ts with its context in ctx:
-- sale_not_live (status) | sale_ticket_required (a waiting room: only admitted tickets buy) |
-- sale_limit (units, quantity, limit). The opening is sale_take_open, shared with sale_take.
-- The form with one column per context field (before ctx) goes: result columns cannot be replaced in place.
DROP FUNCTION IF EXISTS sale_take_granted(text, bigint, text, integer, text, text);
CREATE OR REPLACE FUNCTION sale_take_granted(p_sale text, p_grant bigint, p_customer text, p_quantity integer, p_key text, p_new_id text)
RETURNS TABLE (outcome text, result_id text, key_kind text, key_customer text, key_quantity integer, ctx jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  o record;
  ordered integer;
  own integer;
BEGIN
  -- A room enabled while a grant was out: the grant's units sell only through tickets now.
  SELECT * INTO o FROM sale_take_open(p_sale, p_customer, p_key, false);
  IF o.o_outcome IS NOT NULL THEN
    RETURN QUERY SELECT o.o_outcome, (o.o_key).result_id, (o.o_key).kind, (o.o_key).customer, (o.o_key).quantity, o.o_ctx;
    RETURN;
  END IF;
  s := o.o_sale;
  ordered := o.o_ordered;
  SELECT COALESCE(sum(quantity), 0) INTO own FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  IF ordered + own + p_quantity > s.per_customer_limit THEN
    RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text, NULL::text, NULL::int,
      jsonb_build_object('units', ordered + own, 'quantity', p_quantity, 'limit', s.per_customer_limit);
    RETURN;
  END IF;
  UPDATE sale_grants SET used = used + p_quantity
  WHERE id = p_grant AND sale_id = p_sale AND revoked_at IS NULL AND used + p_quantity <= size;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'revoked'::text, NULL::text, NULL::text, NULL::text, NULL::int, NULL::jsonb;
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
  RETURN QUERY SELECT 'ok'::text, p_new_id, NULL::text, NULL::text, NULL::int, NULL::jsonb;
END
$$;
