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
