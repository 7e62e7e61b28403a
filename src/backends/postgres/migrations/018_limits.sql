-- Rate limits and quotas shared by every instance: their tables. The decision is
-- functions/limit_decide.sql (a line-by-line port of src/core/limits/rules.ts `decide`) and
-- functions/limit_take.sql (one atomic step, by the server's clock read after the row lock).

CREATE TABLE limit_definitions (
  name text PRIMARY KEY,
  definition jsonb NOT NULL
);

-- One row per (limit, key): GCRA's theoretical arrival time, or a window's bucket counts
-- (counts[1] belongs to bucket `base`). `last_ms`: the latest clock an admission was judged at,
-- so time never goes back for a key (a clock step, a failover to a standby with another clock).
CREATE TABLE limit_state (
  name text NOT NULL,
  key text NOT NULL,
  shape text NOT NULL,
  last_ms double precision NOT NULL,
  tat_ms double precision NOT NULL,
  base bigint NOT NULL,
  counts bigint[] NOT NULL,
  idle_at_ms double precision NOT NULL,
  PRIMARY KEY (name, key)
);

CREATE INDEX limit_state_idle ON limit_state (idle_at_ms);
