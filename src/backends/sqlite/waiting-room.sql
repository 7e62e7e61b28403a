-- Queries of the waiting room (waiting-room.ts). Times are ISO strings from SQLite's clock.

-- name: roomOf
SELECT * FROM dibs_waiting_rooms WHERE sale_id = ?

-- name: upsertRoom
-- the bucket starts full: the first second's worth of tickets is admitted without a wait
INSERT INTO dibs_waiting_rooms (sale_id, admit_per_second, window_ms, secret, budget, refilled_at, created_at)
VALUES (@sale, @rate, @windowMs, @secret, max(1.0, @rate), @now, @now)
ON CONFLICT (sale_id) DO UPDATE SET admit_per_second = excluded.admit_per_second, window_ms = excluded.window_ms

-- name: ticketCounts
SELECT status, count(*) AS n FROM dibs_tickets WHERE sale_id = ? GROUP BY status

-- name: ticketOf
SELECT * FROM dibs_tickets WHERE sale_id = ? AND customer = ?

-- name: takeNumber
UPDATE dibs_waiting_rooms SET next_number = next_number + 1 WHERE sale_id = ? RETURNING next_number - 1 AS number

-- name: insertTicket
INSERT INTO dibs_tickets (sale_id, number, customer, joined_at) VALUES (@sale, @number, @customer, @now)

-- name: expireWindows
-- Admitted tickets whose window passed without a reservation.
UPDATE dibs_tickets SET status = 'expired' WHERE sale_id = ? AND status = 'admitted' AND admitted_until <= ?

-- name: admittedUnused
SELECT count(*) AS n FROM dibs_tickets WHERE sale_id = ? AND status = 'admitted'

-- name: admitNext
-- The next @n tickets in arrival order (all waiting: admission never skips a number).
UPDATE dibs_tickets SET status = 'admitted', admitted_until = @until
WHERE sale_id = @sale AND number > @through AND number <= @through + @n AND status = 'waiting'

-- name: setAdmission
UPDATE dibs_waiting_rooms SET budget = @budget, refilled_at = @now, admitted_through = admitted_through + @n WHERE sale_id = @sale

-- name: closeWaiting
-- Sold out for good: everyone still waiting is told at once.
UPDATE dibs_tickets SET status = 'sold_out' WHERE sale_id = @sale AND number > @through AND status = 'waiting'

-- name: useTicket
UPDATE dibs_tickets SET status = 'used', hold_id = @hold WHERE sale_id = @sale AND number = @number

-- name: elapsedMs
SELECT (julianday(@now) - julianday(@then)) * 86400000.0 AS ms
