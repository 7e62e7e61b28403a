-- Counters of a waiting room's tickets by status. `waitingRooms.get` read the room's status by
-- counting every ticket (GROUP BY status: O(tickets) on every status read); it now reads one row.
-- A statement-level trigger (tickets_count, functions/tickets_count.sql) keeps them in every
-- statement that inserts, deletes or changes tickets, so no statement has to remember to; the sale
-- audit checks them against the tickets (I4). The function is created here for the trigger; its
-- file keeps it from now on.
ALTER TABLE waiting_rooms
  ADD COLUMN n_waiting  bigint NOT NULL DEFAULT 0,
  ADD COLUMN n_admitted bigint NOT NULL DEFAULT 0,
  ADD COLUMN n_used     bigint NOT NULL DEFAULT 0,
  ADD COLUMN n_expired  bigint NOT NULL DEFAULT 0,
  ADD COLUMN n_sold_out bigint NOT NULL DEFAULT 0;

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

CREATE TRIGGER tickets_count_insert AFTER INSERT ON tickets REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tickets_count();
CREATE TRIGGER tickets_count_update AFTER UPDATE ON tickets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tickets_count();
CREATE TRIGGER tickets_count_delete AFTER DELETE ON tickets REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tickets_count();

-- rooms that existed before: counted once, from their tickets
UPDATE waiting_rooms w SET n_waiting = c.waiting, n_admitted = c.admitted, n_used = c.used, n_expired = c.expired,
  n_sold_out = c.sold_out
FROM (SELECT sale_id, count(*) FILTER (WHERE status = 'waiting') AS waiting, count(*) FILTER (WHERE status = 'admitted') AS admitted,
        count(*) FILTER (WHERE status = 'used') AS used, count(*) FILTER (WHERE status = 'expired') AS expired,
        count(*) FILTER (WHERE status = 'sold_out') AS sold_out
      FROM tickets GROUP BY sale_id) c
WHERE w.sale_id = c.sale_id;
