-- Rate limits and quotas shared by every instance (issue 27).
-- limit_take is a line-by-line port of src/core/limits/rules.ts `decide`: one call = one atomic
-- step under the (name, key) row lock, judged by the server's clock read AFTER that lock
-- (clock_timestamp()), never the caller's. Times are Unix milliseconds (double precision).

CREATE TABLE limit_definitions (
  name text PRIMARY KEY,
  definition jsonb NOT NULL
);

-- One row per (limit, key): GCRA's theoretical arrival time, or a window's bucket counts
-- (counts[1] belongs to bucket `base`). `last_ms`: the latest clock an admission was judged at,
-- so time never goes back for a key (a clock step, a failover to a standby with another clock).
CREATE TABLE limit_state (
  name text NOT NULL,
  key text NOT NULL,
  shape text NOT NULL,
  last_ms double precision NOT NULL,
  tat_ms double precision NOT NULL,
  base bigint NOT NULL,
  counts bigint[] NOT NULL,
  idle_at_ms double precision NOT NULL,
  PRIMARY KEY (name, key)
);

CREATE INDEX limit_state_idle ON limit_state (idle_at_ms);

CREATE FUNCTION limit_take(
  p_name text, p_key text, p_kind text, p_shape text,
  p_interval double precision, p_tolerance double precision,
  p_width double precision, p_span integer, p_limit bigint,
  p_idle_ms double precision, p_n bigint)
RETURNS TABLE (allowed boolean, remaining bigint, retry_ms bigint, at_ms double precision)
LANGUAGE plpgsql AS $$
DECLARE
  s limit_state%ROWTYPE;
  v_now double precision;
  v_tat double precision;
  v_new double precision;
  v_over double precision;
  v_first bigint;
  v_counts bigint[];
  v_used bigint := 0;
  v_excess bigint;
  v_freed bigint := 0;
  v_len integer;
  i integer;
  j bigint;
BEGIN
  SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO limit_state AS t (name, key, shape, last_ms, tat_ms, base, counts, idle_at_ms)
    VALUES (p_name, p_key, '', 0, 0, 0, '{}', extract(epoch FROM clock_timestamp()) * 1000 + p_idle_ms)
    ON CONFLICT (name, key) DO NOTHING;
    SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  END IF;
  IF s.shape <> p_shape THEN
    s.last_ms := 0; s.tat_ms := 0; s.base := 0; s.counts := '{}';
  END IF;
  v_now := greatest((extract(epoch FROM clock_timestamp()) * 1000)::double precision, s.last_ms);

  IF p_kind = 'gcra' THEN
    v_tat := greatest(s.tat_ms, v_now);
    v_new := v_tat + p_n * p_interval;
    v_over := v_new - v_now - p_tolerance;
    IF v_over > 0 THEN
      RETURN QUERY SELECT false, greatest(0, floor((p_tolerance - (v_tat - v_now)) / p_interval + 1e-9))::bigint, ceil(v_over)::bigint, v_now;
      RETURN;
    END IF;
    UPDATE limit_state AS t SET shape = p_shape, last_ms = v_now, tat_ms = v_new, base = 0, counts = '{}', idle_at_ms = v_now + p_idle_ms
    WHERE t.name = p_name AND t.key = p_key;
    RETURN QUERY SELECT true, floor((p_tolerance - (v_new - v_now)) / p_interval + 1e-9)::bigint, 0::bigint, v_now;
    RETURN;
  END IF;

  v_first := floor(v_now / p_width)::bigint - p_span;
  v_counts := array_fill(0::bigint, ARRAY[p_span + 1]);
  v_len := coalesce(array_length(s.counts, 1), 0);
  FOR i IN 1 .. p_span + 1 LOOP
    j := v_first + (i - 1) - s.base;
    IF j >= 0 AND j < v_len THEN
      v_counts[i] := s.counts[j + 1];
    END IF;
    v_used := v_used + v_counts[i];
  END LOOP;
  IF v_used + p_n > p_limit THEN
    v_excess := v_used + p_n - p_limit;
    i := 1;
    LOOP
      v_freed := v_freed + v_counts[i];
      EXIT WHEN v_freed >= v_excess OR i >= p_span + 1;
      i := i + 1;
    END LOOP;
    RETURN QUERY SELECT false, greatest(0, p_limit - v_used)::bigint,
      greatest(1, ceil((v_first + i + p_span) * p_width - v_now))::bigint, v_now;
    RETURN;
  END IF;
  v_counts[p_span + 1] := v_counts[p_span + 1] + p_n;
  UPDATE limit_state AS t SET shape = p_shape, last_ms = v_now, tat_ms = 0, base = v_first, counts = v_counts, idle_at_ms = v_now + p_idle_ms
  WHERE t.name = p_name AND t.key = p_key;
  RETURN QUERY SELECT true, (p_limit - v_used - p_n)::bigint, 0::bigint, v_now;
END
$$;
