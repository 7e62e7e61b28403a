-- A ticket poll that never queues on the sale row. room_step locks the sale row; with thousands
-- of shoppers polling, a line for that lock grows faster than it drains. Admission needs one
-- stepper at a time, not every poller: room_poll takes the lock only if it is free (SKIP LOCKED)
-- and then runs the full step; otherwise someone else is stepping right now and the poller gets
-- the ticket as committed, read without a lock. Admission order is unchanged — tickets are still
-- admitted only by room_step, under the lock, in number order.
DROP FUNCTION IF EXISTS room_poll(text, text);
CREATE OR REPLACE FUNCTION room_poll(p_sale text, p_customer text)
RETURNS TABLE (sale_id text, admit_per_second double precision, window_ms integer, secret text,
               admitted_through bigint, created_at timestamptz,
               fair_start boolean, verification boolean, draw_seed text, pre_queue bigint,
               drawn_at timestamptz, joined bigint,
               number bigint, customer text, status text, admitted_until timestamptz, hold_id text,
               place bigint, verified boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    -- the lock is ours until the statement ends; room_step's own FOR UPDATE is re-entrant
    RETURN QUERY SELECT * FROM room_step(p_sale, p_customer, false);
    RETURN;
  END IF;
  -- Someone holds the lock (or the sale does not exist: then no room row matches either).
  -- A window that ran out is reported as expired, as the next step will record it.
  RETURN QUERY
    SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
           r.fair_start, r.verification, r.draw_seed, r.pre_queue, r.drawn_at, r.next_number - 1,
           t.number, t.customer,
           CASE WHEN t.status = 'admitted' AND t.admitted_until <= now() THEN 'expired' ELSE t.status END,
           t.admitted_until, t.hold_id, t.place, t.verified
    FROM waiting_rooms r
    LEFT JOIN tickets t ON t.sale_id = r.sale_id AND t.customer = p_customer
    WHERE r.sale_id = p_sale;
END
$$;
