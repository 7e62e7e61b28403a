-- Expires the (locked) sale's holds past their expiry, records one hold.expired event each, takes
-- their units off the held counter; returns those units.
CREATE OR REPLACE FUNCTION sale_expire_stale(p_sale text) RETURNS integer LANGUAGE plpgsql AS $$
-- plpgsql rather than sql: its statement plans are cached for the session, and this runs in every step.
DECLARE
  units integer;
BEGIN
  -- Most steps find nothing to expire: one probe of sale_holds_sale_expiry answers that for a
  -- fraction of what starting the three writes below costs (every reserve and confirm runs this).
  -- The caller holds the sale row lock, under which alone this sale's holds change, so nothing
  -- can turn stale between the probe and the writes that the writes would not also have missed.
  IF NOT EXISTS (SELECT 1 FROM sale_holds WHERE sale_id = p_sale AND status = 'active' AND expires_at <= now()) THEN
    RETURN 0;
  END IF;
  WITH expired AS (
    UPDATE sale_holds SET status = 'expired'
    WHERE sale_id = p_sale AND status = 'active' AND expires_at <= now()
    RETURNING id, sale_id, customer, quantity, expires_at
  ), events AS (
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    SELECT 'hold.expired', 'hold.expired:' || id, sale_id,
           jsonb_build_object('sale', sale_id, 'hold', id, 'customer', customer, 'quantity', quantity, 'expiresAt', iso_utc(expires_at))
    FROM expired ORDER BY expires_at, id
    ON CONFLICT (idempotency_key) DO NOTHING
  ), moved AS (
    UPDATE sales s SET held = s.held - x.units
    FROM (SELECT sum(quantity)::int AS units FROM expired) x
    WHERE s.id = p_sale AND x.units > 0
  )
  SELECT COALESCE(sum(quantity), 0)::int INTO units FROM expired;
  RETURN units;
END
$$;
