-- A fenced write: applied (and logged) only when its fence is above the last one applied for the
-- key, or equal and from the very lease that wrote last (the FenceGuard rule, docs/locks.md).
-- $1 key, $2 fence, $3 lease identity, $4 write id. Returns one row when applied, none when refused.
WITH applied AS (
  INSERT INTO guarded AS g (key, fence, lease) VALUES ($1, $2, $3)
  ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence, lease = EXCLUDED.lease
    WHERE g.fence < EXCLUDED.fence OR (g.fence = EXCLUDED.fence AND g.lease = EXCLUDED.lease)
  RETURNING key
)
INSERT INTO guarded_log (key, write_id, fence, lease) SELECT $1, $4, $2, $3 FROM applied RETURNING seq
