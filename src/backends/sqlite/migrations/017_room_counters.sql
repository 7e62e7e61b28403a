-- Counters of a waiting room's tickets by status. `waitingRooms.get` read the room's status by
-- counting every ticket (GROUP BY status: O(tickets) on every status read); it now reads one row.
-- Triggers keep the counters in the same transaction as every ticket's insert, status change or
-- deletion, so no statement has to remember to; the sale audit checks them against the tickets (I4).
ALTER TABLE dibs_waiting_rooms ADD COLUMN n_waiting INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_waiting_rooms ADD COLUMN n_admitted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_waiting_rooms ADD COLUMN n_used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_waiting_rooms ADD COLUMN n_expired INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dibs_waiting_rooms ADD COLUMN n_sold_out INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER dibs_tickets_count_insert AFTER INSERT ON dibs_tickets
BEGIN
  UPDATE dibs_waiting_rooms SET
    n_waiting = n_waiting + (NEW.status = 'waiting'),
    n_admitted = n_admitted + (NEW.status = 'admitted'),
    n_used = n_used + (NEW.status = 'used'),
    n_expired = n_expired + (NEW.status = 'expired'),
    n_sold_out = n_sold_out + (NEW.status = 'sold_out')
  WHERE sale_id = NEW.sale_id;
END;

CREATE TRIGGER dibs_tickets_count_update AFTER UPDATE OF status ON dibs_tickets
WHEN OLD.status <> NEW.status
BEGIN
  UPDATE dibs_waiting_rooms SET
    n_waiting = n_waiting + (NEW.status = 'waiting') - (OLD.status = 'waiting'),
    n_admitted = n_admitted + (NEW.status = 'admitted') - (OLD.status = 'admitted'),
    n_used = n_used + (NEW.status = 'used') - (OLD.status = 'used'),
    n_expired = n_expired + (NEW.status = 'expired') - (OLD.status = 'expired'),
    n_sold_out = n_sold_out + (NEW.status = 'sold_out') - (OLD.status = 'sold_out')
  WHERE sale_id = NEW.sale_id;
END;

CREATE TRIGGER dibs_tickets_count_delete AFTER DELETE ON dibs_tickets
BEGIN
  UPDATE dibs_waiting_rooms SET
    n_waiting = n_waiting - (OLD.status = 'waiting'),
    n_admitted = n_admitted - (OLD.status = 'admitted'),
    n_used = n_used - (OLD.status = 'used'),
    n_expired = n_expired - (OLD.status = 'expired'),
    n_sold_out = n_sold_out - (OLD.status = 'sold_out')
  WHERE sale_id = OLD.sale_id;
END;

-- rooms that existed before: counted once, from their tickets
UPDATE dibs_waiting_rooms SET
  n_waiting = (SELECT count(*) FROM dibs_tickets t WHERE t.sale_id = dibs_waiting_rooms.sale_id AND t.status = 'waiting'),
  n_admitted = (SELECT count(*) FROM dibs_tickets t WHERE t.sale_id = dibs_waiting_rooms.sale_id AND t.status = 'admitted'),
  n_used = (SELECT count(*) FROM dibs_tickets t WHERE t.sale_id = dibs_waiting_rooms.sale_id AND t.status = 'used'),
  n_expired = (SELECT count(*) FROM dibs_tickets t WHERE t.sale_id = dibs_waiting_rooms.sale_id AND t.status = 'expired'),
  n_sold_out = (SELECT count(*) FROM dibs_tickets t WHERE t.sale_id = dibs_waiting_rooms.sale_id AND t.status = 'sold_out');
