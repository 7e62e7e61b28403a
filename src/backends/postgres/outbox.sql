-- Outbox delivery on PostgreSQL (outbox.ts): leasing due events, recording attempts. Covers every
-- event in the outbox table (pool events and sale events alike). Clock: now() only.

-- name: claimDue
-- $1 limit, $2 lease ms. SKIP LOCKED lets concurrent dispatchers take disjoint batches; a row a
-- racing dispatcher leased a moment ago is re-checked after its lock and no longer qualifies.
WITH due AS (
  SELECT id FROM outbox
  WHERE delivered_at IS NULL AND dead_at IS NULL
    AND (next_attempt_at IS NULL OR next_attempt_at <= now())
    AND (locked_until IS NULL OR locked_until <= now())
  ORDER BY id LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET locked_until = now() + make_interval(secs => $2::double precision / 1000)
FROM due WHERE o.id = due.id
RETURNING o.id::text, o.type, o.idempotency_key, o.payload, o.created_at, o.attempts

-- name: markDelivered
-- $1 event id, $2 detail. The attempt and its log row in one statement.
WITH e AS (
  UPDATE outbox SET delivered_at = now(), attempts = attempts + 1, locked_until = NULL, last_error = NULL
  WHERE id = $1 AND delivered_at IS NULL
  RETURNING id, attempts
)
INSERT INTO outbox_deliveries (event_id, attempt, ok, detail) SELECT id, attempts, true, $2 FROM e

-- name: markFailed
-- $1 event id, $2 detail, $3 retry in ms (null = give up: dead letter)
WITH e AS (
  UPDATE outbox
  SET attempts = attempts + 1, locked_until = NULL, last_error = $2,
      next_attempt_at = CASE WHEN $3::double precision IS NULL THEN next_attempt_at
                             ELSE now() + make_interval(secs => $3::double precision / 1000) END,
      dead_at = CASE WHEN $3::double precision IS NULL THEN now() ELSE NULL END
  WHERE id = $1 AND delivered_at IS NULL
  RETURNING id, attempts
)
INSERT INTO outbox_deliveries (event_id, attempt, ok, detail) SELECT id, attempts, false, $2 FROM e

-- name: deliveries
SELECT attempt, ok, detail, at FROM outbox_deliveries WHERE event_id = $1 ORDER BY id

-- name: status
SELECT
  count(*) FILTER (WHERE delivered_at IS NULL AND dead_at IS NULL)::int AS pending,
  count(*) FILTER (WHERE delivered_at IS NOT NULL)::int AS delivered,
  count(*) FILTER (WHERE dead_at IS NOT NULL)::int AS dead,
  COALESCE(floor(extract(epoch FROM now() - min(created_at) FILTER (WHERE delivered_at IS NULL AND dead_at IS NULL)) * 1000), 0)::bigint::text AS oldest_ms
FROM outbox

-- name: deadLetters
-- $1 limit. Dead letters are few (an operator's to-do list); no index: a scan, newest dead first.
SELECT id::text, type, created_at, attempts, COALESCE(last_error, '') AS last_error, dead_at
FROM outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, id DESC LIMIT $1

-- name: retryNow
-- $1 event id. A dead or backed-off event becomes due now; its attempts and log stay (one more
-- failure after the budget is spent dead-letters it again). The row lock orders this with a
-- dispatcher's markDelivered/markFailed; the outcome says what was found.
WITH e AS (SELECT id, delivered_at, locked_until > now() AS leased FROM outbox WHERE id = $1 FOR UPDATE),
u AS (
  UPDATE outbox o SET dead_at = NULL, next_attempt_at = NULL, locked_until = NULL
  FROM e WHERE o.id = e.id AND e.delivered_at IS NULL AND e.leased IS NOT TRUE
  RETURNING o.id
)
SELECT CASE WHEN e.delivered_at IS NOT NULL THEN 'delivered'
            WHEN e.leased THEN 'leased' ELSE 'queued' END AS outcome
FROM e
