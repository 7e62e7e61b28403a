-- Leases, semaphores and sharded counters.
-- Times are Unix milliseconds from SQLite's own clock (julianday('now'), the local machine's
-- clock, read inside the transaction), never the caller's.

-- The last fence ever granted per key: kept after release/expiry so fences only grow.
CREATE TABLE dibs_lock_fences (
  key TEXT PRIMARY KEY,
  fence INTEGER NOT NULL
) STRICT;

-- Live (or not yet swept) holders; a lock is a semaphore with limit 1.
CREATE TABLE dibs_lock_holders (
  key TEXT NOT NULL,
  token TEXT NOT NULL,
  fence INTEGER NOT NULL,
  expires_ms REAL NOT NULL,
  PRIMARY KEY (key, token)
) STRICT;

CREATE TABLE dibs_counters (
  name TEXT PRIMARY KEY,
  shards INTEGER NOT NULL CHECK (shards >= 1)
) STRICT;

CREATE TABLE dibs_counter_shards (
  name TEXT NOT NULL,
  shard INTEGER NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (name, shard)
) STRICT;
