-- Where now() falls in a pool's validity window ('open' | 'not_yet_valid' | 'expired'): one rule
-- for the claim statements (claim.sql); the same as core/window.ts windowState.
CREATE OR REPLACE FUNCTION pool_window_state(p_starts timestamptz, p_expires timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN p_starts IS NOT NULL AND now() < p_starts THEN 'not_yet_valid'
    WHEN p_expires IS NOT NULL AND now() >= p_expires THEN 'expired'
    ELSE 'open'
  END
$$;
