-- Forecasting (src/core/forecast.ts): recent claims and orders by time, and the predicted-empty
-- watches. The claimed_at index costs each claim one more index entry (claims already rewrite
-- indexed columns, so they were never HOT updates); without it a forecast would scan the pool.
CREATE INDEX codes_claimed_at ON codes (pool_id, claimed_at) WHERE claimed_at IS NOT NULL;
CREATE INDEX sale_orders_created_at ON sale_orders (sale_id, created_at);

CREATE TABLE forecast_watches (
  kind      text    NOT NULL CHECK (kind IN ('pool', 'sale')),
  subject   text    NOT NULL,
  within_ms bigint  NOT NULL CHECK (within_ms > 0),
  armed     boolean NOT NULL DEFAULT true,
  -- how many times the alert fired: numbers the events' idempotency keys
  fired     integer NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, subject)
);
