-- Revokes the sale's open grants made after p_newest; the sale row must be locked by the caller.
-- → units returned
-- Why: when Redis' state rolls back (failover to a lagging replica, restore of an older RDB), it
-- names an older grant than the ledger's newest open one. That newer grant is sold from by no
-- Redis state, yet its unused units count against the cap as escrow: buyers would hear sold_out
-- while units remained, until the grant expired. Redis' state keeps `gen`, the newest grant it was
-- given (grant ids only grow); the fast path passes it when it asks for a refill and when the
-- ledger path finds everything granted, and the ledger revokes every open grant newer than it.
-- Lock order as everywhere: the sale row first, then its grants.
CREATE OR REPLACE FUNCTION sale_grants_revoke_newer_locked(p_sale text, p_newest bigint) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  units integer;
BEGIN
  WITH revoked AS (
    UPDATE sale_grants SET revoked_at = now()
    WHERE sale_id = p_sale AND revoked_at IS NULL AND id > p_newest
    RETURNING size - used AS unused
  )
  SELECT COALESCE(sum(unused), 0)::int INTO units FROM revoked;
  IF units > 0 THEN
    UPDATE sales SET escrow = escrow - units WHERE id = p_sale;
  END IF;
  RETURN units;
END
$$;
