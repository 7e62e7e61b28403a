-- Queries of the waiting room (waiting-room.ts). Times are ISO strings from SQLite's clock.

-- name: roomOf
SELECT * FROM dibs_waiting_rooms WHERE sale_id = ?

-- name: upsertRoom
-- the bucket starts full: the first second's worth of tickets is admitted without a wait
INSERT INTO dibs_waiting_rooms (sale_id, admit_per_second, window_ms, secret, budget, refilled_at, created_at, fair_start, verification)
VALUES (@sale, @rate, @windowMs, @secret, max(1.0, @rate), @now, @now, coalesce(@fair, 0), coalesce(@verification, 0))
-- a setting left out (NULL) keeps its value
ON CONFLICT (sale_id) DO UPDATE SET admit_per_second = excluded.admit_per_second, window_ms = excluded.window_ms,
  fair_start = coalesce(@fair, fair_start), verification = coalesce(@verification, verification)

-- name: ticketOf
SELECT * FROM dibs_tickets WHERE sale_id = ? AND customer = ?

-- name: takeNumber
UPDATE dibs_waiting_rooms SET next_number = next_number + 1 WHERE sale_id = ? RETURNING next_number - 1 AS number

-- name: insertTicket
-- @place: the number once the line's order is settled; NULL in a fair start's pre-queue (drawn at the opening)
INSERT INTO dibs_tickets (sale_id, number, customer, joined_at, place, verified)
VALUES (@sale, @number, @customer, @now, @place, @verified)

-- name: placeUnplaced
-- A draw in arrival order: every ticket placed at its join already has place = number; only a fair
-- start's pre-queue switched to arrival order before the opening is without one (by the places index).
UPDATE dibs_tickets SET place = number WHERE sale_id = ? AND place IS NULL

-- name: unplaceAll
-- the draw first clears every place (the unique index on places would trip over a half-done swap)
UPDATE dibs_tickets SET place = NULL WHERE sale_id = ?

-- name: placeTicket
UPDATE dibs_tickets SET place = @place WHERE sale_id = @sale AND number = @number

-- name: recordDraw
UPDATE dibs_waiting_rooms SET draw_seed = @seed, pre_queue = @size, drawn_at = @now WHERE sale_id = @sale AND drawn_at IS NULL

-- name: verifyTicket
UPDATE dibs_tickets SET verified = 1 WHERE sale_id = @sale AND number = @number

-- name: expireWindows
-- Admitted tickets whose window passed without a reservation.
UPDATE dibs_tickets SET status = 'expired' WHERE sale_id = ? AND status = 'admitted' AND admitted_until <= ?

-- name: admittedUnused
SELECT count(*) AS n FROM dibs_tickets WHERE sale_id = ? AND status = 'admitted'

-- name: admitNext
-- The next @n waiting tickets by place; with verification on, only verified ones (an unverified
-- ticket is passed over and keeps its place, so once verified it comes first).
UPDATE dibs_tickets SET status = 'admitted', admitted_until = @until
WHERE sale_id = @sale AND number IN (
  SELECT number FROM dibs_tickets
  WHERE sale_id = @sale AND status = 'waiting' AND place IS NOT NULL AND (verified = 1 OR @verification = 0)
  ORDER BY place LIMIT @n)
RETURNING place

-- name: setAdmission
UPDATE dibs_waiting_rooms SET budget = @budget, refilled_at = @now, admitted_through = @through WHERE sale_id = @sale

-- name: closeWaiting
-- Sold out for good: everyone still waiting is told at once.
-- (by the status index: without statistics SQLite would walk every ticket of the sale, on every step after the sell-out)
UPDATE dibs_tickets INDEXED BY dibs_tickets_status SET status = 'sold_out' WHERE sale_id = ? AND status = 'waiting'

-- name: useTicket
UPDATE dibs_tickets SET status = 'used', hold_id = @hold WHERE sale_id = @sale AND number = @number

-- name: elapsedMs
SELECT (julianday(@now) - julianday(@then)) * 86400000.0 AS ms
