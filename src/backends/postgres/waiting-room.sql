-- Queries of the waiting room (waiting-room.ts). Admission itself is `room_step` (functions/room_step.sql):
-- one statement that locks the sale row, (joins,) admits and answers.

-- name: step
-- $1 sale, $2 customer (or null), $3 join the line first. → the room, and the customer's ticket.
SELECT * FROM room_step($1, $2, $3)

-- name: poll
-- $1 sale, $2 customer. Like step, but waits for no one: steps only if the sale row is free,
-- otherwise answers from the committed state (functions/room_poll.sql).
SELECT * FROM room_poll($1, $2)

-- name: lockSale
SELECT id, cap FROM sales WHERE id = $1 FOR UPDATE

-- name: upsertRoom
-- $1 sale, $2 admissions per second, $3 window ms, $4 secret, $5 fair start, $6 verification (null: as is). The
-- bucket starts full: the first second's worth of tickets is admitted without a wait.
INSERT INTO waiting_rooms (sale_id, admit_per_second, window_ms, secret, budget, fair_start, verification)
VALUES ($1, $2::float8, $3, $4, greatest(1.0, $2::float8), coalesce($5::boolean, false), coalesce($6::boolean, false))
-- a setting left out (null) keeps its value
ON CONFLICT (sale_id) DO UPDATE SET admit_per_second = excluded.admit_per_second, window_ms = excluded.window_ms,
  fair_start = coalesce($5::boolean, waiting_rooms.fair_start), verification = coalesce($6::boolean, waiting_rooms.verification)
RETURNING *

-- name: ticketCounts
-- the room's counters of tickets by status (migration 028: kept by the tickets_count trigger), one row
-- however long the line
SELECT n_waiting::int AS waiting, n_admitted::int AS admitted, n_used::int AS used, n_expired::int AS expired,
  n_sold_out::int AS sold_out
FROM waiting_rooms WHERE sale_id = $1

-- name: useTicket
UPDATE tickets SET status = 'used', hold_id = $3 WHERE sale_id = $1 AND number = $2

-- name: verifyTicket
UPDATE tickets SET verified = true WHERE sale_id = $1 AND number = $2
