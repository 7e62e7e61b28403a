-- Statements of the SQLite pool backend. Each block is one prepared statement; the claim and
-- the other multi-statement steps combine them inside one BEGIN IMMEDIATE transaction.

-- name: now
SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now

-- name: poolByName
SELECT * FROM dibs_pools WHERE name = ?

-- name: poolToClaim
-- The pool as a claim reads it: never_parked = 1 while no code of the pool has ever needed the
-- parked-code upkeep (migration 016), so the claim skips it.
SELECT p.*, EXISTS (SELECT 1 FROM dibs_pools_never_parked n WHERE n.pool_id = p.id) AS never_parked
FROM dibs_pools p WHERE p.name = ?

-- name: insertPool
INSERT INTO dibs_pools (name, per_claimant_limit, low_stock_threshold, metadata, starts_at, expires_at, max_redemptions, max_redemptions_per_claimant, public_codes, code_format, created_at)
VALUES (@name, @perClaimantLimit, @lowStockThreshold, @metadata, @startsAt, @expiresAt, @maxRedemptions, @maxRedemptionsPerClaimant, @publicCodes, @codeFormat, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT (name) DO NOTHING

-- name: insertNeverParked
-- A new pool has no code to park yet: its claims skip the upkeep until a trigger of migration 016
-- deletes this row.
INSERT INTO dibs_pools_never_parked (pool_id) SELECT id FROM dibs_pools WHERE name = ?

-- name: listPools
SELECT * FROM dibs_pools WHERE name > ? ORDER BY name LIMIT ?

-- name: updatePool
UPDATE dibs_pools
SET per_claimant_limit = @perClaimantLimit, low_stock_threshold = @lowStockThreshold, metadata = @metadata,
    starts_at = @startsAt, expires_at = @expiresAt,
    max_redemptions = @maxRedemptions, max_redemptions_per_claimant = @maxRedemptionsPerClaimant, public_codes = @publicCodes, code_format = @codeFormat,
    low_stock_armed = CASE WHEN @lowStockThreshold IS NULL OR free > @lowStockThreshold THEN 1 ELSE low_stock_armed END
WHERE id = @id

-- name: maxHeldByOneClaimant
SELECT COALESCE(MAX(n), 0) AS n FROM (SELECT COUNT(*) AS n FROM dibs_codes WHERE pool_id = ? AND claimant IS NOT NULL GROUP BY claimant)

-- name: deletePool
DELETE FROM dibs_pools WHERE id = ?

-- name: deletePoolEvents
DELETE FROM dibs_outbox WHERE pool = ?

-- name: insertCodes
-- @codes: the batch as one JSON array of [code, startsAt, expiresAt] (ISO UTC, null = open on that
-- side), inserted in array order, so ids follow the file (export order = import order). One
-- statement per batch, not one per code: binding and stepping a statement per code was most of an
-- import's time. A code the pool already has (or that comes earlier in the batch) is skipped, and
-- so is one the pool has as a multi-use code. A code outside its window is parked at once
-- (migration 012: expired for good, or until its window opens).
INSERT INTO dibs_codes (pool_id, code, starts_at, expires_at, parked_until)
SELECT @pool, c.code, c.starts_at, c.expires_at,
  CASE WHEN c.expires_at <= @now THEN 'infinity' WHEN c.starts_at > @now THEN c.starts_at END
FROM (SELECT e.value ->> 0 AS code, e.value ->> 1 AS starts_at, e.value ->> 2 AS expires_at FROM json_each(@codes) e) c
WHERE NOT EXISTS (SELECT 1 FROM dibs_multi_codes WHERE pool_id = @pool AND code = c.code)
ON CONFLICT (pool_id, code) DO NOTHING

-- name: addFree
UPDATE dibs_pools
SET total = total + @n, free = free + @n,
    low_stock_armed = CASE WHEN low_stock_threshold IS NULL OR free + @n > low_stock_threshold THEN 1 ELSE low_stock_armed END
WHERE id = @id

-- name: claimKey
SELECT claimant, count FROM dibs_claim_keys WHERE pool_id = ? AND key = ?

-- name: insertClaimKey
INSERT INTO dibs_claim_keys (pool_id, key, claimant, count, created_at) VALUES (?, ?, ?, ?, ?)

-- name: deleteClaimKey
DELETE FROM dibs_claim_keys WHERE pool_id = ? AND key = ?

-- name: codesOfKey
SELECT code FROM dibs_codes WHERE pool_id = ? AND claim_key = ? AND claimant = ? ORDER BY claimed_at, id

-- name: heldCodes
SELECT * FROM dibs_codes WHERE pool_id = ? AND claimant = ? ORDER BY claimed_at, id

-- name: unparkDue
-- Parked codes whose hold has lapsed or whose window has opened go back among the free codes
-- claims look at: a bounded batch, oldest first (migration 012).
UPDATE dibs_codes SET parked_until = NULL
WHERE id IN (SELECT id FROM dibs_codes WHERE pool_id = @pool AND parked_until IS NOT NULL AND parked_until <= @now
             ORDER BY parked_until LIMIT @batch)

-- name: parkExpired
-- Free codes that expired while unparked leave them for good (a bounded batch).
UPDATE dibs_codes SET parked_until = 'infinity'
WHERE id IN (SELECT id FROM dibs_codes WHERE pool_id = @pool AND status = 'free' AND parked_until IS NULL
               AND expires_at IS NOT NULL AND expires_at <= @now LIMIT @batch)

-- name: takeFree
-- Free codes that may be handed out now: not parked (012), and — for the few a claim has not yet
-- parked — no live checkout hold, inside the code's own window.
SELECT id, code FROM dibs_codes
WHERE pool_id = @pool AND status = 'free' AND parked_until IS NULL
  AND (hold_until IS NULL OR hold_until <= @now)
  AND (starts_at IS NULL OR starts_at <= @now) AND (expires_at IS NULL OR expires_at > @now)
ORDER BY id LIMIT @n

-- name: markClaimed
-- A lapsed checkout hold ends here (claims skip live ones), as every other state change ends one.
UPDATE dibs_codes SET status = 'claimed', claimant = @claimant, claim_key = @key, claimed_at = @now, hold_claimant = NULL, hold_until = NULL
WHERE id = @id AND status = 'free'

-- name: moveCounters
UPDATE dibs_pools
SET free = free + @free, claimed = claimed + @claimed, redeemed = redeemed + @redeemed, revoked = revoked + @revoked,
    low_stock_armed = CASE WHEN low_stock_threshold IS NULL OR free + @free > low_stock_threshold THEN 1 ELSE low_stock_armed END
WHERE id = @id
RETURNING free, low_stock_threshold, low_stock_armed, low_stock_events

-- name: fireLowStock
UPDATE dibs_pools SET low_stock_armed = 0, low_stock_events = low_stock_events + 1 WHERE id = ? RETURNING low_stock_events

-- name: insertEvent
INSERT INTO dibs_outbox (type, idempotency_key, pool, payload, created_at) VALUES (@type, @key, @pool, @payload, @now)
ON CONFLICT (idempotency_key) DO NOTHING

-- name: codeByValue
SELECT * FROM dibs_codes WHERE pool_id = ? AND code = ?

-- name: setCodeState
-- Every state change ends a checkout hold (a redeem by its claimant consumes it). It unparks the
-- code too (only a free code may be parked): a code released back to free is parked again, if it
-- must be, by the trigger of migration 012.
UPDATE dibs_codes SET status = @status, claimant = @claimant, claim_key = @claimKey, claimed_at = @claimedAt, redeemed_at = @redeemedAt, redeemed_order = @order,
  hold_claimant = NULL, hold_until = NULL, parked_until = NULL
WHERE id = @id

-- name: exportAll
SELECT * FROM dibs_codes WHERE pool_id = ? AND id > ? ORDER BY id LIMIT ?

-- name: exportByStatus
SELECT * FROM dibs_codes WHERE pool_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?

-- name: countByStatus
SELECT status, COUNT(*) AS n FROM dibs_codes WHERE pool_id = ? GROUP BY status

-- name: claimantsOverLimit
SELECT claimant, COUNT(*) AS n FROM dibs_codes WHERE pool_id = ? AND claimant IS NOT NULL GROUP BY claimant HAVING COUNT(*) > ?

-- name: holderMismatch
SELECT code, status, claimant FROM dibs_codes
WHERE pool_id = ? AND ((claimant IS NOT NULL) <> (status IN ('claimed', 'redeemed')))
LIMIT 100

-- name: keysWithForeignCodes
SELECT k.key, k.claimant, c.code, c.claimant AS holder FROM dibs_claim_keys k
JOIN dibs_codes c ON c.pool_id = k.pool_id AND c.claim_key = k.key
WHERE k.pool_id = ? AND c.claimant IS NOT k.claimant
LIMIT 100

-- name: lowStockEventCount
SELECT COUNT(*) AS n FROM dibs_outbox WHERE type = 'pool.low_stock' AND pool = ?

-- name: eventsAfter
SELECT * FROM dibs_outbox WHERE id > ? ORDER BY id LIMIT ?

-- name: poolEventsAfter
SELECT * FROM dibs_outbox WHERE pool = ? AND id > ? ORDER BY id LIMIT ?

-- name: redeemedBy
-- Codes of the pool a claimant has redeemed (for maxRedemptionsPerClaimant).
SELECT count(*) AS n FROM dibs_codes WHERE pool_id = ? AND claimant = ? AND status = 'redeemed'

-- name: setHold
-- @until NULL ends the hold.
UPDATE dibs_codes SET hold_claimant = @claimant, hold_until = @until WHERE id = @id

-- name: setCodeWindow
UPDATE dibs_codes SET starts_at = @startsAt, expires_at = @expiresAt WHERE id = @id

-- name: multiByValue
SELECT * FROM dibs_multi_codes WHERE pool_id = ? AND code = ?

-- name: insertMulti
INSERT INTO dibs_multi_codes (pool_id, code, max_uses, per_claimant, starts_at, expires_at, created_at)
SELECT @pool, @code, @uses, @perClaimant, @startsAt, @expiresAt, @now
WHERE NOT EXISTS (SELECT 1 FROM dibs_codes WHERE pool_id = @pool AND code = @code)
ON CONFLICT (pool_id, code) DO NOTHING

-- name: setMultiWindow
UPDATE dibs_multi_codes SET starts_at = @startsAt, expires_at = @expiresAt WHERE pool_id = @pool AND code = @code

-- name: moveUses
UPDATE dibs_multi_codes SET uses = uses + @n WHERE pool_id = @pool AND code = @code

-- name: useOfOrder
SELECT * FROM dibs_code_uses WHERE pool_id = ? AND code = ? AND order_id = ?

-- name: usesByClaimant
SELECT count(*) AS n FROM dibs_code_uses WHERE pool_id = ? AND code = ? AND claimant = ?

-- name: insertUse
INSERT INTO dibs_code_uses (pool_id, code, order_id, claimant, used_at) VALUES (@pool, @code, @order, @claimant, @now)

-- name: deleteUse
DELETE FROM dibs_code_uses WHERE pool_id = ? AND code = ? AND order_id = ?

-- name: holdMismatch
-- A hold only on a code that can still be redeemed, and a claimed code's hold is its holder's.
SELECT code, status, claimant, hold_claimant FROM dibs_codes
WHERE pool_id = ? AND hold_claimant IS NOT NULL AND (status NOT IN ('free', 'claimed') OR (status = 'claimed' AND hold_claimant <> claimant))
LIMIT 100

-- name: multiUseMismatch
-- Multi-use codes whose counter differs from their recorded uses, or whose uses exceed the limit.
SELECT m.code, m.uses, m.max_uses, (SELECT count(*) FROM dibs_code_uses u WHERE u.pool_id = m.pool_id AND u.code = m.code) AS recorded
FROM dibs_multi_codes m WHERE m.pool_id = ?
  AND (m.uses <> (SELECT count(*) FROM dibs_code_uses u WHERE u.pool_id = m.pool_id AND u.code = m.code) OR m.uses > m.max_uses)
LIMIT 100

-- name: multiUseOverClaimant
SELECT u.code, u.claimant, count(*) AS n, m.per_claimant FROM dibs_code_uses u
JOIN dibs_multi_codes m ON m.pool_id = u.pool_id AND m.code = u.code
WHERE u.pool_id = ? AND u.claimant IS NOT NULL AND m.per_claimant IS NOT NULL
GROUP BY u.code, u.claimant HAVING count(*) > m.per_claimant
LIMIT 100

