-- The opening of every take of a sale (sale_take, sale_take_granted): locks the sale row, replays a
-- known idempotency key, expires the sale's stale holds, refuses a sale that is not live or that a
-- waiting room guards (unless `p_ticket_ok`: the caller reserves through an admitted ticket), and
-- reads how many units the customer has ordered. `o_outcome` is null when the take may go on with
-- `o_sale` (locked, held net of the holds just expired); otherwise it is 'not_found', 'replay'
-- (`o_key`: the stored request) or a refusal's reason id from core/refusals.ts with its context
-- (`o_ctx`, named as the reason names it).
-- The form with o_status (before o_ctx) goes: a function's result columns cannot be replaced in place.
DROP FUNCTION IF EXISTS sale_take_open(text, text, text, boolean);
CREATE OR REPLACE FUNCTION sale_take_open(
  p_sale text, p_customer text, p_key text, p_ticket_ok boolean,
  OUT o_outcome text, OUT o_ctx jsonb, OUT o_sale sales, OUT o_key sale_keys, OUT o_ordered integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  st text;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    o_outcome := 'not_found';
    RETURN;
  END IF;
  -- Inside a group (sale_step_group) the counters its earlier steps added are not written yet.
  -- (Inline rather than a function: a composite in and out of a plpgsql call costs more.)
  IF current_setting('dibs.sale_defer', true) = p_sale THEN
    s.sold := s.sold + current_setting('dibs.sale_d_sold')::integer;
    s.held := s.held + current_setting('dibs.sale_d_held')::integer;
  END IF;
  IF p_key IS NOT NULL THEN
    SELECT * INTO o_key FROM sale_keys WHERE sale_id = p_sale AND key = p_key;
    IF FOUND THEN
      o_outcome := 'replay';
      RETURN;
    END IF;
  END IF;
  -- Holds marked active are counted in held, so with held = 0 there is nothing to expire.
  IF s.held > 0 THEN
    s.held := s.held - sale_expire_stale(p_sale);
  END IF;
  st := sale_status(s);
  IF st <> 'live' THEN
    o_outcome := 'sale_not_live';
    o_ctx := jsonb_build_object('status', st);
    RETURN;
  END IF;
  IF NOT p_ticket_ok AND EXISTS (SELECT 1 FROM waiting_rooms WHERE sale_id = p_sale) THEN
    o_outcome := 'sale_ticket_required';
    RETURN;
  END IF;
  SELECT COALESCE(sum(quantity), 0) INTO o_ordered FROM sale_orders WHERE sale_id = p_sale AND customer = p_customer;
  o_sale := s;
END
$$;
