-- When a free code that cannot be handed out now may be (NULL: it may be now). Mirrors
-- parked_until in the Redis backend's lib.lua.
CREATE OR REPLACE FUNCTION code_parked_until(p_hold_until timestamptz, p_starts timestamptz, p_expires timestamptz) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN p_expires IS NOT NULL AND p_expires <= now() THEN 'infinity'::timestamptz
    WHEN p_hold_until > now() OR p_starts > now() THEN greatest(p_hold_until, p_starts)
  END
$$;
