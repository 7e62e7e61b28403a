-- A new grant of up to p_size units for the fast path, valid p_ttl_ms. First expires stale holds
-- and revokes the sale's expired grants (all open grants with p_revoke_all: Redis lost them; open
-- grants newer than p_newest, the newest grant Redis' state knows: Redis rolled back past them).
-- Outcomes: not_found | not_live (status) | ledger_only (unlimited sale or waiting room: the ledger
-- sells it) | empty (nothing left to grant; escrow = units still granted elsewhere) | ok (grant_id, size).
-- The 4-argument form (before p_newest) goes: with it beside this one, a 4-argument call would be ambiguous.
DROP FUNCTION IF EXISTS sale_grant(text, integer, double precision, boolean);
CREATE OR REPLACE FUNCTION sale_grant(p_sale text, p_size integer, p_ttl_ms double precision, p_revoke_all boolean, p_newest bigint DEFAULT NULL)
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
  IF p_newest IS NOT NULL THEN
    PERFORM sale_grants_revoke_newer_locked(p_sale, p_newest);
  END IF;
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
