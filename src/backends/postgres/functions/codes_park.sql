-- Trigger on codes: keeps parked_until (code_parked_until) in step with a free code's hold and
-- window, so the free index holds only codes that may be handed out now. A free code that is
-- parked or will expire needs unpark_due's upkeep: its pool is marked (pools.parking, 026) in this
-- same transaction, once — the UPDATE writes nothing when the pool is already marked.
CREATE OR REPLACE FUNCTION codes_park() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.parked_until := CASE WHEN NEW.status = 'free' THEN code_parked_until(NEW.hold_until, NEW.starts_at, NEW.expires_at) END;
  IF NEW.status = 'free' AND (NEW.parked_until IS NOT NULL OR NEW.expires_at IS NOT NULL) THEN
    UPDATE pools SET parking = true WHERE id = NEW.pool_id AND NOT parking;
  END IF;
  RETURN NEW;
END
$$;
