-- Forecasting: recent claims and orders by time, and the predicted-empty watches.
CREATE INDEX dibs_codes_claimed_at ON dibs_codes (pool_id, claimed_at) WHERE claimed_at IS NOT NULL;
CREATE INDEX dibs_orders_created_at ON dibs_orders (sale_id, created_at);

CREATE TABLE dibs_forecast_watches (
  kind      TEXT    NOT NULL CHECK (kind IN ('pool', 'sale')),
  subject   TEXT    NOT NULL,
  within_ms INTEGER NOT NULL CHECK (within_ms > 0),
  armed     INTEGER NOT NULL DEFAULT 1,
  -- how many times the alert fired: numbers the events' idempotency keys
  fired     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, subject)
) STRICT, WITHOUT ROWID;
