-- A deliberately broken guard (for proving the checker fails): applies every write, whatever its
-- fence. Same parameters and result as write.sql.
WITH applied AS (
  INSERT INTO guarded AS g (key, fence, lease) VALUES ($1, $2, $3)
  ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence, lease = EXCLUDED.lease
  RETURNING key
)
INSERT INTO guarded_log (key, write_id, fence, lease) SELECT $1, $4, $2, $3 FROM applied RETURNING seq
