-- The locked part of every grant of `p_key` (lock_acquire, lock_acquire_fair): takes the key's
-- fence row lock — creating the row on the key's first use — which serialises grants of the key,
-- then sweeps the holders that lapsed by the clock read after that lock, and returns that clock:
-- the caller judges and grants by it (lock_grant). The caller runs in plpgsql, so its next
-- statement takes a fresh snapshot and sees every holder committed before the lock was granted.
CREATE OR REPLACE FUNCTION lock_enter(p_key text)
RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz;
BEGIN
  PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO lock_fences AS f (key, fence) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  END IF;
  v_now := clock_timestamp();
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at <= v_now;
  RETURN v_now;
END
$$;
