-- Rate limits and quotas shared by every process on the file (issue 27).
-- The decision is src/core/limits/rules.ts, run inside one BEGIN IMMEDIATE transaction with
-- SQLite's clock (julianday('now')); the per-key state is that module's JSON.

CREATE TABLE dibs_limits (
  name TEXT PRIMARY KEY,
  definition TEXT NOT NULL
) STRICT;

CREATE TABLE dibs_limit_state (
  name TEXT NOT NULL,
  key TEXT NOT NULL,
  state TEXT NOT NULL,
  -- when the state stops mattering (a full allowance again): idle rows are swept past it
  idle_ms REAL NOT NULL,
  PRIMARY KEY (name, key)
) STRICT;

CREATE INDEX dibs_limit_state_idle ON dibs_limit_state (idle_ms);
