-- Trigger on tickets (028): keeps the room's counters of tickets by status (waiting_rooms.n_*) in
-- the statement that inserts, deletes or changes tickets, so `waitingRooms.get` reads one row
-- instead of counting the line. Statement-level over the transition tables: one update of the room
-- row per statement (admission, expiry, the sell-out sweep), however many tickets it moved; a
-- statement that moves no ticket between statuses (the draw's places) updates nothing.
CREATE OR REPLACE FUNCTION tickets_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE waiting_rooms w SET n_waiting = w.n_waiting + d.waiting, n_admitted = w.n_admitted + d.admitted,
      n_used = w.n_used + d.used, n_expired = w.n_expired + d.expired, n_sold_out = w.n_sold_out + d.sold_out
    FROM (SELECT x.sale_id, count(*) FILTER (WHERE x.status = 'waiting') AS waiting,
            count(*) FILTER (WHERE x.status = 'admitted') AS admitted, count(*) FILTER (WHERE x.status = 'used') AS used,
            count(*) FILTER (WHERE x.status = 'expired') AS expired, count(*) FILTER (WHERE x.status = 'sold_out') AS sold_out
          FROM new_rows x GROUP BY x.sale_id) d
    WHERE w.sale_id = d.sale_id;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE waiting_rooms w SET n_waiting = w.n_waiting - d.waiting, n_admitted = w.n_admitted - d.admitted,
      n_used = w.n_used - d.used, n_expired = w.n_expired - d.expired, n_sold_out = w.n_sold_out - d.sold_out
    FROM (SELECT x.sale_id, count(*) FILTER (WHERE x.status = 'waiting') AS waiting,
            count(*) FILTER (WHERE x.status = 'admitted') AS admitted, count(*) FILTER (WHERE x.status = 'used') AS used,
            count(*) FILTER (WHERE x.status = 'expired') AS expired, count(*) FILTER (WHERE x.status = 'sold_out') AS sold_out
          FROM old_rows x GROUP BY x.sale_id) d
    WHERE w.sale_id = d.sale_id;
  ELSE
    UPDATE waiting_rooms w SET n_waiting = w.n_waiting + d.waiting, n_admitted = w.n_admitted + d.admitted,
      n_used = w.n_used + d.used, n_expired = w.n_expired + d.expired, n_sold_out = w.n_sold_out + d.sold_out
    FROM (SELECT x.sale_id, coalesce(sum(x.k) FILTER (WHERE x.status = 'waiting'), 0) AS waiting,
            coalesce(sum(x.k) FILTER (WHERE x.status = 'admitted'), 0) AS admitted, coalesce(sum(x.k) FILTER (WHERE x.status = 'used'), 0) AS used,
            coalesce(sum(x.k) FILTER (WHERE x.status = 'expired'), 0) AS expired, coalesce(sum(x.k) FILTER (WHERE x.status = 'sold_out'), 0) AS sold_out
          FROM (SELECT n.sale_id, n.status, 1 AS k FROM new_rows n UNION ALL SELECT o.sale_id, o.status, -1 FROM old_rows o) x
          GROUP BY x.sale_id) d
    WHERE w.sale_id = d.sale_id
      AND (d.waiting, d.admitted, d.used, d.expired, d.sold_out) IS DISTINCT FROM (0, 0, 0, 0, 0);
  END IF;
  RETURN NULL;
END
$$;
