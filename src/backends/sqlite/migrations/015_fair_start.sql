-- A fair start and a verification step for waiting rooms (src/core/sales/waiting-room.ts).
-- Admission goes by `place` instead of the arrival number: a ticket's place is its number, except
-- for the pre-queue of a fair start, placed by one seeded draw at the opening (place NULL until
-- then). The draw's seed, the pre-queue's size and the time are recorded on the room so anyone can
-- re-derive the order (src/core/sales/fair-draw.ts).

ALTER TABLE dibs_waiting_rooms ADD COLUMN fair_start INTEGER NOT NULL DEFAULT 0 CHECK (fair_start IN (0, 1));
ALTER TABLE dibs_waiting_rooms ADD COLUMN verification INTEGER NOT NULL DEFAULT 0 CHECK (verification IN (0, 1));
ALTER TABLE dibs_waiting_rooms ADD COLUMN draw_seed TEXT;
ALTER TABLE dibs_waiting_rooms ADD COLUMN pre_queue INTEGER;
ALTER TABLE dibs_waiting_rooms ADD COLUMN drawn_at TEXT;

ALTER TABLE dibs_tickets ADD COLUMN place INTEGER;
ALTER TABLE dibs_tickets ADD COLUMN verified INTEGER NOT NULL DEFAULT 1 CHECK (verified IN (0, 1));

-- rooms that existed before: their line is already in arrival order
UPDATE dibs_tickets SET place = number;
UPDATE dibs_waiting_rooms SET pre_queue = 0, drawn_at = created_at;

CREATE UNIQUE INDEX dibs_tickets_place ON dibs_tickets (sale_id, place);
-- admission takes the next waiting tickets by place
CREATE INDEX dibs_tickets_waiting ON dibs_tickets (sale_id, place) WHERE status = 'waiting';
