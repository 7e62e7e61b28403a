-- Outbox delivery state (leases, retries, dead letters, delivery log), wishlists, and the
-- markers that make sale activation/expiration announce exactly once.

ALTER TABLE dibs_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_outbox ADD COLUMN next_attempt_at TEXT;
ALTER TABLE dibs_outbox ADD COLUMN locked_until TEXT;
ALTER TABLE dibs_outbox ADD COLUMN last_error TEXT;
ALTER TABLE dibs_outbox ADD COLUMN dead_at TEXT;

CREATE INDEX dibs_outbox_due ON dibs_outbox (id) WHERE delivered_at IS NULL AND dead_at IS NULL;

CREATE TABLE dibs_deliveries (
  id         INTEGER PRIMARY KEY,
  event_id   INTEGER NOT NULL REFERENCES dibs_outbox (id) ON DELETE CASCADE,
  attempt    INTEGER NOT NULL,
  ok         INTEGER NOT NULL,
  detail     TEXT    NOT NULL,
  at         TEXT    NOT NULL
) STRICT;

CREATE INDEX dibs_deliveries_event ON dibs_deliveries (event_id, id);

CREATE TABLE dibs_wishlist (
  sku        TEXT NOT NULL,
  customer   TEXT NOT NULL,
  channels   TEXT NOT NULL,   -- JSON: { email?, webPush?, webhook? }
  created_at TEXT NOT NULL,
  PRIMARY KEY (sku, customer)
) STRICT, WITHOUT ROWID;

ALTER TABLE dibs_sales ADD COLUMN announced_at TEXT;
ALTER TABLE dibs_sales ADD COLUMN ended_recorded_at TEXT;
CREATE INDEX dibs_sales_to_announce ON dibs_sales (starts_at) WHERE announced_at IS NULL AND cancelled_at IS NULL;
CREATE INDEX dibs_sales_to_end ON dibs_sales (ends_at) WHERE ended_recorded_at IS NULL;
