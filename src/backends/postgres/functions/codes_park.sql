-- Trigger on codes: keeps parked_until (code_parked_until) in step with a free code's hold and
-- window, so the free index holds only codes that may be handed out now.
CREATE OR REPLACE FUNCTION codes_park() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.parked_until := CASE WHEN NEW.status = 'free' THEN code_parked_until(NEW.hold_until, NEW.starts_at, NEW.expires_at) END;
  RETURN NEW;
END
$$;
