-- Statements of the SQLite sales backend, combined inside BEGIN IMMEDIATE transactions.

-- name: now
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now

-- name: later
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (? / 1000.0) || ' seconds') AS at

-- name: saleById
SELECT * FROM dibs_sales WHERE id = ?

-- name: insertSale
INSERT INTO dibs_sales (id, sku, starts_at, ends_at, cap, per_customer_limit, metadata, created_at)
VALUES (@id, @sku, @startsAt, @endsAt, @cap, @perCustomerLimit, @metadata, @now)
ON CONFLICT (id) DO NOTHING

-- name: saleStep
-- The first read of a buy or reservation, in one statement instead of six: the sale row, the
-- store clock (`clock`) and the expiry a new hold would get (`later`, @ttlMs from now), whether
-- the sale sells only through a waiting room, whether it has active holds past their expiry
-- (only then is the expiry sweep run and this read repeated), and @customer's units: ordered,
-- and their one active hold (index dibs_holds_one_active), if any.
SELECT s.*,
  c.now AS clock,
  strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (@ttlMs / 1000.0) || ' seconds') AS later,
  EXISTS (SELECT 1 FROM dibs_waiting_rooms w WHERE w.sale_id = s.id) AS has_room,
  EXISTS (SELECT 1 FROM dibs_holds h WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at <= c.now) AS has_stale,
  (SELECT COALESCE(SUM(o.quantity), 0) FROM dibs_orders o WHERE o.sale_id = s.id AND o.customer = @customer) AS own_ordered,
  h.id AS own_hold, COALESCE(h.quantity, 0) AS own_held, h.cart_id AS own_cart
FROM dibs_sales s
CROSS JOIN (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now) c
LEFT JOIN dibs_holds h ON h.sale_id = s.id AND h.customer = @customer AND h.status = 'active'
WHERE s.id = @id

-- name: holdStep
-- The first read of a confirmation: the hold, its sale, the store clock, and whether the sale has
-- active holds past their expiry (only then is the expiry sweep run and this read repeated).
SELECT h.*, c.now AS clock,
  EXISTS (SELECT 1 FROM dibs_holds x WHERE x.sale_id = h.sale_id AND x.status = 'active' AND x.expires_at <= c.now) AS has_stale,
  s.cancelled_at AS sale_cancelled_at
FROM dibs_holds h
CROSS JOIN (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now) c
JOIN dibs_sales s ON s.id = h.sale_id
WHERE h.id = @id

-- name: sameSku
SELECT id, starts_at AS startsAt, ends_at AS endsAt FROM dibs_sales WHERE sku = ? AND cancelled_at IS NULL AND id <> ?

-- name: listSales
SELECT * FROM dibs_sales WHERE id > ? ORDER BY id LIMIT ?

-- name: listSalesBySku
SELECT * FROM dibs_sales WHERE sku = ? AND id > ? ORDER BY id LIMIT ?

-- name: updateSale
UPDATE dibs_sales SET starts_at = @startsAt, ends_at = @endsAt, cap = @cap, per_customer_limit = @perCustomerLimit, metadata = @metadata
WHERE id = @id

-- name: cancelSale
UPDATE dibs_sales SET cancelled_at = @now WHERE id = @id AND cancelled_at IS NULL

-- name: cancelSaleHolds
UPDATE dibs_holds SET status = 'cancelled' WHERE sale_id = ? AND status = 'active'

-- name: zeroHeld
UPDATE dibs_sales SET held = 0 WHERE id = ?

-- name: staleHolds
SELECT * FROM dibs_holds WHERE sale_id = ? AND status = 'active' AND expires_at <= ?

-- name: staleHoldsAnySale
SELECT * FROM dibs_holds WHERE status = 'active' AND expires_at <= ? ORDER BY expires_at LIMIT ?

-- name: setHoldStatus
UPDATE dibs_holds SET status = @status, order_id = @orderId WHERE id = @id

-- name: moveSale
UPDATE dibs_sales SET sold = sold + @sold, held = held + @held WHERE id = @id RETURNING sold, held, cap

-- name: unitsOfCustomer
SELECT
  (SELECT COALESCE(SUM(quantity), 0) FROM dibs_orders WHERE sale_id = @sale AND customer = @customer) AS ordered,
  (SELECT COALESCE(SUM(quantity), 0) FROM dibs_holds WHERE sale_id = @sale AND customer = @customer AND status = 'active') AS held

-- name: activeHoldOf
SELECT * FROM dibs_holds WHERE sale_id = ? AND customer = ? AND status = 'active'

-- name: activeHolds
-- Active, unexpired holds of a sale, soonest expiry first (index dibs_holds_sale_expiry); one customer's when @customer is set.
SELECT * FROM dibs_holds
WHERE sale_id = @sale AND status = 'active' AND expires_at > @now AND (@customer IS NULL OR customer = @customer)
ORDER BY expires_at, id LIMIT @limit

