-- The claim statements' upkeep, one bounded batch each way (at most 200 rows): parked codes that
-- are due go back to the free index, unparked codes that expired leave it. Rows another claim is
-- already moving are skipped (SKIP LOCKED), so concurrent claims never move a row twice or wait;
-- moving a row changes no counter, so a row moved by either is the same. Called from the claim
-- statements' first CTE: a VOLATILE function runs with its own snapshot, so what it unparks is
-- claimable from the next statement on (a claim that found nothing but due codes answers busy and
-- retries — see free_seen in claim.sql).
CREATE OR REPLACE FUNCTION unpark_due(p_pool bigint) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  due CURSOR FOR SELECT 1 FROM codes WHERE pool_id = p_pool AND parked_until IS NOT NULL AND parked_until <= now()
                 ORDER BY parked_until LIMIT 200 FOR UPDATE SKIP LOCKED;
  expired CURSOR FOR SELECT 1 FROM codes WHERE pool_id = p_pool AND status = 'free' AND parked_until IS NULL
                     AND expires_at IS NOT NULL AND expires_at <= now() LIMIT 200 FOR UPDATE SKIP LOCKED;
  v_moved integer := 0;
BEGIN
  -- plpgsql, not sql: its plans are cached per session, and this runs in every claim. Each row is
  -- updated through its cursor (WHERE CURRENT OF), never by a join back to codes: a join's plan
  -- cached while the table was small (a seq scan) would stay slow once the table has grown.
  FOR r IN due LOOP
    UPDATE codes SET parked_until = NULL WHERE CURRENT OF due;
    v_moved := v_moved + 1;
  END LOOP;
  FOR r IN expired LOOP
    UPDATE codes SET parked_until = 'infinity' WHERE CURRENT OF expired;
    v_moved := v_moved + 1;
  END LOOP;
  RETURN v_moved;
END
$$;
