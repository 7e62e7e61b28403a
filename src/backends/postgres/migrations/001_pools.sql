-- Coupon pools on PostgreSQL. Runs with search_path set to dibs' schema (default `dibs`), so
-- every name below lives in that schema.
--
-- Concurrency design (see claim.sql):
-- - free codes are found through a partial index on (pool_id, rnd): each claim starts at a random
--   point and takes rows with FOR UPDATE SKIP LOCKED, so concurrent claims spread out instead of
--   queueing on the first free row;
-- - a claimant's holdings occupy slots 1..perClaimantLimit, and UNIQUE (pool_id, claimant, slot)
--   makes a holding beyond the limit impossible even for two racing claims of one claimant;
-- - idempotency keys are rows with PRIMARY KEY (pool_id, key): a racing second use fails and retries;
-- - counters are sharded rows (pool_counters) summed on read, so claims never queue on one hot row.

CREATE TABLE pools (
  id                  bigserial PRIMARY KEY,
  name                text    NOT NULL UNIQUE,
  per_claimant_limit  integer NOT NULL CHECK (per_claimant_limit >= 1),
  low_stock_threshold integer CHECK (low_stock_threshold >= 0),
  metadata            jsonb   NOT NULL DEFAULT '{}',
  created_at          timestamptz NOT NULL DEFAULT now(),
  counter_shards      integer NOT NULL CHECK (counter_shards >= 1),
  -- true while free is above the threshold; the step that takes free to/below it fires the
  -- low-stock event and clears it; a step that lifts free above it re-arms it.
  low_stock_armed     boolean NOT NULL DEFAULT true,
  low_stock_events    integer NOT NULL DEFAULT 0
);

CREATE TABLE pool_counters (
  pool_id  bigint  NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
  shard    integer NOT NULL,
  -- a single shard may go negative (a code claimed through shard 3 and released through shard 7);
  -- only the sum over a pool's shards means anything, and it is exact.
  total    bigint  NOT NULL DEFAULT 0,
  free     bigint  NOT NULL DEFAULT 0,
  claimed  bigint  NOT NULL DEFAULT 0,
  redeemed bigint  NOT NULL DEFAULT 0,
  revoked  bigint  NOT NULL DEFAULT 0,
  PRIMARY KEY (pool_id, shard)
) WITH (fillfactor = 50);  -- room for HOT updates: counter rows are rewritten on every claim

CREATE TABLE codes (
  id          bigserial PRIMARY KEY,   -- import order (export order)
  pool_id     bigint   NOT NULL REFERENCES pools (id) ON DELETE CASCADE,
  code        text     NOT NULL,
  status      text     NOT NULL DEFAULT 'free' CHECK (status IN ('free', 'claimed', 'redeemed', 'revoked')),
  rnd         double precision NOT NULL DEFAULT random(),  -- claim order: random, spreads contention
  claimant    text,
  slot        integer,
  claim_key   text,
  claimed_at  timestamptz,
  redeemed_at timestamptz,
  UNIQUE (pool_id, code),
  -- I1 by construction: a code has a holder (and a slot) exactly when it is claimed or redeemed.
  CHECK ((claimant IS NOT NULL) = (status IN ('claimed', 'redeemed'))),
  CHECK ((slot IS NOT NULL) = (claimant IS NOT NULL))
);

CREATE INDEX codes_free ON codes (pool_id, rnd) WHERE status = 'free';
-- I2 by construction: one code per (claimant, slot), slots 1..perClaimantLimit.
CREATE UNIQUE INDEX codes_holder_slot ON codes (pool_id, claimant, slot) WHERE claimant IS NOT NULL;
CREATE INDEX codes_claim_key ON codes (pool_id, claim_key) WHERE claim_key IS NOT NULL;

-- No foreign key to pools on purpose: the FK check would take a KEY SHARE lock on the pool row
-- in every keyed claim, making it a hot row again. deletePool removes a pool's keys itself.
CREATE TABLE claim_keys (
  pool_id    bigint  NOT NULL,
  key        text    NOT NULL,
  claimant   text    NOT NULL,
  count      integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (pool_id, key)
);

CREATE TABLE outbox (
  id              bigserial PRIMARY KEY,
  type            text  NOT NULL,
  idempotency_key text  NOT NULL UNIQUE,
  pool            text,
  payload         jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz
);

CREATE INDEX outbox_pool ON outbox (pool, id);
