-- Statements of the PostgreSQL sales backend (sales.ts). Runs with search_path set to dibs' schema.
--
-- Lock order: a step that changes a sale's units locks the sale row first (lockSale or a
-- conditional UPDATE of it), then touches holds/orders/keys/outbox. The hold sweep locks several
-- sale rows in id order. Creating or moving a sale takes the SKU's advisory lock before the row.
-- Clock: now() everywhere, i.e. the database's time at the start of the step's transaction.

-- name: now
SELECT now() AS now

-- name: lockSku
-- $1 sku. Serialises the preflight "no overlapping sale of this SKU" with the insert/update.
SELECT pg_advisory_xact_lock(hashtext('dibs:sale-sku:' || $1))

-- name: lockSale
-- $1 sale id. Every later statement of the transaction sees the steps committed before this one.
SELECT *, now() AS now FROM sales WHERE id = $1 FOR UPDATE

-- name: peekSale
-- $1 sale id, $2 idempotency key (or null). Read without locking, before a buy/reserve: a stored
-- key's answer never changes, and a sale that is not live at this read may be refused as of this
-- read; only a step that may sell takes the lock (and decides everything again under it).
SELECT s.id, s.starts_at, s.ends_at, s.cancelled_at, s.cap, s.sold, now() AS now,
       k.kind AS key_kind, k.customer AS key_customer, k.quantity AS key_quantity, k.result_id AS key_result
FROM sales s LEFT JOIN sale_keys k ON k.sale_id = s.id AND k.key = $2
WHERE s.id = $1

-- name: saleView
-- $1 sale id → the sale with the units of its unexpired holds, and the clock it was read at.
SELECT s.*, now() AS now,
  (SELECT COALESCE(sum(h.quantity), 0) FROM sale_holds h
   WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at > now())::int AS live_held
FROM sales s WHERE s.id = $1

-- name: listSales
-- $1 after id, $2 limit
SELECT s.*, now() AS now,
  (SELECT COALESCE(sum(h.quantity), 0) FROM sale_holds h
   WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at > now())::int AS live_held
FROM sales s WHERE s.id > $1 ORDER BY s.id LIMIT $2

-- name: listSalesBySku
-- $1 after id, $2 limit, $3 sku
SELECT s.*, now() AS now,
  (SELECT COALESCE(sum(h.quantity), 0) FROM sale_holds h
   WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at > now())::int AS live_held
FROM sales s WHERE s.sku = $3 AND s.id > $1 ORDER BY s.id LIMIT $2

-- name: saleExists
SELECT 1 FROM sales WHERE id = $1

-- name: skuOf
SELECT sku FROM sales WHERE id = $1

