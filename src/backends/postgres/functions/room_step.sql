-- One admission step for a sale, server-side so the sale row is locked for one statement, not for
-- a dozen client round trips (with thousands polling one line, round trips under the lock made the
-- queue slower than the admission window). Mirrors core/sales/waiting-room.ts `admissions()`:
-- expire unused windows, make the opening's draw (room_draw) at the first step the sale is live,
-- refill the token bucket (at most one second's worth, at least 1), admit the next waiting tickets
-- by place while units remain ((cap − sold − held − admitted-unused × limit) / limit, rounded up) —
-- with verification on, only verified ones — and close the line when the sale is over or sold out.
-- p_customer/p_join: join the line first (one ticket per customer; after the draw, so a newcomer
-- after the opening is not in the pre-queue) and return that ticket too.
-- Returns nothing when the sale or its room does not exist.
DROP FUNCTION IF EXISTS room_step(text, text, boolean);
CREATE OR REPLACE FUNCTION room_step(p_sale text, p_customer text DEFAULT NULL, p_join boolean DEFAULT false)
RETURNS TABLE (sale_id text, admit_per_second double precision, window_ms integer, secret text,
               admitted_through bigint, created_at timestamptz,
               fair_start boolean, verification boolean, draw_seed text, pre_queue bigint,
               drawn_at timestamptz, joined bigint,
               number bigint, customer text, status text, admitted_until timestamptz, hold_id text,
               place bigint, verified boolean)
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
  m bigint := 0;
  top bigint := 0;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  IF NOT FOUND THEN RETURN; END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
    SELECT * INTO s FROM sales WHERE id = p_sale;
  END IF;
  st := sale_status(s);
  IF st = 'live' AND r.drawn_at IS NULL THEN
    PERFORM room_draw(p_sale, r.fair_start, r.next_number - 1);
    SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  END IF;
  IF p_join AND NOT EXISTS (SELECT 1 FROM tickets WHERE sale_id = p_sale AND customer = p_customer) THEN
    UPDATE waiting_rooms SET next_number = next_number + 1 WHERE sale_id = p_sale RETURNING * INTO r;
    INSERT INTO tickets (sale_id, number, customer, place, verified)
    VALUES (p_sale, r.next_number - 1, p_customer,
            CASE WHEN r.fair_start AND r.drawn_at IS NULL THEN NULL ELSE r.next_number - 1 END,
            NOT r.verification);
  END IF;
  UPDATE tickets SET status = 'expired' WHERE sale_id = p_sale AND status = 'admitted' AND admitted_until <= now();
  IF st IN ('ended', 'cancelled') OR (s.cap IS NOT NULL AND s.sold >= s.cap) THEN
    UPDATE tickets SET status = 'sold_out' WHERE sale_id = p_sale AND status = 'waiting';
  ELSIF st = 'live' THEN
    SELECT count(*) INTO unused FROM tickets WHERE sale_id = p_sale AND status = 'admitted';
    bucket := least(greatest(1.0, r.admit_per_second), r.budget + greatest(0, extract(epoch FROM now() - r.refilled_at)) * r.admit_per_second);
    slots := greatest(0, ceil((s.cap - s.sold - s.held - unused * s.per_customer_limit)::double precision / s.per_customer_limit));
    n := greatest(0, least(floor(bucket)::bigint, slots));
    IF n > 0 THEN
      WITH admitted AS (
        UPDATE tickets SET status = 'admitted', admitted_until = now() + make_interval(secs => r.window_ms / 1000.0)
        WHERE sale_id = p_sale AND number IN (
          SELECT w.number FROM tickets w
          WHERE w.sale_id = p_sale AND w.status = 'waiting' AND w.place IS NOT NULL AND (w.verified OR NOT r.verification)
          ORDER BY w.place LIMIT n)
        RETURNING place)
      SELECT count(*), coalesce(max(place), 0) INTO m, top FROM admitted;
    END IF;
    UPDATE waiting_rooms SET budget = bucket - m, refilled_at = now(), admitted_through = greatest(admitted_through, top)
    WHERE sale_id = p_sale RETURNING * INTO r;
  END IF;
  IF p_customer IS NOT NULL THEN
    SELECT * INTO t FROM tickets WHERE sale_id = p_sale AND customer = p_customer;
  END IF;
  RETURN QUERY SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
                      r.fair_start, r.verification, r.draw_seed, r.pre_queue, r.drawn_at, r.next_number - 1,
                      t.number, t.customer, t.status, t.admitted_until, t.hold_id, t.place, t.verified;
END
$$;
