-- Statements of SQLite carts, run inside the sales backend's BEGIN IMMEDIATE transactions.

-- name: cartById
SELECT * FROM dibs_carts WHERE id = ?

-- name: cartByKey
SELECT * FROM dibs_carts WHERE key = ?

-- name: insertCart
INSERT INTO dibs_carts (id, customer, expires_at, created_at, key, fingerprint)
VALUES (@id, @customer, @expiresAt, @now, @key, @fingerprint)

-- name: setCartStatus
UPDATE dibs_carts SET status = @status WHERE id = @id

-- name: insertCartHold
INSERT INTO dibs_holds (id, sale_id, customer, quantity, expires_at, created_at, cart_id, cart_line)
VALUES (@id, @sale, @customer, @quantity, @expiresAt, @now, @cart, @line)

-- name: cartLines
-- The lines' holds, in line order (order_id: the order a confirmed line became).
SELECT * FROM dibs_holds WHERE cart_id = ? ORDER BY cart_line

-- name: auditCartLines
-- @sale sale → every line (hold) of every cart with a line on the sale, whichever sale the line is
-- on, with its sale's cancellation, its cart (columns c_*) and the order made from it (o_*; hold_id
-- is unique): what the audit's I9 reads (shared/sql-cart-audit.ts), in one pass over the holds.
WITH of_sale AS (SELECT DISTINCT cart_id FROM dibs_holds WHERE sale_id = @sale AND cart_id IS NOT NULL)
SELECT h.id, h.sale_id, h.customer, h.quantity, h.status, h.expires_at, h.order_id, h.cart_id, h.cart_line,
       s.cancelled_at IS NOT NULL AS sale_cancelled,
       c.id AS c_id, c.customer AS c_customer, c.status AS c_status, c.expires_at AS c_expires_at,
       c.fingerprint AS c_fingerprint,
       o.id AS o_id, o.customer AS o_customer, o.quantity AS o_quantity
FROM of_sale JOIN dibs_holds h ON h.cart_id = of_sale.cart_id
JOIN dibs_sales s ON s.id = h.sale_id
LEFT JOIN dibs_carts c ON c.id = h.cart_id
LEFT JOIN dibs_orders o ON o.hold_id = h.id
