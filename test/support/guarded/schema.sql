-- The guarded resource of the lock history tests: one row per key holding the last fence and
-- lease that wrote, and an append-only log of every write the resource applied, in apply order
-- (seq is drawn while the key's row lock is held, so per key it follows the apply order).
CREATE TABLE IF NOT EXISTS guarded (key text PRIMARY KEY, fence bigint NOT NULL, lease text NOT NULL);
CREATE TABLE IF NOT EXISTS guarded_log (
  seq bigserial PRIMARY KEY,
  key text NOT NULL,
  write_id text NOT NULL,
  fence bigint NOT NULL,
  lease text NOT NULL
);
