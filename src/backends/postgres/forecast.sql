-- Forecast reads (forecast.ts). Window starts come from the server's clock, never the caller's.

-- name: poolTaken
-- $1 pool name. Codes claimed in the last 1, 5 and 15 minutes (still held or redeemed), and the
-- free count (the sum of the counter shards).
WITH p AS (SELECT id FROM pools WHERE name = $1)
SELECT (SELECT coalesce(sum(free), 0) FROM pool_counters pc WHERE pc.pool_id = p.id)::bigint AS remaining, now() AS now,
  w.w1, w.f1, w.w5, w.f5, w.w15, w.f15
FROM p, LATERAL (
  SELECT count(*) FILTER (WHERE c.claimed_at >= now() - interval '60 seconds')::int AS w1,
         min(c.claimed_at) FILTER (WHERE c.claimed_at >= now() - interval '60 seconds') AS f1,
         count(*) FILTER (WHERE c.claimed_at >= now() - interval '300 seconds')::int AS w5,
         min(c.claimed_at) FILTER (WHERE c.claimed_at >= now() - interval '300 seconds') AS f5,
         count(*)::int AS w15,
         min(c.claimed_at) AS f15
  FROM codes c WHERE c.pool_id = p.id AND c.claimed_at >= now() - interval '900 seconds'
) w

-- name: saleTaken
-- $1 sale id. Units ordered in the last 1, 5 and 15 minutes, and what is left: cap − sold −
-- unexpired holds.
SELECT
  CASE WHEN s.cap IS NULL THEN NULL ELSE s.cap - s.sold - (SELECT coalesce(sum(h.quantity), 0) FROM sale_holds h WHERE h.sale_id = s.id AND h.status = 'active' AND h.expires_at > now()) END::int AS remaining,
  now() AS now, w.w1, w.f1, w.w5, w.f5, w.w15, w.f15
FROM sales s, LATERAL (
  SELECT coalesce(sum(o.quantity) FILTER (WHERE o.created_at >= now() - interval '60 seconds'), 0)::int AS w1,
         min(o.created_at) FILTER (WHERE o.created_at >= now() - interval '60 seconds') AS f1,
         coalesce(sum(o.quantity) FILTER (WHERE o.created_at >= now() - interval '300 seconds'), 0)::int AS w5,
         min(o.created_at) FILTER (WHERE o.created_at >= now() - interval '300 seconds') AS f5,
         coalesce(sum(o.quantity), 0)::int AS w15,
         min(o.created_at) AS f15
  FROM sale_orders o WHERE o.sale_id = s.id AND o.created_at >= now() - interval '900 seconds'
) w
WHERE s.id = $1

-- name: upsertWatch
INSERT INTO forecast_watches (kind, subject, within_ms) VALUES ($1, $2, $3)
ON CONFLICT (kind, subject) DO UPDATE SET within_ms = excluded.within_ms

-- name: deleteWatch
DELETE FROM forecast_watches WHERE kind = $1 AND subject = $2

-- name: lockWatches
-- Several processes may run the alert job: the row locks make one crossing fire once.
SELECT * FROM forecast_watches ORDER BY kind, subject FOR UPDATE

-- name: setWatch
UPDATE forecast_watches SET armed = $3, fired = $4 WHERE kind = $1 AND subject = $2

-- name: insertEvent
-- $1 type, $2 idempotency key, $3 pool (or null), $4 sale (or null), $5 payload
INSERT INTO outbox (type, idempotency_key, pool, sale, payload) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (idempotency_key) DO NOTHING
