-- A fair start and a verification step for waiting rooms (src/core/sales/waiting-room.ts).
-- Admission goes by `place` instead of the arrival number: a ticket's place is its number, except
-- for the pre-queue of a fair start, placed by one seeded draw at the opening (room_draw; place
-- NULL until then). The seed, the pre-queue's size and the time are recorded on the room so anyone
-- can re-derive the order (src/core/sales/fair-draw.ts).

ALTER TABLE waiting_rooms
  ADD COLUMN fair_start   boolean     NOT NULL DEFAULT false,
  ADD COLUMN verification boolean     NOT NULL DEFAULT false,
  ADD COLUMN draw_seed    text,
  ADD COLUMN pre_queue    bigint,
  ADD COLUMN drawn_at     timestamptz;

ALTER TABLE tickets
  ADD COLUMN place    bigint,
  ADD COLUMN verified boolean NOT NULL DEFAULT true;

-- rooms that existed before: their line is already in arrival order
UPDATE tickets SET place = number;
UPDATE waiting_rooms SET pre_queue = 0, drawn_at = created_at;

CREATE UNIQUE INDEX tickets_place ON tickets (sale_id, place);
-- admission takes the next waiting tickets by place
CREATE INDEX tickets_waiting ON tickets (sale_id, place) WHERE status = 'waiting';
