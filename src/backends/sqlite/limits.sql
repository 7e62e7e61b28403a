-- Statements of the SQLite rate-limit backend, combined inside BEGIN IMMEDIATE transactions
-- (SQLite has one writer, so each transaction is the atomic step).
-- Clock: SQLite's julianday('now') → Unix ms (the local machine's clock).

-- name: nowMs
-- Result: { now } Unix ms.
SELECT (julianday('now') - 2440587.5) * 86400000.0 AS now

-- name: insertDef
-- Params: name, definition (JSON). No change when the name exists.
INSERT INTO dibs_limits (name, definition) VALUES (?, ?) ON CONFLICT (name) DO NOTHING

-- name: updateDef
-- Params: definition (JSON), name.
UPDATE dibs_limits SET definition = ? WHERE name = ?

-- name: getDef
-- Params: name. Result: { definition } or no row.
SELECT definition FROM dibs_limits WHERE name = ?

-- name: listDefs
-- Result: { definition } by name.
SELECT definition FROM dibs_limits ORDER BY name

-- name: deleteDef
-- Params: name.
DELETE FROM dibs_limits WHERE name = ?

-- name: deleteStates
-- Params: name. Every key's state of one limit.
DELETE FROM dibs_limit_state WHERE name = ?

-- name: getState
-- Params: name, key. Result: { state } or no row.
SELECT state FROM dibs_limit_state WHERE name = ? AND key = ?

-- name: putState
-- Params: name, key, state (JSON), idle_ms.
INSERT INTO dibs_limit_state (name, key, state, idle_ms) VALUES (?, ?, ?, ?)
ON CONFLICT (name, key) DO UPDATE SET state = excluded.state, idle_ms = excluded.idle_ms

-- name: deleteState
-- Params: name, key.
DELETE FROM dibs_limit_state WHERE name = ? AND key = ?

-- name: sweepIdle
-- Params: now. A few states that no longer matter (bounded work per sweep).
DELETE FROM dibs_limit_state WHERE rowid IN (SELECT rowid FROM dibs_limit_state WHERE idle_ms < ? LIMIT 100)
