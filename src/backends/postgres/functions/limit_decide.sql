-- The decision of rules.ts `decide` on one state (pure; no table access). p_fresh: no state of
-- this shape (it starts afresh). Answers the decision and, when admitted, the state to store.
CREATE OR REPLACE FUNCTION limit_decide(
  p_fresh boolean, p_last double precision, p_tat double precision, p_base bigint, p_counts bigint[],
  p_clock double precision, p_kind text,
  p_interval double precision, p_tolerance double precision,
  p_width double precision, p_span integer, p_limit bigint, p_n bigint,
  OUT allowed boolean, OUT remaining bigint, OUT retry_ms bigint, OUT at_ms double precision,
  OUT new_tat double precision, OUT new_base bigint, OUT new_counts bigint[])
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_last double precision := CASE WHEN p_fresh THEN 0 ELSE p_last END;
  v_tat double precision := CASE WHEN p_fresh THEN 0 ELSE p_tat END;
  v_base bigint := CASE WHEN p_fresh THEN 0 ELSE p_base END;
  v_stored bigint[] := CASE WHEN p_fresh THEN '{}'::bigint[] ELSE p_counts END;
  v_now double precision;
  v_t double precision;
  v_over double precision;
  v_first bigint;
  v_used bigint := 0;
  v_excess bigint;
  v_freed bigint := 0;
  v_len integer;
  i integer;
  j bigint;
BEGIN
  -- the store's clock as this key has seen it: never earlier than an admission already made
  v_now := greatest(p_clock, v_last);
  at_ms := v_now;
  retry_ms := 0;
  IF p_kind = 'gcra' THEN
    v_t := greatest(v_tat, v_now);
    new_tat := v_t + p_n * p_interval;
    v_over := new_tat - v_now - p_tolerance;
    IF v_over > 0 THEN
      allowed := false;
      remaining := greatest(0, floor((p_tolerance - (v_t - v_now)) / p_interval + 1e-9))::bigint;
      retry_ms := ceil(v_over)::bigint;
      RETURN;
    END IF;
    allowed := true;
    remaining := floor((p_tolerance - (new_tat - v_now)) / p_interval + 1e-9)::bigint;
    new_base := 0;
    new_counts := '{}';
    RETURN;
  END IF;

  v_first := floor(v_now / p_width)::bigint - p_span;
  new_counts := array_fill(0::bigint, ARRAY[p_span + 1]);
  v_len := coalesce(array_length(v_stored, 1), 0);
  FOR i IN 1 .. p_span + 1 LOOP
    j := v_first + (i - 1) - v_base;
    IF j >= 0 AND j < v_len THEN
      new_counts[i] := v_stored[j + 1];
    END IF;
    v_used := v_used + new_counts[i];
  END LOOP;
  IF v_used + p_n > p_limit THEN
    -- the wait: until the oldest buckets holding the excess have left the window
    v_excess := v_used + p_n - p_limit;
    i := 1;
    LOOP
      v_freed := v_freed + new_counts[i];
      EXIT WHEN v_freed >= v_excess OR i >= p_span + 1;
      i := i + 1;
    END LOOP;
    allowed := false;
    remaining := greatest(0, p_limit - v_used);
    retry_ms := greatest(1, ceil((v_first + i + p_span) * p_width - v_now))::bigint;
    RETURN;
  END IF;
  new_counts[p_span + 1] := new_counts[p_span + 1] + p_n;
  allowed := true;
  remaining := p_limit - v_used - p_n;
  new_tat := 0;
  new_base := v_first;
END
$$;
