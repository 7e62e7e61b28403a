-- Statements of the SQLite lock backend, combined inside BEGIN IMMEDIATE transactions
-- (SQLite has one writer, so each transaction is the atomic step).
-- Clock: SQLite's julianday('now') → Unix ms (the local machine's clock).

-- name: nowMs
-- Result: { now } Unix ms.
SELECT (julianday('now') - 2440587.5) * 86400000.0 AS now

-- name: sweep
-- Params: key, now. Drops lapsed holders of one key.
DELETE FROM dibs_lock_holders WHERE key = ? AND expires_ms <= ?

-- name: holderCount
-- Params: key. Result: { n }.
SELECT COUNT(*) AS n FROM dibs_lock_holders WHERE key = ?

-- name: nextFence
-- Params: key. Result: { fence } the new, strictly larger fence = max(last + 1, the clock in
-- microseconds since 1970). If the file lost its last commits (a power loss with
-- synchronous=normal, a restored backup) the fence row lost them too; the clock has moved on
-- since, so the next fence is still above every fence handed out before. A clock that steps back
-- never makes fences go back or repeat (last + 1). ~1.8e15 < 2^53: exact as a JavaScript number.
INSERT INTO dibs_lock_fences (key, fence) VALUES (?, CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER))
ON CONFLICT (key) DO UPDATE SET fence = max(fence + 1, excluded.fence)
RETURNING fence

-- name: insertHolder
-- Params: @key, @token, @fence, @expiresMs.
INSERT INTO dibs_lock_holders (key, token, fence, expires_ms) VALUES (@key, @token, @fence, @expiresMs)

-- name: extendHolder
-- Params: @key, @token, @now, @expiresMs. Result: { fence } when the lease was live; no row otherwise.
UPDATE dibs_lock_holders SET expires_ms = @expiresMs
WHERE key = @key AND token = @token AND expires_ms > @now
RETURNING fence

-- name: deleteHolder
-- Params: @key, @token, @now. Changes = 1 only for the live owner.
DELETE FROM dibs_lock_holders WHERE key = @key AND token = @token AND expires_ms > @now

-- name: liveHolders
-- Params: key, now. Result: rows { token, fence, expires_ms } in fence order.
SELECT token, fence, expires_ms FROM dibs_lock_holders WHERE key = ? AND expires_ms > ? ORDER BY fence

-- name: lastFence
-- Params: key. Result: { fence } or no row.
SELECT fence FROM dibs_lock_fences WHERE key = ?

-- name: ticketOf
-- Params: key (the line), token, now. Result: { fence } the live ticket's number, or no row.
SELECT fence FROM dibs_lock_holders WHERE key = ? AND token = ? AND expires_ms > ?

-- name: ticketsAhead
-- Params: key (the line), now, fence (the waiter's ticket; a huge value = every ticket). Result: { n }.
SELECT COUNT(*) AS n FROM dibs_lock_holders WHERE key = ? AND expires_ms > ? AND fence < ?

-- name: listKeys
-- Params: after, limit. Keys ever granted, in key order; not the facade's bookkeeping keys (char 31).
SELECT key FROM dibs_lock_fences WHERE key > ? AND instr(key, char(31)) = 0 ORDER BY key LIMIT ?

-- name: dropTicket
-- Params: key (the line), token.
DELETE FROM dibs_lock_holders WHERE key = ? AND token = ?
