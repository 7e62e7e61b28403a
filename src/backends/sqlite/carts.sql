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

-- name: auditCarts
-- @sale → every cart with a line on the sale (the audit's I9, shared/sql-cart-audit.ts)
SELECT id, customer, status, expires_at, fingerprint FROM dibs_carts
WHERE id IN (SELECT cart_id FROM dibs_holds WHERE sale_id = @sale AND cart_id IS NOT NULL)

-- name: auditCartLines
-- @sale → every line (hold) of those carts, on whichever sale, and whether that sale is cancelled
SELECT h.id, h.sale_id, h.customer, h.quantity, h.status, h.expires_at, h.order_id, h.cart_id, h.cart_line,
       s.cancelled_at IS NOT NULL AS sale_cancelled
FROM dibs_holds h JOIN dibs_sales s ON s.id = h.sale_id
WHERE h.cart_id IN (SELECT cart_id FROM dibs_holds WHERE sale_id = @sale AND cart_id IS NOT NULL)

-- name: auditCartOrders
-- @sale → every order made from a line of those carts
SELECT o.id, o.customer, o.quantity, o.hold_id FROM dibs_orders o
WHERE o.hold_id IN (SELECT id FROM dibs_holds
                    WHERE cart_id IN (SELECT cart_id FROM dibs_holds WHERE sale_id = @sale AND cart_id IS NOT NULL))