-- name: holdById
SELECT * FROM dibs_holds WHERE id = ?

-- name: insertHold
INSERT INTO dibs_holds (id, sale_id, customer, quantity, expires_at, created_at) VALUES (@id, @sale, @customer, @quantity, @expiresAt, @now)
RETURNING *

-- name: replaceHold
UPDATE dibs_holds SET quantity = @quantity, expires_at = @expiresAt WHERE id = @id
RETURNING *

-- name: insertOrder
INSERT INTO dibs_orders (id, sale_id, customer, quantity, hold_id, created_at, grant_id) VALUES (@id, @sale, @customer, @quantity, @holdId, @now, @grantId)
RETURNING id, sale_id, customer, quantity, hold_id, created_at

-- name: orderById
SELECT * FROM dibs_orders WHERE id = ?

-- name: orderOfHold
SELECT * FROM dibs_orders WHERE hold_id = ?

-- name: saleKey
SELECT * FROM dibs_sale_keys WHERE sale_id = ? AND key = ?

-- name: insertSaleKey
INSERT INTO dibs_sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (@sale, @key, @kind, @customer, @quantity, @resultId)

-- name: insertEvent
INSERT INTO dibs_outbox (type, idempotency_key, sale, payload, created_at) VALUES (@type, @key, @sale, @payload, @now)
ON CONFLICT (idempotency_key) DO NOTHING

-- name: activeHeldUnits
SELECT COALESCE(SUM(quantity), 0) AS n FROM dibs_holds WHERE sale_id = ? AND status = 'active' AND expires_at > ?

-- name: auditLedger
SELECT
  (SELECT COALESCE(SUM(quantity), 0) FROM dibs_orders WHERE sale_id = @sale) AS ordered,
  (SELECT COALESCE(SUM(quantity), 0) FROM dibs_holds WHERE sale_id = @sale AND status = 'active') AS active,
  (SELECT COUNT(*) FROM dibs_outbox WHERE sale = @sale AND type = 'sale.sold_out') AS soldOutEvents

-- name: roomCounters
-- the waiting room's counters of tickets by status (migration 017), if the sale has a room
SELECT n_waiting AS waiting, n_admitted AS admitted, n_used AS used, n_expired AS expired, n_sold_out AS sold_out
FROM dibs_waiting_rooms WHERE sale_id = ?

-- name: roomTickets
SELECT status, count(*) AS n FROM dibs_tickets WHERE sale_id = ? GROUP BY status

-- name: customersOverLimit
SELECT customer, SUM(quantity) AS units FROM (
  SELECT customer, quantity FROM dibs_orders WHERE sale_id = @sale
  UNION ALL
  SELECT customer, quantity FROM dibs_holds WHERE sale_id = @sale AND status = 'active' AND expires_at > @now
) GROUP BY customer HAVING SUM(quantity) > @limit

-- name: confirmedWithoutOrder
SELECT h.id FROM dibs_holds h LEFT JOIN dibs_orders o ON o.hold_id = h.id
WHERE h.sale_id = ? AND h.status = 'confirmed' AND o.id IS NULL

-- name: eventsAfter
SELECT * FROM dibs_outbox WHERE sale IS NOT NULL AND id > ? ORDER BY id LIMIT ?

-- name: saleEventsAfter
SELECT * FROM dibs_outbox WHERE sale = ? AND id > ? ORDER BY id LIMIT ?

-- name: upsertWish
INSERT INTO dibs_wishlist (sku, customer, channels, created_at) VALUES (@sku, @customer, @channels, @now)
ON CONFLICT (sku, customer) DO UPDATE SET channels = excluded.channels
RETURNING *

-- name: deleteWish
DELETE FROM dibs_wishlist WHERE sku = ? AND customer = ?

-- name: listWishes
SELECT * FROM dibs_wishlist WHERE sku = ? AND customer > ? ORDER BY customer LIMIT ?

-- name: wishesOfSku
SELECT * FROM dibs_wishlist WHERE sku = ? ORDER BY customer

-- name: salesToAnnounce
SELECT * FROM dibs_sales WHERE announced_at IS NULL AND cancelled_at IS NULL AND starts_at <= @now AND ends_at > @now ORDER BY starts_at

-- name: markAnnounced
UPDATE dibs_sales SET announced_at = @now WHERE id = @id AND announced_at IS NULL

-- name: salesToEnd
SELECT * FROM dibs_sales WHERE ended_recorded_at IS NULL AND ends_at <= @now ORDER BY ends_at

-- name: markEnded
UPDATE dibs_sales SET ended_recorded_at = @now WHERE id = @id AND ended_recorded_at IS NULL

-- name: hasWaitingRoom
SELECT 1 FROM dibs_waiting_rooms WHERE sale_id = ?
