-- HTTP service state: API keys and idempotency records (see migrations/004_service.sql).

-- name: insertKey
INSERT INTO api_keys (id, tenant, name, scopes, hash) VALUES ($1, $2, $3, $4, $5);

-- name: getKey
SELECT * FROM api_keys WHERE id = $1;

-- name: listKeys
SELECT * FROM api_keys ORDER BY created_at, id;

-- name: listTenantKeys
SELECT * FROM api_keys WHERE tenant = $1 ORDER BY created_at, id;

-- name: revokeKey
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *;

-- name: begin
-- $1 scope, $2 key, $3 fingerprint, $4 in-flight TTL ms. Insert-if-absent in one statement; an
-- expired record is taken over. `started` = 1 when this caller owns the key; otherwise the
-- existing record's fingerprint and response (NULL while in flight).
WITH ins AS (
  INSERT INTO idempotency_records AS r (scope, key, fingerprint, response, expires_at)
  VALUES ($1, $2, $3, NULL, now() + $4 * interval '1 millisecond')
  ON CONFLICT (scope, key) DO UPDATE
    SET fingerprint = EXCLUDED.fingerprint, response = NULL, expires_at = EXCLUDED.expires_at
    WHERE r.expires_at <= now()
  RETURNING 1
)
SELECT (SELECT count(*) FROM ins)::int AS started,
       (SELECT fingerprint FROM idempotency_records WHERE scope = $1 AND key = $2) AS fingerprint,
       (SELECT response FROM idempotency_records WHERE scope = $1 AND key = $2) AS response;

-- name: getRecord
SELECT fingerprint, response FROM idempotency_records WHERE scope = $1 AND key = $2;

-- name: complete
UPDATE idempotency_records SET response = $3, expires_at = now() + $4 * interval '1 millisecond' WHERE scope = $1 AND key = $2;

-- name: abandon
DELETE FROM idempotency_records WHERE scope = $1 AND key = $2 AND response IS NULL;

-- name: purge
WITH a AS (DELETE FROM idempotency_records WHERE expires_at <= now() RETURNING 1),
     b AS (DELETE FROM rate_limits WHERE reset_at <= now() RETURNING 1)
SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) AS n;

-- name: hitRateLimit
-- $1 key, $2 window ms. One statement: a new or expired window restarts at 1.
INSERT INTO rate_limits AS r (key, count, reset_at) VALUES ($1, 1, now() + $2 * interval '1 millisecond')
ON CONFLICT (key) DO UPDATE SET
  count = CASE WHEN r.reset_at <= now() THEN 1 ELSE r.count + 1 END,
  reset_at = CASE WHEN r.reset_at <= now() THEN EXCLUDED.reset_at ELSE r.reset_at END
RETURNING count::int AS current, least($2::float8, greatest(0, ceil(extract(epoch FROM r.reset_at - now()) * 1000)))::int AS ttl_ms;
