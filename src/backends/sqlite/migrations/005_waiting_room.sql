-- Waiting rooms for flash sales (see src/core/sales/waiting-room.ts).
-- Tickets are numbered per sale from next_number in the join transaction: arrival order as the
-- store saw it. UNIQUE (sale_id, customer) makes a second ticket for one customer impossible.

CREATE TABLE dibs_waiting_rooms (
  sale_id          TEXT    PRIMARY KEY REFERENCES dibs_sales (id) ON DELETE CASCADE,
  admit_per_second REAL    NOT NULL CHECK (admit_per_second > 0),
  window_ms        INTEGER NOT NULL CHECK (window_ms > 0),
  -- HMAC key of the tickets; never leaves the store
  secret           TEXT    NOT NULL,
  next_number      INTEGER NOT NULL DEFAULT 1,
  -- admission is strictly in number order, so tickets 1..admitted_through have been admitted and
  -- every later one still waits (until the line closes): positions and counts are O(1)
  admitted_through INTEGER NOT NULL DEFAULT 0,
  -- token bucket of admissions: `budget` tickets may be admitted, refilled since `refilled_at`
  budget           REAL    NOT NULL DEFAULT 0,
  refilled_at      TEXT    NOT NULL,
  created_at       TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE dibs_tickets (
  sale_id        TEXT    NOT NULL REFERENCES dibs_waiting_rooms (sale_id) ON DELETE CASCADE,
  number         INTEGER NOT NULL,
  customer       TEXT    NOT NULL,
  status         TEXT    NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'admitted', 'used', 'expired', 'sold_out')),
  joined_at      TEXT    NOT NULL,
  admitted_until TEXT,
  hold_id        TEXT,
  PRIMARY KEY (sale_id, number),
  UNIQUE (sale_id, customer)
) STRICT, WITHOUT ROWID;

CREATE INDEX dibs_tickets_status ON dibs_tickets (sale_id, status, number);
-- admitted tickets are few (bounded by the units left): their windows and count come from here
CREATE INDEX dibs_tickets_admitted ON dibs_tickets (sale_id, admitted_until) WHERE status = 'admitted';
