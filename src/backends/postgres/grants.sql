-- Statements of tiered mode's grant ledger on PostgreSQL (grants.ts); the tables are in migration
-- 010_sale_grants.sql, the functions in functions/sale_grant*.sql and sale_take_granted.sql. Runs with search_path set to dibs' schema.

-- name: grant
-- $1 sale, $2 size, $3 ttl ms, $4 revoke every open grant first, $5 revoke open grants newer than this one first (or null)
SELECT outcome, status, grant_id::text AS grant_id, size, escrow, per_customer_limit, ends_at FROM sale_grant($1, $2, $3, $4, $5::bigint)

-- name: takeGranted
-- $1 sale, $2 grant, $3 customer, $4 quantity, $5 key (or null), $6 id for the new order
SELECT * FROM sale_take_granted($1, $2::bigint, $3, $4, $5, $6)

-- name: closeGrant
-- $1 grant, $2 units Redis had not sold
SELECT sale_grant_close($1::bigint, $2) AS n

-- name: revokeGrants
SELECT sale_grants_revoke($1) AS n

-- name: revokeNewer
-- $1 sale, $2 grant → revokes the sale's open grants made after it
SELECT sale_grants_revoke_newer($1, $2::bigint) AS n

-- name: expireGrants
SELECT sale_grants_expire($1) AS n

-- name: orderById
SELECT * FROM sale_orders WHERE id = $1

-- name: auditGrants
-- $1 sale → the counters and what the grants and orders say, in one snapshot
SELECT s.cap, s.sold, s.held, s.escrow,
  (SELECT COALESCE(sum(size - used), 0) FROM sale_grants WHERE sale_id = $1 AND revoked_at IS NULL)::int AS open_unused,
  (SELECT COALESCE(sum(CASE WHEN revoked_at IS NULL THEN size ELSE used END), 0) FROM sale_grants WHERE sale_id = $1)::int AS granted,
  (SELECT COALESCE(sum(quantity), 0) FROM sale_orders WHERE sale_id = $1 AND grant_id IS NOT NULL)::int AS fast_sold
FROM sales s WHERE s.id = $1

-- name: grantsMisused
-- $1 sale → grants whose `used` differs from the units of the orders written against them
SELECT g.id::text AS id, g.used, COALESCE(sum(o.quantity), 0)::int AS ordered
FROM sale_grants g LEFT JOIN sale_orders o ON o.grant_id = g.id
WHERE g.sale_id = $1 GROUP BY g.id HAVING g.used <> COALESCE(sum(o.quantity), 0)
