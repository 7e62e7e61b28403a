-- Records `p_token` as a holder of `p_key` for `p_ttl_ms` from `p_now` with the key's next fence
-- (lock_next_fence), and answers the grant. The caller holds the key's fence row lock and judged
-- the grant by `p_now` (lock_enter). The validity is measured after the write, on the same clock:
-- never stale on return.
CREATE OR REPLACE FUNCTION lock_grant(p_key text, p_token text, p_ttl_ms integer, p_now timestamptz)
RETURNS TABLE (fence bigint, expires_at timestamptz, valid_ms double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_fence bigint;
  v_expires timestamptz;
BEGIN
  v_fence := lock_next_fence(p_key, p_now);
  v_expires := p_now + make_interval(secs => p_ttl_ms / 1000.0);
  INSERT INTO lock_holders (key, token, fence, expires_at) VALUES (p_key, p_token, v_fence, v_expires);
  RETURN QUERY SELECT v_fence, v_expires, (extract(epoch FROM v_expires - clock_timestamp()) * 1000)::double precision;
END
$$;
