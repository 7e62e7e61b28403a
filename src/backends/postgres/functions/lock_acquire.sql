-- Grants a slot of `p_key` to `p_token` when fewer than `p_limit` live holders remain.
-- One call = one atomic step: lock the key's fence row and sweep lapsed holders (lock_enter), count,
-- grant with the next fence (lock_grant). Returns no row when every slot is taken.
-- plpgsql on purpose: in READ COMMITTED each statement of the function takes a fresh snapshot,
-- so the count sees the holder a concurrent release just removed (a single CTE statement would
-- count with the snapshot taken before it waited for the row lock).
CREATE OR REPLACE FUNCTION lock_acquire(p_key text, p_token text, p_limit integer, p_ttl_ms integer)
RETURNS TABLE (fence bigint, expires_at timestamptz, valid_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_live integer;
BEGIN
  -- Cheap refusal first: a plain read takes no row lock and no transaction id, so a waiter that
  -- finds every slot live costs no WAL and no commit flush. The locked path below re-checks.
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at > clock_timestamp();
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  v_now := lock_enter(p_key);
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM lock_grant(p_key, p_token, p_ttl_ms, v_now);
END
$$;
