-- Leases, semaphores and sharded counters (issue 7).
-- Leases are ROWS, not session advisory locks: they survive PgBouncer transaction pooling and
-- connection loss, and only the owner token (a random secret) can renew or release them.
-- Every time comes from the server's clock (clock_timestamp(), read inside the function AFTER
-- the per-key row lock was granted, so a wait for the lock never makes the sweep stale).

-- The last fence ever granted per key. Kept after release/expiry so fences only grow; its row
-- lock also serialises the acquirers of one key (different keys never wait for each other).
CREATE TABLE lock_fences (
  key text PRIMARY KEY,
  fence bigint NOT NULL CHECK (fence >= 0)
);

-- Live (or not yet swept) holders; a lock is a semaphore with limit 1.
CREATE TABLE lock_holders (
  key text NOT NULL,
  token text NOT NULL,
  fence bigint NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (key, token)
);

-- Grants a slot of `p_key` to `p_token` when fewer than `p_limit` live holders remain.
-- One call = one atomic step: lock the key's fence row, sweep lapsed holders, count, bump the
-- fence, insert the holder. Returns no row when every slot is taken.
-- plpgsql on purpose: in READ COMMITTED each statement of the function takes a fresh snapshot,
-- so the count sees the holder a concurrent release just removed (a single CTE statement would
-- count with the snapshot taken before it waited for the row lock).
CREATE FUNCTION lock_acquire(p_key text, p_token text, p_limit integer, p_ttl_ms integer)
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
  UPDATE lock_fences AS f SET fence = f.fence + 1 WHERE f.key = p_key RETURNING f.fence INTO v_fence;
  v_expires := v_now + make_interval(secs => p_ttl_ms / 1000.0);
  INSERT INTO lock_holders (key, token, fence, expires_at) VALUES (p_key, p_token, v_fence, v_expires);
  -- Validity measured after the write, on the same clock: never stale on return.
  RETURN QUERY SELECT v_fence, v_expires, (extract(epoch FROM v_expires - clock_timestamp()) * 1000)::double precision;
END
$$;

-- Frees the live slot held by `p_token` and, in the same transaction, NOTIFYs `p_channel` with
-- the key (delivered at commit, so a woken waiter always finds the slot free). Returns whether
-- the token held a live slot (false = expired or foreign: the caller throws not_owner).
-- The commit does not wait for the WAL flush (synchronous_commit off for this transaction only):
-- a release lost in a server crash merely leaves the slot taken until its lease lapses — never
-- two holders, never a fence reused (grants and renewals stay fully durable). It saves a disk
-- flush on every handoff.
CREATE FUNCTION lock_release(p_key text, p_token text, p_channel text)
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

-- Sharded counters (the Bluecore design): the total is the sum of the shard rows; incr adds to
-- one random shard; the shard count grows when writes contend and never shrinks.
CREATE TABLE counters (
  name text PRIMARY KEY,
  shards integer NOT NULL CHECK (shards >= 1)
);

CREATE TABLE counter_shards (
  name text NOT NULL,
  shard integer NOT NULL CHECK (shard >= 0),
  value bigint NOT NULL,
  PRIMARY KEY (name, shard)
);
