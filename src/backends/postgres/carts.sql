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
