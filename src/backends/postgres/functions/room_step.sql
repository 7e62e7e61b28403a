-- One admission step for a sale, server-side so the sale row is locked for one statement, not for
-- a dozen client round trips (with thousands polling one line, round trips under the lock made the
-- queue slower than the admission window). Mirrors core/sales/waiting-room.ts `admissions()`:
-- expire unused windows, refill the token bucket (at most one second's worth, at least 1), admit
-- the next tickets in number order while units remain ((cap − sold − held − admitted-unused ×
-- limit) / limit, rounded up), close the line when the sale is over or sold out.
-- p_customer/p_join: join the line first (one ticket per customer) and return that ticket too.
-- Returns nothing when the sale or its room does not exist.
CREATE OR REPLACE FUNCTION room_step(p_sale text, p_customer text DEFAULT NULL, p_join boolean DEFAULT false)
RETURNS TABLE (sale_id text, admit_per_second double precision, window_ms integer, secret text,
               admitted_through bigint, created_at timestamptz,
               number bigint, customer text, status text, admitted_until timestamptz, hold_id text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  r waiting_rooms%ROWTYPE;
  t tickets%ROWTYPE;
  st text;
  unused integer;
  bucket double precision;
  slots bigint;
  n bigint;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  IF NOT FOUND THEN RETURN; END IF;
  IF p_join AND NOT EXISTS (SELECT 1 FROM tickets WHERE sale_id = p_sale AND customer = p_customer) THEN
    UPDATE waiting_rooms SET next_number = next_number + 1 WHERE sale_id = p_sale RETURNING * INTO r;
    INSERT INTO tickets (sale_id, number, customer) VALUES (p_sale, r.next_number - 1, p_customer);
  END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
    SELECT * INTO s FROM sales WHERE id = p_sale;
  END IF;
  UPDATE tickets SET status = 'expired' WHERE sale_id = p_sale AND status = 'admitted' AND admitted_until <= now();
  st := sale_status(s);
  IF st IN ('ended', 'cancelled') OR (s.cap IS NOT NULL AND s.sold >= s.cap) THEN
    UPDATE tickets SET status = 'sold_out' WHERE sale_id = p_sale AND number > r.admitted_through AND status = 'waiting';
  ELSIF st = 'live' THEN
    SELECT count(*) INTO unused FROM tickets WHERE sale_id = p_sale AND status = 'admitted';
    bucket := least(greatest(1.0, r.admit_per_second), r.budget + greatest(0, extract(epoch FROM now() - r.refilled_at)) * r.admit_per_second);
    slots := greatest(0, ceil((s.cap - s.sold - s.held - unused * s.per_customer_limit)::double precision / s.per_customer_limit));
    n := greatest(0, least(floor(bucket)::bigint, slots, r.next_number - 1 - r.admitted_through));
    IF n > 0 THEN
      UPDATE tickets SET status = 'admitted', admitted_until = now() + make_interval(secs => r.window_ms / 1000.0)
      WHERE sale_id = p_sale AND number > r.admitted_through AND number <= r.admitted_through + n AND status = 'waiting';
    END IF;
    UPDATE waiting_rooms SET budget = bucket - n, refilled_at = now(), admitted_through = admitted_through + n
    WHERE sale_id = p_sale RETURNING * INTO r;
  END IF;
  IF p_customer IS NOT NULL THEN
    SELECT * INTO t FROM tickets WHERE sale_id = p_sale AND customer = p_customer;
  END IF;
  RETURN QUERY SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
                      t.number, t.customer, t.status, t.admitted_until, t.hold_id;
END
$$;
