-- Fences that only grow, also across lost data.
-- With fences of `last + 1`, a failover to an asynchronous standby that had not received the
-- last grants (or a restore from a backup) restarts lock_fences below fences already handed
-- out, and the next holder receives a fence an earlier holder still carries. So the next fence
-- is max(last + 1, the server's clock in microseconds since 1970): the clock has moved on since
-- the lost grants, so a fence row that lost its history still starts above them, and a clock that
-- steps back never makes fences go back or repeat (last + 1). ~1.8e15 < 2^53: exact as a
-- JavaScript number. Only the fence line of the two grant functions changes.

-- The next fence of `p_key`, stored back. The caller holds the key's lock_fences row lock; `p_now`
-- is the clock it judged the grant by (clock_timestamp() read after that lock).
CREATE FUNCTION lock_next_fence(p_key text, p_now timestamptz)
RETURNS bigint
LANGUAGE sql AS $$
  UPDATE lock_fences AS f
  SET fence = greatest(f.fence + 1, floor(extract(epoch FROM p_now) * 1000000)::bigint)
  WHERE f.key = p_key
  RETURNING f.fence
$$;

-- As in 003_locks.sql, with the fence from lock_next_fence.
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

-- As in 011_fair_locks.sql, with the fence from lock_next_fence.
CREATE OR REPLACE FUNCTION lock_acquire_fair(p_key text, p_token text, p_limit integer, p_ttl_ms integer, p_queue text, p_ticket text)
RETURNS TABLE (fence bigint, expires_at timestamptz, valid_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_fence bigint;
  v_expires timestamptz;
  v_live integer;
  v_ahead integer;
  v_mine bigint := 9223372036854775807;
BEGIN
  -- Cheap refusal first (plain reads: no row lock, no transaction id, no WAL): all slots live, or
  -- enough live tickets ahead. Waiters behind the head of the line stop here. The locked path re-checks.
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at > clock_timestamp();
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  SELECT count(*) INTO v_ahead FROM lock_holders AS h
  WHERE h.key = p_queue AND h.expires_at > clock_timestamp()
    AND h.fence < coalesce((SELECT t.fence FROM lock_holders AS t WHERE t.key = p_queue AND t.token = p_ticket), v_mine);
  IF v_live + v_ahead >= p_limit THEN
    RETURN;
  END IF;
  PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO lock_fences AS f (key, fence) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  END IF;
  v_now := clock_timestamp();
  IF p_ticket IS NOT NULL THEN
    SELECT h.fence INTO v_mine FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket AND h.expires_at > v_now;
    IF NOT FOUND THEN
      RETURN;
    END IF;
  END IF;
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at <= v_now;
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  SELECT count(*) INTO v_ahead FROM lock_holders AS h WHERE h.key = p_queue AND h.expires_at > v_now AND h.fence < v_mine;
  IF v_live + v_ahead >= p_limit THEN
    RETURN;
  END IF;
  v_fence := lock_next_fence(p_key, v_now);
  v_expires := v_now + make_interval(secs => p_ttl_ms / 1000.0);
  INSERT INTO lock_holders (key, token, fence, expires_at) VALUES (p_key, p_token, v_fence, v_expires);
  IF p_ticket IS NOT NULL THEN
    DELETE FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket;
  END IF;
  RETURN QUERY SELECT v_fence, v_expires, (extract(epoch FROM v_expires - clock_timestamp()) * 1000)::double precision;
END
$$;
