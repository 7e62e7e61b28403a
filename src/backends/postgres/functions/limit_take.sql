-- One take. A refusal is decided first on a plain read (no row lock, no transaction id, no WAL):
-- a snapshot can only miss admissions made since, so what it refuses, the current state refuses
-- too. Otherwise: lock the (name, key) row, read the clock AFTER the lock, decide again, store.
CREATE OR REPLACE FUNCTION limit_take(
  p_name text, p_key text, p_kind text, p_shape text,
  p_interval double precision, p_tolerance double precision,
  p_width double precision, p_span integer, p_limit bigint,
  p_idle_ms double precision, p_n bigint)
RETURNS TABLE (allowed boolean, remaining bigint, retry_ms bigint, at_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s limit_state%ROWTYPE;
  d record;
BEGIN
  SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key;
  IF FOUND THEN
    d := limit_decide(s.shape <> p_shape, s.last_ms, s.tat_ms, s.base, s.counts, (extract(epoch FROM clock_timestamp()) * 1000)::double precision,
                      p_kind, p_interval, p_tolerance, p_width, p_span, p_limit, p_n);
    IF NOT d.allowed THEN
      RETURN QUERY SELECT d.allowed, d.remaining, d.retry_ms, d.at_ms;
      RETURN;
    END IF;
  END IF;

  SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO limit_state AS t (name, key, shape, last_ms, tat_ms, base, counts, idle_at_ms)
    VALUES (p_name, p_key, '', 0, 0, 0, '{}', extract(epoch FROM clock_timestamp()) * 1000 + p_idle_ms)
    ON CONFLICT (name, key) DO NOTHING;
    SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  END IF;
  d := limit_decide(s.shape <> p_shape, s.last_ms, s.tat_ms, s.base, s.counts, (extract(epoch FROM clock_timestamp()) * 1000)::double precision,
                    p_kind, p_interval, p_tolerance, p_width, p_span, p_limit, p_n);
  IF d.allowed THEN
    UPDATE limit_state AS t
    SET shape = p_shape, last_ms = d.at_ms, tat_ms = d.new_tat, base = d.new_base, counts = d.new_counts, idle_at_ms = d.at_ms + p_idle_ms
    WHERE t.name = p_name AND t.key = p_key;
  END IF;
  RETURN QUERY SELECT d.allowed, d.remaining, d.retry_ms, d.at_ms;
END
$$;
