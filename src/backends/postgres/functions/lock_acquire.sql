-- Grants a slot of `p_key` to `p_token` when fewer than `p_limit` live holders remain.
-- One call = one atomic step: lock the key's fence row, sweep lapsed holders, count, take the next
-- fence (lock_next_fence), insert the holder. Returns no row when every slot is taken.
-- plpgsql on purpose: in READ COMMITTED each statement of the function takes a fresh snapshot,
-- so the count sees the holder a concurrent release just removed (a single CTE statement would
-- count with the snapshot taken before it waited for the row lock).
CREATE OR REPLACE FUNCTION lock_acquire(p_key text, p_token text, p_limit integer, p_ttl_ms integer)
RETURNS TABLE (fence bigint, expires_at timestamptz, valid_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_fence bigint;
  v_expires timestamptz;
  v_live integer;
BEGIN
  -- Cheap refusal first: a plain read takes no row lock and no transaction id, so a waiter that
  -- finds every slot live costs no WAL and no commit flush. The locked path below re-checks.
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at > clock_timestamp();
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO lock_fences AS f (key, fence) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  END IF;
  v_now := clock_timestamp();
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at <= v_now;
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  v_fence := lock_next_fence(p_key, v_now);
  v_expires := v_now + make_interval(secs => p_ttl_ms / 1000.0);
  INSERT INTO lock_holders (key, token, fence, expires_at) VALUES (p_key, p_token, v_fence, v_expires);
  -- Validity measured after the write, on the same clock: never stale on return.
  RETURN QUERY SELECT v_fence, v_expires, (extract(epoch FROM v_expires - clock_timestamp()) * 1000)::double precision;
END
$$;
