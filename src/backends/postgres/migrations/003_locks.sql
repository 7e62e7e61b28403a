-- Leases, semaphores and sharded counters.
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
