-- Fair (FIFO across instances) grants. The line of a key is the live holders of a companion key
-- (`<key>\x1fline`) in lock_holders: a waiter's ticket is a lease taken there with lock_acquire,
-- so its number is that key's fence — the server's own per-key sequence — and it lapses if its
-- waiter stops renewing it (died).
-- Grants a slot of `p_key` to `p_token` only if live holders + live tickets of `p_queue` ahead of
-- `p_ticket` (smaller number) < `p_limit`, and removes `p_ticket` from the line in the same step.
-- `p_ticket` NULL (tryAcquire, a first attempt): every live ticket is ahead. A lapsed `p_ticket`
-- gets no grant (its waiter takes a new one). Same locking as lock_acquire: the key's fence row
-- lock serialises grants; plpgsql so each statement sees a fresh snapshot after it. A ticket
-- with a smaller number always committed before any larger one was handed out (tickets are issued
-- under the line's own fence row lock), so the count below never misses one ahead. The locking,
-- sweep and grant are lock_acquire's own (lock_enter, lock_grant).
CREATE OR REPLACE FUNCTION lock_acquire_fair(p_key text, p_token text, p_limit integer, p_ttl_ms integer, p_queue text, p_ticket text)
RETURNS TABLE (fence bigint, expires_at timestamptz, valid_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
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
  v_now := lock_enter(p_key);
  IF p_ticket IS NOT NULL THEN
    SELECT h.fence INTO v_mine FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket AND h.expires_at > v_now;
    IF NOT FOUND THEN
      RETURN;
    END IF;
  END IF;
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  SELECT count(*) INTO v_ahead FROM lock_holders AS h WHERE h.key = p_queue AND h.expires_at > v_now AND h.fence < v_mine;
  IF v_live + v_ahead >= p_limit THEN
    RETURN;
  END IF;
  IF p_ticket IS NOT NULL THEN
    DELETE FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket;
  END IF;
  RETURN QUERY SELECT * FROM lock_grant(p_key, p_token, p_ttl_ms, v_now);
END
$$;
