-- Outbox delivery: leasing due events, recording attempts.

-- name: now
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now

-- name: claimDue
UPDATE dibs_outbox
SET locked_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (@leaseMs / 1000.0) || ' seconds')
WHERE id IN (
  SELECT id FROM dibs_outbox
  WHERE delivered_at IS NULL AND dead_at IS NULL
    AND (next_attempt_at IS NULL OR next_attempt_at <= @now)
    AND (locked_until IS NULL OR locked_until <= @now)
  ORDER BY id LIMIT @limit
)
RETURNING id, type, idempotency_key, payload, created_at, attempts

-- name: markDelivered
UPDATE dibs_outbox SET delivered_at = @now, attempts = attempts + 1, locked_until = NULL, last_error = NULL
WHERE id = @id AND delivered_at IS NULL
RETURNING attempts

-- name: markFailed
UPDATE dibs_outbox
SET attempts = attempts + 1, locked_until = NULL, last_error = @detail,
    next_attempt_at = CASE WHEN @retryInMs IS NULL THEN next_attempt_at
                           ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || (@retryInMs / 1000.0) || ' seconds') END,
    dead_at = CASE WHEN @retryInMs IS NULL THEN @now ELSE NULL END
WHERE id = @id AND delivered_at IS NULL
RETURNING attempts

-- name: insertDelivery
INSERT INTO dibs_deliveries (event_id, attempt, ok, detail, at) VALUES (@id, @attempt, @ok, @detail, @now)

-- name: deliveries
SELECT attempt, ok, detail, at FROM dibs_deliveries WHERE event_id = ? ORDER BY id

-- name: status
SELECT
  (SELECT COUNT(*) FROM dibs_outbox WHERE delivered_at IS NULL AND dead_at IS NULL) AS pending,
  (SELECT COUNT(*) FROM dibs_outbox WHERE delivered_at IS NOT NULL) AS delivered,
  (SELECT COUNT(*) FROM dibs_outbox WHERE dead_at IS NOT NULL) AS dead,
  (SELECT MIN(created_at) FROM dibs_outbox WHERE delivered_at IS NULL AND dead_at IS NULL) AS oldest

-- name: deadLetters
-- Dead letters are few (an operator's to-do list); no index: a scan of the outbox, newest dead first.
SELECT id, type, created_at, attempts, COALESCE(last_error, '') AS last_error, dead_at
FROM dibs_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, id DESC LIMIT @limit

-- name: retryState
SELECT delivered_at, dead_at, locked_until FROM dibs_outbox WHERE id = ?

-- name: retryNow
-- A dead or backed-off event becomes due now; its attempts and log stay (one more failure after
-- the budget is spent dead-letters it again).
UPDATE dibs_outbox SET dead_at = NULL, next_attempt_at = NULL, locked_until = NULL
WHERE id = @id AND delivered_at IS NULL AND (locked_until IS NULL OR locked_until <= @now)
