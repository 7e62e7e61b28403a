-- Whether a free code may be handed out now: no live hold, inside its own window. One rule for
-- claim.sql and claim-fast.sql (inlined by the planner: a SQL function).
CREATE OR REPLACE FUNCTION code_open(p_hold_until timestamptz, p_starts timestamptz, p_expires timestamptz) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT (p_hold_until IS NULL OR p_hold_until <= now())
     AND (p_starts IS NULL OR p_starts <= now())
     AND (p_expires IS NULL OR p_expires > now())
$$;
