-- Trigger on codes: keeps parked_until (code_parked_until) in step with a free code's hold and
-- window, so the free index holds only codes that may be handed out now. A free code that is
-- parked or will expire needs unpark_due's upkeep: its pool leaves pools_never_parked (026) in
-- this same transaction — a delete that finds nothing, and locks nothing, once it has.
CREATE OR REPLACE FUNCTION codes_park() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.parked_until := CASE WHEN NEW.status = 'free' THEN code_parked_until(NEW.hold_until, NEW.starts_at, NEW.expires_at) END;
  IF NEW.status = 'free' AND (NEW.parked_until IS NOT NULL OR NEW.expires_at IS NOT NULL) THEN
    DELETE FROM pools_never_parked WHERE pool_id = NEW.pool_id;
  END IF;
  RETURN NEW;
END
$$;
