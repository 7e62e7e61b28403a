-- The units-sync job: revokes grants past their expiry across all sales (a process that died
-- between a Redis decision and its ledger write strands its unit at most until then). → units
CREATE OR REPLACE FUNCTION sale_grants_expire(p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  sid text;
  total integer := 0;
BEGIN
  FOR sid IN SELECT DISTINCT g.sale_id FROM (SELECT sale_id FROM sale_grants WHERE revoked_at IS NULL AND expires_at <= now() LIMIT p_limit) g ORDER BY 1 LOOP
    PERFORM 1 FROM sales WHERE id = sid FOR UPDATE;
    total := total + sale_grants_revoke_locked(sid, false);
  END LOOP;
  RETURN total;
END
$$;
