-- Closes a grant the fast path stopped selling from, returning the p_unused units Redis had not
-- sold (never more than the grant has unused). Units already decided in Redis stay in the grant
-- for their ledger writes. → units returned
CREATE OR REPLACE FUNCTION sale_grant_close(p_grant bigint, p_unused integer) RETURNS integer LANGUAGE plpgsql AS $$
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
