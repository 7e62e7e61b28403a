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

-- name: auditCartLines
-- $1 sale → every line (hold) of every cart with a line on the sale, whichever sale the line is
-- on, with its sale's cancellation, its cart (columns c_*) and the order made from it (o_*; hold_id
-- is unique): what the audit's I9 reads (shared/sql-cart-audit.ts), in one pass over the holds.
WITH of_sale AS (SELECT DISTINCT cart_id FROM sale_holds WHERE sale_id = $1 AND cart_id IS NOT NULL)
SELECT h.id, h.sale_id, h.customer, h.quantity, h.status, h.expires_at, h.order_id, h.cart_id, h.cart_line,
       s.cancelled_at IS NOT NULL AS sale_cancelled,
       c.id AS c_id, c.customer AS c_customer, c.status AS c_status, c.expires_at AS c_expires_at,
       c.fingerprint AS c_fingerprint,
       o.id AS o_id, o.customer AS o_customer, o.quantity AS o_quantity
FROM of_sale JOIN sale_holds h ON h.cart_id = of_sale.cart_id
JOIN sales s ON s.id = h.sale_id
LEFT JOIN carts c ON c.id = h.cart_id
LEFT JOIN sale_orders o ON o.hold_id = h.id

-- name: auditClock
SELECT now() AS now
