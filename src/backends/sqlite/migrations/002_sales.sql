-- Flash sales: sales with counters, orders (the ledger of units sold), holds, idempotency keys.
-- `sold` and `held` on the sale row move in the same transaction as the orders/holds they count.

CREATE TABLE dibs_sales (
  id                 TEXT    PRIMARY KEY,
  sku                TEXT    NOT NULL,
  starts_at          TEXT    NOT NULL,
  ends_at            TEXT    NOT NULL,
  cap                INTEGER CHECK (cap >= 0),            -- NULL = unlimited
  per_customer_limit INTEGER NOT NULL CHECK (per_customer_limit >= 1),
  metadata           TEXT    NOT NULL DEFAULT '{}',
  cancelled_at       TEXT,
  created_at         TEXT    NOT NULL,
  sold               INTEGER NOT NULL DEFAULT 0 CHECK (sold >= 0),
  -- Units in holds still marked active (some may be past expiry until the next step expires them).
  held               INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  -- I3 by construction for capped sales: the row cannot be written with sold over the cap.
  CHECK (cap IS NULL OR sold <= cap)
) STRICT, WITHOUT ROWID;

CREATE INDEX dibs_sales_sku ON dibs_sales (sku, starts_at);

CREATE TABLE dibs_orders (
  id         TEXT    PRIMARY KEY,
  sale_id    TEXT    NOT NULL REFERENCES dibs_sales (id) ON DELETE CASCADE,
  customer   TEXT    NOT NULL,
  quantity   INTEGER NOT NULL CHECK (quantity >= 1),
  hold_id    TEXT    UNIQUE,
  created_at TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX dibs_orders_customer ON dibs_orders (sale_id, customer);

CREATE TABLE dibs_holds (
  id         TEXT    PRIMARY KEY,
  sale_id    TEXT    NOT NULL REFERENCES dibs_sales (id) ON DELETE CASCADE,
  customer   TEXT    NOT NULL,
  quantity   INTEGER NOT NULL CHECK (quantity >= 1),
  status     TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'confirmed', 'cancelled', 'expired')),
  expires_at TEXT    NOT NULL,
  created_at TEXT    NOT NULL,
  order_id   TEXT
) STRICT, WITHOUT ROWID;

-- One active hold per customer and sale: reserving again replaces it.
CREATE UNIQUE INDEX dibs_holds_one_active ON dibs_holds (sale_id, customer) WHERE status = 'active';
CREATE INDEX dibs_holds_expiry ON dibs_holds (expires_at) WHERE status = 'active';
CREATE INDEX dibs_holds_sale_expiry ON dibs_holds (sale_id, expires_at) WHERE status = 'active';

CREATE TABLE dibs_sale_keys (
  sale_id   TEXT    NOT NULL REFERENCES dibs_sales (id) ON DELETE CASCADE,
  key       TEXT    NOT NULL,
  kind      TEXT    NOT NULL CHECK (kind IN ('buy', 'reserve')),
  customer  TEXT    NOT NULL,
  quantity  INTEGER NOT NULL,
  result_id TEXT    NOT NULL,
  PRIMARY KEY (sale_id, key)
) STRICT, WITHOUT ROWID;

ALTER TABLE dibs_outbox ADD COLUMN sale TEXT;
CREATE INDEX dibs_outbox_sale ON dibs_outbox (sale, id);
