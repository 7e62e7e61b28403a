-- HTTP service state: API keys and idempotency records (see migrations/005_service.sql).

-- name: now
SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS now;

-- name: insertKey
INSERT INTO dibs_api_keys (id, tenant, name, scopes, hash, created_at, revoked_at)
VALUES (@id, @tenant, @name, @scopes, @hash, @createdAt, NULL);

-- name: getKey
SELECT * FROM dibs_api_keys WHERE id = ?;

-- name: listKeys
SELECT * FROM dibs_api_keys ORDER BY created_at, id;

-- name: listTenantKeys
SELECT * FROM dibs_api_keys WHERE tenant = ? ORDER BY created_at, id;

-- name: revokeKey
UPDATE dibs_api_keys SET revoked_at = coalesce(revoked_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE id = ? RETURNING *;

-- name: deleteExpired
-- @scope, @key, @now: an expired record is as good as absent.
DELETE FROM dibs_idempotency WHERE scope = @scope AND key = @key AND expires_ms <= @now;

-- name: insertPending
-- Insert-if-absent; `changes` tells whether this caller owns the key.
INSERT INTO dibs_idempotency (scope, key, fingerprint, response, expires_ms)
VALUES (@scope, @key, @fingerprint, NULL, @now + @ttlMs)
ON CONFLICT (scope, key) DO NOTHING;

-- name: getRecord
SELECT fingerprint, response FROM dibs_idempotency WHERE scope = @scope AND key = @key;

-- name: complete
UPDATE dibs_idempotency SET response = @response, expires_ms = @now + @ttlMs WHERE scope = @scope AND key = @key;

-- name: abandon
DELETE FROM dibs_idempotency WHERE scope = @scope AND key = @key AND response IS NULL;

-- name: purge
DELETE FROM dibs_idempotency WHERE expires_ms <= @now;
