-- Parked codes: a claim's cost must not grow with the number of free codes it cannot hand out.
-- Before this, claims found free codes through codes_free and filtered them with code_open, so
-- every code on hold or outside its own window was walked past by every claim (a pool loaded with
-- next month's codes made each claim scan all of them). Now such a code is *parked*:
-- - parked_until is when a free code may be handed out again (its hold's end or its window's
--   start, whichever is later; 'infinity' once it has expired: it never comes back by itself);
--   NULL for every code that is not free, and for free codes that may be claimable now;
-- - claims look only at unparked free codes (codes_free_open), and each claim first brings back a
--   bounded batch of parked codes that are due and parks a bounded batch of codes that expired
--   while unparked (unpark_due, below) — through indexes on those times, so no timer is needed
--   and the work is paid once per code, not once per claim;
-- - a trigger parks or unparks a free code whenever what decides it changes (import with a
--   window, hold, hold release, setCodeWindow, release back to free), so no statement has to
--   remember to.
-- A parked code is still free: counts, low stock, export and the audit are unchanged.
ALTER TABLE codes
  ADD COLUMN parked_until timestamptz,
  ADD CONSTRAINT codes_parked_free CHECK (parked_until IS NULL OR status = 'free');

-- When a free code that cannot be handed out now may be (NULL: it may be now). Mirrors
-- parked_until in the Redis backend's lib.lua.
CREATE FUNCTION code_parked_until(p_hold_until timestamptz, p_starts timestamptz, p_expires timestamptz) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN p_expires IS NOT NULL AND p_expires <= now() THEN 'infinity'::timestamptz
    WHEN p_hold_until > now() OR p_starts > now() THEN greatest(p_hold_until, p_starts)
  END
$$;

CREATE FUNCTION codes_park() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.parked_until := CASE WHEN NEW.status = 'free' THEN code_parked_until(NEW.hold_until, NEW.starts_at, NEW.expires_at) END;
  RETURN NEW;
END
$$;

-- Only rows whose parking can change call the function: plain imports and claims (a free,
-- unparked code becoming claimed) skip it, so the hot paths pay nothing.
CREATE TRIGGER codes_park_insert BEFORE INSERT ON codes FOR EACH ROW
  WHEN (NEW.hold_until IS NOT NULL OR NEW.starts_at IS NOT NULL OR NEW.expires_at IS NOT NULL)
  EXECUTE FUNCTION codes_park();
CREATE TRIGGER codes_park_update BEFORE UPDATE OF status, hold_until, starts_at, expires_at ON codes FOR EACH ROW
  WHEN (NEW.status = 'free' OR OLD.parked_until IS NOT NULL)
  EXECUTE FUNCTION codes_park();

DROP INDEX codes_free;
CREATE INDEX codes_free_open ON codes (pool_id, rnd) WHERE status = 'free' AND parked_until IS NULL;
-- due parked codes, oldest first ('infinity' is never due)
CREATE INDEX codes_parked ON codes (pool_id, parked_until) WHERE parked_until IS NOT NULL;
-- unparked free codes that will expire: found when they have
CREATE INDEX codes_free_expiring ON codes (pool_id, expires_at) WHERE status = 'free' AND parked_until IS NULL AND expires_at IS NOT NULL;

-- Existing pools: park the free codes that cannot be handed out now (the trigger decides).
UPDATE codes SET starts_at = starts_at
WHERE status = 'free' AND (hold_until IS NOT NULL OR starts_at IS NOT NULL OR expires_at IS NOT NULL) AND NOT code_open(hold_until, starts_at, expires_at);
