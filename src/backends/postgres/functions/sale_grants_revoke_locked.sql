-- Revokes the sale's open grants — all of them (p_all) or only those past their expiry — and
-- gives their unused units back. The sale row must be locked by the caller. → units returned
CREATE OR REPLACE FUNCTION sale_grants_revoke_locked(p_sale text, p_all boolean) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  units integer;
BEGIN
  WITH revoked AS (
    UPDATE sale_grants SET revoked_at = now()
    WHERE sale_id = p_sale AND revoked_at IS NULL AND (p_all OR expires_at <= now())
    RETURNING size - used AS unused
  )
  SELECT COALESCE(sum(unused), 0)::int INTO units FROM revoked;
  IF units > 0 THEN
    UPDATE sales SET escrow = escrow - units WHERE id = p_sale;
  END IF;
  RETURN units;
END
$$;
