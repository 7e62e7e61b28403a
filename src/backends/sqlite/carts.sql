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
