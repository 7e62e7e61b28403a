-- Frees the live slot held by `p_token` and, in the same transaction, NOTIFYs `p_channel` with
-- the key (delivered at commit, so a woken waiter always finds the slot free). Returns whether
-- the token held a live slot (false = expired or foreign: the caller throws not_owner).
-- The commit does not wait for the WAL flush (synchronous_commit off for this transaction only):
-- a release lost in a server crash merely leaves the slot taken until its lease lapses — never
-- two holders, never a fence reused (grants and renewals stay fully durable). It saves a disk
-- flush on every handoff.
CREATE OR REPLACE FUNCTION lock_release(p_key text, p_token text, p_channel text)
RETURNS boolean
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.token = p_token AND h.expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM pg_notify(p_channel, p_key);
  RETURN true;
END
$$;
