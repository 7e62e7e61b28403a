-- Flash sales on PostgreSQL, and outbox delivery state for every event (pool and sale).
--
-- Concurrency design (see sales.sql):
-- - every step that changes a sale's units (buy, reserve, confirm, cancel, expire, update, cancel
--   sale) runs in one READ COMMITTED transaction that first locks the sale row (FOR UPDATE); the
--   statements after the lock see every earlier committed step, so the window, cap, per-customer
--   limit, idempotency key and hold expiry are all decided on current state, with now(); the hot
--   steps (buy, reserve, confirm) are the plpgsql functions at the end of this file, so that
--   transaction is a single statement and the lock is never held across client round trips;
-- - `sold` and `held` on the sale row move in the same transaction as the orders/holds they count,
--   and CHECK constraints make `sold <= cap` and `sold + held <= cap` (I3) impossible to break;
-- - creating/moving a sale takes a transaction advisory lock on its SKU, so two overlapping sales
--   of one SKU cannot pass the preflight side by side;
-- - activation/expiration mark the sale with a conditional UPDATE (re-checked after any wait for
--   the row lock) and write their events in the same transaction; events have unique idempotency
--   keys, so a second writer cannot add a duplicate (I7).

CREATE TABLE sales (
  id                 text        PRIMARY KEY,
  sku                text        NOT NULL,
  starts_at          timestamptz NOT NULL,
  ends_at            timestamptz NOT NULL,
  cap                integer     CHECK (cap >= 0),            -- NULL = unlimited
  per_customer_limit integer     NOT NULL CHECK (per_customer_limit >= 1),
  metadata           jsonb       NOT NULL DEFAULT '{}',
  cancelled_at       timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  sold               integer     NOT NULL DEFAULT 0 CHECK (sold >= 0),
  -- Units in holds still marked active (some may be past expiry until the next step expires them).
  held               integer     NOT NULL DEFAULT 0 CHECK (held >= 0),
  announced_at       timestamptz,
  ended_recorded_at  timestamptz,
  -- I3 by construction for capped sales: the row cannot be written with sold (or sold plus
  -- holds) over the cap, whatever the code above it does.
  CONSTRAINT sales_sold_within_cap CHECK (cap IS NULL OR sold <= cap),
  CONSTRAINT sales_committed_within_cap CHECK (cap IS NULL OR sold + held <= cap)
) WITH (fillfactor = 70);  -- the sale row is rewritten by every step: leave room for HOT updates

CREATE INDEX sales_sku ON sales (sku, starts_at);
CREATE INDEX sales_to_announce ON sales (starts_at) WHERE announced_at IS NULL AND cancelled_at IS NULL;
CREATE INDEX sales_to_end ON sales (ends_at) WHERE ended_recorded_at IS NULL;

CREATE TABLE sale_orders (
  id         text        PRIMARY KEY,
  sale_id    text        NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  customer   text        NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity >= 1),
  hold_id    text        UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX sale_orders_customer ON sale_orders (sale_id, customer);

CREATE TABLE sale_holds (
  id         text        PRIMARY KEY,
  sale_id    text        NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  customer   text        NOT NULL,
  quantity   integer     NOT NULL CHECK (quantity >= 1),
  status     text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'confirmed', 'cancelled', 'expired')),
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  order_id   text
);

-- One active hold per customer and sale: reserving again replaces it.
CREATE UNIQUE INDEX sale_holds_one_active ON sale_holds (sale_id, customer) WHERE status = 'active';
CREATE INDEX sale_holds_expiry ON sale_holds (expires_at) WHERE status = 'active';
CREATE INDEX sale_holds_sale_expiry ON sale_holds (sale_id, expires_at) WHERE status = 'active';

CREATE TABLE sale_keys (
  sale_id   text    NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  key       text    NOT NULL,
  kind      text    NOT NULL CHECK (kind IN ('buy', 'reserve')),
  customer  text    NOT NULL,
  quantity  integer NOT NULL,
  result_id text    NOT NULL,
  PRIMARY KEY (sale_id, key)
);

CREATE TABLE wishlist (
  sku        text        NOT NULL,
  customer   text        NOT NULL,
  channels   jsonb       NOT NULL,   -- { email?, webPush?, webhook? }
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sku, customer)
);

-- The outbox of 001 carries sale events too, and the delivery state of every event.
ALTER TABLE outbox
  ADD COLUMN sale            text,
  ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
  ADD COLUMN next_attempt_at timestamptz,
  ADD COLUMN locked_until    timestamptz,
  ADD COLUMN last_error      text,
  ADD COLUMN dead_at         timestamptz;

CREATE INDEX outbox_sale ON outbox (sale, id);
CREATE INDEX outbox_due ON outbox (id) WHERE delivered_at IS NULL AND dead_at IS NULL;

CREATE TABLE outbox_deliveries (
  id       bigserial   PRIMARY KEY,
  event_id bigint      NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
  attempt  integer     NOT NULL,
  ok       boolean     NOT NULL,
  detail   text        NOT NULL,
  at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_deliveries_event ON outbox_deliveries (event_id, id);

-- The hot steps as server-side functions: the whole step runs in ONE round trip, so the sale row
-- lock is held for the time the statements take, not for several client round trips (at 16
-- connections that was the difference between ~0.15× and ~0.5× raw speed). Inside a plpgsql
-- function each statement takes a fresh snapshot, so everything after the FOR UPDATE sees every
-- step committed before it, exactly like the client-side transactions of sales.ts.
