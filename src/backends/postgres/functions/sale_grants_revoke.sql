-- Revokes every open grant of a sale (reconciliation after Redis lost its data or went away).
-- → units returned to the ungranted capacity
CREATE OR REPLACE FUNCTION sale_grants_revoke(p_sale text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN sale_grants_revoke_locked(p_sale, true);
END
$$;
