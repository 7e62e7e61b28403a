-- Statements of the PostgreSQL lock backend. Acquire and release are server-side functions
-- (functions/lock_*.sql, each one atomic step); the rest are single statements.
-- Clock: the server's (clock_timestamp()), never the caller's.

-- name: acquire
-- $1 key, $2 token, $3 limit, $4 ttlMs → { fence, expires_at, valid_ms } or no row (all slots taken).
SELECT fence, expires_at, valid_ms FROM lock_acquire($1, $2, $3, $4)

-- name: acquireFair
-- $1 key, $2 token, $3 limit, $4 ttlMs, $5 line key, $6 ticket token or NULL → as acquire
-- (functions/lock_acquire_fair.sql: granted only when no live ticket ahead of $6 waits).
SELECT fence, expires_at, valid_ms FROM lock_acquire_fair($1, $2, $3, $4, $5, $6)

-- name: renew
-- $1 key, $2 token, $3 ttlMs → { fence, expires_at, valid_ms } when the token held a live slot;
-- no row when it expired or was never the owner (→ lease_lost). Expired rows are never revived.
WITH t AS (SELECT clock_timestamp() AS now)
UPDATE lock_holders h SET expires_at = t.now + make_interval(secs => $3 / 1000.0)
FROM t
WHERE h.key = $1 AND h.token = $2 AND h.expires_at > t.now
RETURNING h.fence, h.expires_at, (extract(epoch FROM h.expires_at - clock_timestamp()) * 1000)::double precision AS valid_ms

-- name: release
-- $1 key, $2 token, $3 NOTIFY channel → { released } (false = expired or foreign → not_owner).
SELECT lock_release($1, $2, $3) AS released

-- name: inspect
-- $1 key → { holders (json array of {token, fence, expires_at}), last_fence } in one snapshot.
SELECT coalesce((SELECT json_agg(json_build_object('token', h.token, 'fence', h.fence, 'expires_at', h.expires_at) ORDER BY h.fence)
                 FROM lock_holders h WHERE h.key = $1 AND h.expires_at > clock_timestamp()), '[]'::json) AS holders,
       coalesce((SELECT f.fence FROM lock_fences f WHERE f.key = $1), 0) AS last_fence

-- name: listKeys
-- $1 after, $2 limit: keys ever granted, in key order; not the facade's bookkeeping keys (chr(31)).
SELECT key FROM lock_fences WHERE key > $1 AND strpos(key, chr(31)) = 0 ORDER BY key LIMIT $2
