-- Statements of the PostgreSQL rate-limit backend. A take is one call of limit_take
-- (migrations/018_limits.sql); the rest are single statements.

-- name: take
-- $1 name, $2 key, $3 kind, $4 shape, $5 interval, $6 tolerance, $7 width, $8 span, $9 limit,
-- $10 idle ms, $11 n → { allowed, remaining, retry_ms, at_ms }
SELECT allowed, remaining, retry_ms, at_ms FROM limit_take($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)

-- name: peek
-- What take would answer, by the server's clock, without locking or writing anything.
-- $1 name, $2 key, $3 kind, $4 shape, $5 interval, $6 tolerance, $7 width, $8 span, $9 limit, $10 n
SELECT d.allowed, d.remaining, d.retry_ms, d.at_ms
FROM (SELECT 1) AS one
LEFT JOIN limit_state AS s ON s.name = $1 AND s.key = $2
CROSS JOIN LATERAL limit_decide(s.shape IS DISTINCT FROM $4, coalesce(s.last_ms, 0), coalesce(s.tat_ms, 0),
  coalesce(s.base, 0), coalesce(s.counts, '{}'), (extract(epoch FROM clock_timestamp()) * 1000)::double precision,
  $3, $5, $6, $7, $8, $9, $10) AS d

-- name: insertDef
-- $1 name, $2 definition → the row when inserted; no row when the name exists.
INSERT INTO limit_definitions (name, definition) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name

-- name: replaceDef
-- $1 name, $2 definition (createdAt kept from the stored one) → { definition } or no row.
UPDATE limit_definitions SET definition = $2::jsonb || jsonb_build_object('createdAt', definition -> 'createdAt')
WHERE name = $1 RETURNING definition

-- name: getDef
-- $1 name → { definition } or no row.
SELECT definition FROM limit_definitions WHERE name = $1

-- name: listDefs
SELECT definition FROM limit_definitions ORDER BY name

-- name: deleteDef
-- $1 name: the definition and every key's state, in one statement.
WITH s AS (DELETE FROM limit_state WHERE name = $1)
DELETE FROM limit_definitions WHERE name = $1 RETURNING name

-- name: reset
-- $1 name, $2 key
DELETE FROM limit_state WHERE name = $1 AND key = $2

-- name: sweepIdle
-- A few states that no longer matter (bounded work per sweep), by the server's clock.
DELETE FROM limit_state WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM limit_state WHERE idle_at_ms < extract(epoch FROM clock_timestamp()) * 1000 LIMIT 100))
