-- Statements of tiered mode's grant ledger on SQLite (grants.ts), run inside write transactions
-- (one writer at a time), with sales.ts' helpers for the sale row, holds, limits and orders.

-- name: later
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (? / 1000.0) || ' seconds') AS at

-- name: revokeOpen
-- Revokes the sale's open grants: all (@all = 1) or only those past expiry. → unused units of each
UPDATE dibs_sale_grants SET revoked_at = @now
WHERE sale_id = @sale AND revoked_at IS NULL AND (@all = 1 OR expires_at <= @now)
RETURNING size - used AS unused

-- name: revokeNewer
-- Revokes the sale's open grants made after grant @newest (orphaned by a rollback of Redis' state). → unused units of each
UPDATE dibs_sale_grants SET revoked_at = @now
WHERE sale_id = @sale AND revoked_at IS NULL AND id > @newest
RETURNING size - used AS unused

-- name: moveEscrow
UPDATE dibs_sales SET escrow = escrow + @n WHERE id = @sale

-- name: insertGrant
INSERT INTO dibs_sale_grants (sale_id, size, expires_at, created_at) VALUES (@sale, @size, @expiresAt, @now) RETURNING id

-- name: grantById
SELECT * FROM dibs_sale_grants WHERE id = ?

-- name: useGrant
-- Consumes units of an open grant that still has them; no row changed = revoked or exhausted.
UPDATE dibs_sale_grants SET used = used + @quantity
WHERE id = @grant AND sale_id = @sale AND revoked_at IS NULL AND used + @quantity <= size

-- name: shrinkGrant
UPDATE dibs_sale_grants SET size = size - @n WHERE id = @grant

-- name: expiredGrantSales
SELECT DISTINCT sale_id FROM dibs_sale_grants WHERE revoked_at IS NULL AND expires_at <= ? LIMIT ?

-- name: auditGrants
SELECT s.cap, s.sold, s.held, s.escrow,
  (SELECT COALESCE(SUM(size - used), 0) FROM dibs_sale_grants WHERE sale_id = @sale AND revoked_at IS NULL) AS open_unused,
  (SELECT COALESCE(SUM(CASE WHEN revoked_at IS NULL THEN size ELSE used END), 0) FROM dibs_sale_grants WHERE sale_id = @sale) AS granted,
  (SELECT COALESCE(SUM(quantity), 0) FROM dibs_orders WHERE sale_id = @sale AND grant_id IS NOT NULL) AS fast_sold
FROM dibs_sales s WHERE s.id = @sale

-- name: grantsMisused
SELECT CAST(g.id AS TEXT) AS id, g.used, COALESCE(SUM(o.quantity), 0) AS ordered
FROM dibs_sale_grants g LEFT JOIN dibs_orders o ON o.grant_id = g.id
WHERE g.sale_id = @sale GROUP BY g.id HAVING g.used <> COALESCE(SUM(o.quantity), 0)

-- name: orderById
SELECT * FROM dibs_orders WHERE id = ?
