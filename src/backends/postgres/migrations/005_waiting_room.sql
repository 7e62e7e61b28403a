-- Waiting rooms for flash sales (see src/core/sales/waiting-room.ts and waiting-room.ts here).
-- Tickets are numbered per sale from next_number in the join transaction, under the sale's row
-- lock: arrival order as the server saw it. UNIQUE (sale_id, customer) makes a second ticket for
-- one customer impossible.

CREATE TABLE waiting_rooms (
  sale_id          text             PRIMARY KEY REFERENCES sales (id) ON DELETE CASCADE,
  admit_per_second double precision NOT NULL CHECK (admit_per_second > 0),
  window_ms        integer          NOT NULL CHECK (window_ms > 0),
  -- HMAC key of the tickets; never leaves the store
  secret           text             NOT NULL,
  next_number      bigint           NOT NULL DEFAULT 1,
  -- admission is strictly in number order, so tickets 1..admitted_through have been admitted and
  -- every later one still waits (until the line closes): positions and counts are O(1)
  admitted_through bigint           NOT NULL DEFAULT 0,
  -- token bucket of admissions: `budget` tickets may be admitted, refilled since `refilled_at`
  budget           double precision NOT NULL DEFAULT 0,
  refilled_at      timestamptz      NOT NULL DEFAULT now(),
  created_at       timestamptz      NOT NULL DEFAULT now()
);

CREATE TABLE tickets (
  sale_id        text        NOT NULL REFERENCES waiting_rooms (sale_id) ON DELETE CASCADE,
  number         bigint      NOT NULL,
  customer       text        NOT NULL,
  status         text        NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'admitted', 'used', 'expired', 'sold_out')),
  joined_at      timestamptz NOT NULL DEFAULT now(),
  admitted_until timestamptz,
  hold_id        text,
  PRIMARY KEY (sale_id, number),
  UNIQUE (sale_id, customer)
);

-- admitted tickets are few (bounded by the units left): their windows and count come from here
CREATE INDEX tickets_admitted ON tickets (sale_id, admitted_until) WHERE status = 'admitted';
