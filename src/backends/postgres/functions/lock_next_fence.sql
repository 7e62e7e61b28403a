-- The next fence of `p_key`, stored back. The caller holds the key's lock_fences row lock; `p_now`
-- is the clock it judged the grant by (clock_timestamp() read after that lock).
-- Fences only grow, also across lost data. With fences of `last + 1`, a failover to an
-- asynchronous standby that had not received the last grants (or a restore from a backup) would
-- restart lock_fences below fences already handed out, and the next holder would receive a fence
-- an earlier holder still carries. So the next fence is max(last + 1, the server's clock in
-- microseconds since 1970): the clock has moved on since the lost grants, so a fence row that lost
-- its history still starts above them, and a clock that steps back never makes fences go back or
-- repeat (last + 1). ~1.8e15 < 2^53: exact as a JavaScript number.
CREATE OR REPLACE FUNCTION lock_next_fence(p_key text, p_now timestamptz)
RETURNS bigint
LANGUAGE sql AS $$
  UPDATE lock_fences AS f
  SET fence = greatest(f.fence + 1, floor(extract(epoch FROM p_now) * 1000000)::bigint)
  WHERE f.key = p_key
  RETURNING f.fence
$$;