-- name: insertSale
-- $1 id, $2 sku, $3 startsAt, $4 endsAt, $5 cap, $6 perCustomerLimit, $7 metadata (json text)
INSERT INTO sales (id, sku, starts_at, ends_at, cap, per_customer_limit, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
ON CONFLICT (id) DO NOTHING

-- name: sameSku
-- $1 sku, $2 id of the sale itself (excluded)
SELECT id, starts_at, ends_at FROM sales WHERE sku = $1 AND cancelled_at IS NULL AND id <> $2

-- name: updateSale
-- $1 id, $2 startsAt, $3 endsAt, $4 cap, $5 perCustomerLimit, $6 metadata (json text)
UPDATE sales SET starts_at = $2, ends_at = $3, cap = $4, per_customer_limit = $5, metadata = $6::jsonb
WHERE id = $1

-- name: cancelSale
-- $1 id. Cancels the sale and releases its active holds, once.
WITH s AS (
  UPDATE sales SET cancelled_at = now(), held = 0 WHERE id = $1 AND cancelled_at IS NULL RETURNING id
)
UPDATE sale_holds h SET status = 'cancelled' FROM s WHERE h.sale_id = s.id AND h.status = 'active'

-- name: expireStale
-- $1 sale id (locked): expires its stale holds (functions/sale_expire_stale.sql). → units
SELECT sale_expire_stale($1) AS units

-- name: staleHoldsAnySale
-- $1 limit → stale holds (id, sale_id), oldest expiry first
SELECT id, sale_id FROM sale_holds WHERE status = 'active' AND expires_at <= now() ORDER BY expires_at LIMIT $1

-- name: lockSales
-- $1 sale ids. Locked in id order, so two sweeps never deadlock.
SELECT id FROM sales WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE

-- name: expireHoldIds
-- $1 hold ids (their sales locked). → n
WITH expired AS (
  UPDATE sale_holds SET status = 'expired'
  WHERE id = ANY($1::text[]) AND status = 'active' AND expires_at <= now()
  RETURNING id, sale_id, customer, quantity, expires_at
), events AS (
  INSERT INTO outbox (type, idempotency_key, sale, payload)
  SELECT 'hold.expired', 'hold.expired:' || id, sale_id,
         jsonb_build_object('sale', sale_id, 'hold', id, 'customer', customer, 'quantity', quantity, 'expiresAt', iso_utc(expires_at))
  FROM expired ORDER BY expires_at, id
  ON CONFLICT (idempotency_key) DO NOTHING
), moved AS (
  UPDATE sales s SET held = s.held - x.units
  FROM (SELECT sale_id, sum(quantity)::int AS units FROM expired GROUP BY sale_id) x
  WHERE s.id = x.sale_id
)
SELECT count(*)::int AS n FROM expired

-- name: take
-- $1 sale, $2 customer, $3 quantity, $4 key (or null), $5 id for a new order/hold, $6 hold TTL in ms
-- (null for a buy), $7 via an admitted waiting-room ticket. The whole buy/reserve as one step
-- (functions/sale_take.sql).
SELECT * FROM sale_take($1, $2, $3, $4, $5, $6, $7)

-- name: confirm
-- $1 hold id, $2 id for the new order. The whole confirmation as one step (functions/sale_confirm.sql).
SELECT * FROM sale_confirm($1, $2)

-- name: activeHolds
-- $1 sale, $2 customer or null, $3 limit: active, unexpired holds, soonest expiry first (index sale_holds_sale_expiry).
SELECT id, sale_id, customer, quantity, status, expires_at, created_at, order_id
FROM sale_holds
WHERE sale_id = $1 AND status = 'active' AND expires_at > now() AND ($2::text IS NULL OR customer = $2::text)
ORDER BY expires_at, id LIMIT $3

-- name: holdById
-- The hold as stored (an active hold past its expiry is still 'active' here).
SELECT * FROM sale_holds WHERE id = $1

-- name: holdView
-- The hold as a reader sees it: an active hold past its expiry reads as expired at once.
SELECT id, sale_id, customer, quantity, expires_at, created_at, order_id,
       CASE WHEN status = 'active' AND expires_at <= now() THEN 'expired' ELSE status END AS status
FROM sale_holds WHERE id = $1

-- name: setHoldStatus
-- $1 hold id, $2 status, $3 order id; $4 units to take off the held counter of sale $5
WITH h AS (
  UPDATE sale_holds SET status = $2, order_id = $3 WHERE id = $1 RETURNING *
), moved AS (
  UPDATE sales SET held = held - $4 WHERE id = $5 AND $4 <> 0
)
SELECT * FROM h

-- name: orderById
SELECT * FROM sale_orders WHERE id = $1

-- name: upsertWish
-- $1 sku, $2 customer, $3 channels (json text)
INSERT INTO wishlist (sku, customer, channels) VALUES ($1, $2, $3::jsonb)
ON CONFLICT (sku, customer) DO UPDATE SET channels = excluded.channels
RETURNING *

-- name: deleteWish
DELETE FROM wishlist WHERE sku = $1 AND customer = $2

-- name: listWishes
-- $1 sku, $2 after customer, $3 limit
SELECT * FROM wishlist WHERE sku = $1 AND customer > $2 ORDER BY customer LIMIT $3

-- name: salesToAnnounce
SELECT id FROM sales
WHERE announced_at IS NULL AND cancelled_at IS NULL AND starts_at <= now() AND ends_at > now()
ORDER BY starts_at, id

-- name: announce
-- $1 sale id, $2 channels in delivery order. One statement: marks the sale announced (the
-- conditional UPDATE re-checks after waiting for the row lock, so of several racing activators
-- exactly one gets the row) and records sale.live plus one sale.live.notify per wishlister and
-- channel. → sale (null when another activator won), notifications
WITH s AS (
  UPDATE sales SET announced_at = now()
  WHERE id = $1 AND announced_at IS NULL AND cancelled_at IS NULL AND starts_at <= now() AND ends_at > now()
  RETURNING id, sku,
    jsonb_build_object('sale', id, 'sku', sku, 'startsAt', iso_utc(starts_at), 'endsAt', iso_utc(ends_at), 'metadata', metadata) AS about
), live AS (
  INSERT INTO outbox (type, idempotency_key, sale, payload)
  SELECT 'sale.live', 'sale.live:' || id, id, about FROM s
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING 1
), notify AS (
  INSERT INTO outbox (type, idempotency_key, sale, payload)
  SELECT 'sale.live.notify', 'sale.live:' || s.id || ':' || w.customer || ':' || c.channel, s.id,
         s.about || jsonb_build_object('customer', w.customer, 'channel', c.channel, 'to', w.channels -> c.channel)
  FROM s
  JOIN wishlist w ON w.sku = s.sku
  CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS c (channel, ord)
  -- The scalar subquery runs `live` first (an init plan), so sale.live gets the lower id and the
  -- dispatcher, which goes oldest first, announces the sale before it notifies its wishlisters.
  WHERE w.channels ? c.channel AND (SELECT count(*) FROM live) >= 0
  ORDER BY w.customer, c.ord
  ON CONFLICT (idempotency_key) DO NOTHING
  RETURNING 1
)
SELECT (SELECT id FROM s) AS sale, (SELECT count(*) FROM notify)::int AS notifications

-- name: salesToEnd
SELECT id FROM sales WHERE ended_recorded_at IS NULL AND ends_at <= now() ORDER BY ends_at, id

-- name: markEnded
-- $1 sale id: the conditional UPDATE that records the end once (it also locks the row).
UPDATE sales SET ended_recorded_at = now() WHERE id = $1 AND ended_recorded_at IS NULL AND ends_at <= now()
RETURNING *

-- name: insertEvent
-- $1 type, $2 idempotency key, $3 sale, $4 payload (json text)
INSERT INTO outbox (type, idempotency_key, sale, payload) VALUES ($1, $2, $3, $4::jsonb)
ON CONFLICT (idempotency_key) DO NOTHING

-- name: roomCounters
-- the waiting room's counters of tickets by status (migration 028), if the sale has a room
SELECT n_waiting::int AS waiting, n_admitted::int AS admitted, n_used::int AS used, n_expired::int AS expired,
  n_sold_out::int AS sold_out
FROM waiting_rooms WHERE sale_id = $1

-- name: roomTickets
SELECT status, count(*)::int AS n FROM tickets WHERE sale_id = $1 GROUP BY status

-- name: auditLedger
-- $1 sale → units in orders, units in holds marked active, units in unexpired holds, and events
SELECT
  (SELECT COALESCE(sum(quantity), 0) FROM sale_orders WHERE sale_id = $1)::int AS ordered,
  (SELECT COALESCE(sum(quantity), 0) FROM sale_holds WHERE sale_id = $1 AND status = 'active')::int AS active,
  (SELECT COALESCE(sum(quantity), 0) FROM sale_holds WHERE sale_id = $1 AND status = 'active' AND expires_at > now())::int AS live,
  (SELECT count(*) FROM sale_holds WHERE sale_id = $1 AND status = 'expired')::int AS expired_holds,
  (SELECT count(*) FROM outbox WHERE sale = $1 AND type = 'sale.sold_out')::int AS sold_out_events,
  (SELECT count(*) FROM outbox WHERE sale = $1 AND type = 'sale.live')::int AS live_events,
  (SELECT count(*) FROM outbox WHERE sale = $1 AND type = 'hold.expired')::int AS expired_events

-- name: customersOverLimit
-- $1 sale, $2 limit: orders plus unexpired holds per customer
SELECT customer, sum(quantity)::int AS units FROM (
  SELECT customer, quantity FROM sale_orders WHERE sale_id = $1
  UNION ALL
  SELECT customer, quantity FROM sale_holds WHERE sale_id = $1 AND status = 'active' AND expires_at > now()
) u GROUP BY customer HAVING sum(quantity) > $2

-- name: confirmedWithoutOrder
SELECT h.id FROM sale_holds h LEFT JOIN sale_orders o ON o.hold_id = h.id
WHERE h.sale_id = $1 AND h.status = 'confirmed' AND o.id IS NULL

-- name: keysWithForeignResults
-- $1 sale: idempotency keys whose stored result belongs to someone else (or is missing)
SELECT k.key, k.customer, COALESCE(o.customer, h.customer) AS owner
FROM sale_keys k
LEFT JOIN sale_orders o ON k.kind = 'buy' AND o.id = k.result_id
LEFT JOIN sale_holds h ON k.kind = 'reserve' AND h.id = k.result_id
WHERE k.sale_id = $1 AND COALESCE(o.customer, h.customer) IS DISTINCT FROM k.customer

-- name: eventsAfter
-- $1 after id, $2 limit
SELECT id::text, type, idempotency_key, payload, created_at FROM outbox WHERE sale IS NOT NULL AND id > $1 ORDER BY id LIMIT $2

-- name: saleEventsAfter
-- $1 after id, $2 limit, $3 sale
SELECT id::text, type, idempotency_key, payload, created_at FROM outbox WHERE sale = $3 AND id > $1 ORDER BY id LIMIT $2
