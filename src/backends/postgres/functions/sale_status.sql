-- The status a sale is in at now() (the same rule as core/sales/rules.ts saleStatus).
CREATE OR REPLACE FUNCTION sale_status(s sales) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN s.cancelled_at IS NOT NULL THEN 'cancelled'
    WHEN now() < s.starts_at THEN 'scheduled'
    WHEN now() >= s.ends_at THEN 'ended'
    WHEN s.cap IS NOT NULL AND s.sold >= s.cap THEN 'sold_out'
    ELSE 'live'
  END
$$;
