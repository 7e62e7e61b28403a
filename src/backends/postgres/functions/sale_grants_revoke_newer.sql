-- The same, locking the sale row first (the ledger path found everything granted). → units returned
CREATE OR REPLACE FUNCTION sale_grants_revoke_newer(p_sale text, p_newest bigint) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN sale_grants_revoke_newer_locked(p_sale, p_newest);
END
$$;
