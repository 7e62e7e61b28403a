-- The steps of one sale's group (sale-group.sql stepGroup), in request order: a row with a hold
-- (p_holds[i] not null) is a confirmation (sale_confirm), any other a buy or reservation
-- (sale_take), each judged on the state the steps before it left. The sale's sold/held counters
-- are added up while the steps run (sale_counts_add) and written by ONE update at the end, not
-- once per step. A sale_take or sale_confirm of an earlier build updates the row itself and
-- adds nothing up, so the final update then adds nothing.
-- → one row per request: i (1-based), sale_take's columns (a confirmation's key_* are null), a new
-- confirmation order's customer and quantity, `at` = now() and `expires_at` = the expiry a new or
-- replaced hold got (the same expression as in sale_take).
CREATE OR REPLACE FUNCTION sale_step_group(
  p_sale text, p_customers text[], p_quantities integer[], p_keys text[], p_new_ids text[],
  p_ttls double precision[], p_holds text[])
RETURNS TABLE (i bigint, outcome text, result_id text, key_kind text, key_customer text, key_quantity integer,
  ctx jsonb, order_customer text, order_quantity integer, at timestamptz, expires_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  d_sold integer;
  d_held integer;
BEGIN
  PERFORM set_config('dibs.sale_defer', p_sale, true), set_config('dibs.sale_d_sold', '0', true),
          set_config('dibs.sale_d_held', '0', true);
  -- One query over the requests, as the statement was before this function (the same LATERAL
  -- calls, in request order): a loop of one RETURN QUERY per request cost more per step.
  RETURN QUERY
  SELECT r.i, t.*, now(), now() + make_interval(secs => r.ttl_ms / 1000)
  FROM unnest(p_customers, p_quantities, p_keys, p_new_ids, p_ttls, p_holds) WITH ORDINALITY AS r (customer, quantity, key, new_id, ttl_ms, hold, i)
  CROSS JOIN LATERAL (
    SELECT k.outcome, k.result_id, k.key_kind, k.key_customer, k.key_quantity, k.ctx, NULL::text AS order_customer, NULL::int AS order_quantity
    FROM sale_take(p_sale, r.customer, r.quantity, r.key, r.new_id, r.ttl_ms, false) AS k
    WHERE r.hold IS NULL
    UNION ALL
    SELECT c.outcome, c.result_id, NULL::text, NULL::text, NULL::int, c.ctx, c.order_customer, c.order_quantity
    FROM sale_confirm(r.hold, r.new_id) AS c
    WHERE r.hold IS NOT NULL
  ) AS t;
  d_sold := current_setting('dibs.sale_d_sold')::integer;
  d_held := current_setting('dibs.sale_d_held')::integer;
  PERFORM set_config('dibs.sale_defer', '', true);
  IF d_sold <> 0 OR d_held <> 0 THEN
    UPDATE sales SET sold = sold + d_sold, held = held + d_held WHERE id = p_sale;
  END IF;
END
$$;
