-- Statements of PostgreSQL carts; each step is one statement calling its function.

-- name: hold
-- $1 cart id, $2 customer, $3 sale ids, $4 quantities, $5 TTL in ms, $6 key (or null),
-- $7 the request's fingerprint, $8 one new hold id per line (functions/cart_hold.sql).
SELECT * FROM cart_hold($1, $2, $3, $4, $5, $6, $7, $8)

-- name: confirm
-- $1 cart, $2 one new order id per line (functions/cart_confirm.sql).
SELECT * FROM cart_confirm($1, $2)

-- name: cancel
SELECT * FROM cart_cancel($1)

-- name: cartView
-- The cart with its lines (holds, in line order), its status as of now() (an active cart past its
-- expiry reads as expired), in one snapshot.
SELECT c.id, c.customer, c.expires_at, c.created_at,
       CASE WHEN c.status = 'active' AND c.expires_at <= now() THEN 'expired' ELSE c.status END AS status,
       COALESCE((SELECT json_agg(json_build_object('saleId', h.sale_id, 'quantity', h.quantity, 'holdId', h.id, 'orderId', h.order_id) ORDER BY h.cart_line)
                 FROM sale_holds h WHERE h.cart_id = c.id), '[]'::json) AS lines
FROM carts c WHERE c.id = $1

-- name: ordersOfCart
SELECT o.* FROM sale_orders o JOIN sale_holds h ON h.id = o.hold_id WHERE h.cart_id = $1 ORDER BY h.cart_line

-- name: auditCarts
-- $1 sale → every cart with a line on the sale (the audit's I9, shared/sql-cart-audit.ts)
SELECT id, customer, status, expires_at, fingerprint FROM carts
WHERE id IN (SELECT cart_id FROM sale_holds WHERE sale_id = $1 AND cart_id IS NOT NULL)

-- name: auditCartLines
-- $1 sale → every line (hold) of those carts, on whichever sale, and whether that sale is cancelled
SELECT h.id, h.sale_id, h.customer, h.quantity, h.status, h.expires_at, h.order_id, h.cart_id, h.cart_line,
       s.cancelled_at IS NOT NULL AS sale_cancelled
FROM sale_holds h JOIN sales s ON s.id = h.sale_id
WHERE h.cart_id IN (SELECT cart_id FROM sale_holds WHERE sale_id = $1 AND cart_id IS NOT NULL)

-- name: auditCartOrders
-- $1 sale → every order made from a line of those carts
SELECT o.id, o.customer, o.quantity, o.hold_id FROM sale_orders o
WHERE o.hold_id IN (SELECT id FROM sale_holds
                    WHERE cart_id IN (SELECT cart_id FROM sale_holds WHERE sale_id = $1 AND cart_id IS NOT NULL))

-- name: auditClock
SELECT now() AS now
