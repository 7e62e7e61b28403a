-- Forecast reads (forecast.ts). Window starts come from SQLite's clock, never the caller's.

-- name: poolTaken
-- Codes claimed in the last 1, 5 and 15 minutes (still held or redeemed), and the free counter.
WITH p AS (SELECT id, free FROM dibs_pools WHERE name = @subject),
t AS (
  SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 seconds') AS t1,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-300 seconds') AS t5,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-900 seconds') AS t15
)
SELECT p.free AS remaining, t.now,
  (SELECT count(*) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t1) AS w1,
  (SELECT min(claimed_at) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t1) AS f1,
  (SELECT count(*) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t5) AS w5,
  (SELECT min(claimed_at) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t5) AS f5,
  (SELECT count(*) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t15) AS w15,
  (SELECT min(claimed_at) FROM dibs_codes c WHERE c.pool_id = p.id AND c.claimed_at >= t.t15) AS f15
FROM p, t

-- name: saleTaken
-- Units ordered in the last 1, 5 and 15 minutes, and what is left: cap − sold − unexpired holds.
WITH s AS (SELECT id, cap, sold FROM dibs_sales WHERE id = @subject),
t AS (
  SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 seconds') AS t1,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-300 seconds') AS t5,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-900 seconds') AS t15
)
SELECT
  CASE WHEN s.cap IS NULL THEN NULL ELSE s.cap - s.sold - (SELECT coalesce(sum(h.quantity), 0) FROM dibs_holds h WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at > t.now) END AS remaining,
  t.now,
  (SELECT coalesce(sum(o.quantity), 0) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t1) AS w1,
  (SELECT min(o.created_at) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t1) AS f1,
  (SELECT coalesce(sum(o.quantity), 0) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t5) AS w5,
  (SELECT min(o.created_at) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t5) AS f5,
  (SELECT coalesce(sum(o.quantity), 0) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t15) AS w15,
  (SELECT min(o.created_at) FROM dibs_orders o WHERE o.sale_id = s.id AND o.created_at >= t.t15) AS f15
FROM s, t

-- name: upsertWatch
INSERT INTO dibs_forecast_watches (kind, subject, within_ms) VALUES (@kind, @subject, @withinMs)
ON CONFLICT (kind, subject) DO UPDATE SET within_ms = excluded.within_ms

-- name: deleteWatch
DELETE FROM dibs_forecast_watches WHERE kind = @kind AND subject = @subject

-- name: watches
SELECT * FROM dibs_forecast_watches ORDER BY kind, subject

-- name: setWatch
UPDATE dibs_forecast_watches SET armed = @armed, fired = @fired WHERE kind = @kind AND subject = @subject

-- name: insertPoolEvent
INSERT INTO dibs_outbox (type, idempotency_key, pool, payload, created_at) VALUES (@type, @key, @subject, @payload, @now)
ON CONFLICT (idempotency_key) DO NOTHING

-- name: insertSaleEvent
INSERT INTO dibs_outbox (type, idempotency_key, sale, payload, created_at) VALUES (@type, @key, @subject, @payload, @now)
ON CONFLICT (idempotency_key) DO NOTHING
