-- Grouped sale steps (sale-grouper.ts): the buys, reservations and confirmations of ONE sale that
-- wait in one process at the same time, served by ONE statement and so by one transaction and one
-- commit. Each request is the same server-side step as a single one (functions/sale_take.sql,
-- functions/sale_confirm.sql), called once per request in request order by sale_step_group,
-- which writes the sale row's sold/held counters once for the whole group. A plpgsql
-- function takes a fresh snapshot for each of its statements and sees the writes of the calls
-- before it in this statement, so every request is judged on the state its predecessors left
-- (cap, per-customer limit, idempotency key, holds): the rules hold exactly as if the requests
-- had come one after another. The first call takes the sale row lock; the rest already hold it.

-- name: stepGroup
-- Buys, reservations and confirmations of one sale, in request order, in one statement
-- (functions/sale_step_group.sql): a row with a hold ($7[i] not null) is a confirmation
-- (`sale_confirm`), any other a buy or reservation (`sale_take`). Confirmations group with buys
-- and reservations because every one of them locks the same sale row: one group pays the lock,
-- the sale row's write and the commit once for all.
-- $1 sale, $2 customers text[], $3 quantities int[], $4 keys text[] (null: no key), $5 ids for new
-- orders/holds text[], $6 hold TTLs in ms float8[] (null: a buy), $7 holds to confirm text[].
-- → one row per request: i (1-based position), sale_take's columns (a confirmation's key_* are
-- null), a new confirmation order's customer and quantity (sale_confirm), and the clock of the
-- step: `at` is now() (the created_at of a new order or hold), `expires_at` the expiry a new or
-- replaced hold got (the same expression as in sale_take), so the caller builds a new order or
-- hold (a confirmation's too) without reading it back.
SELECT * FROM sale_step_group($1, $2::text[], $3::int[], $4::text[], $5::text[], $6::float8[], $7::text[])

-- name: ordersByIds
-- $1 order ids text[]: the stored results of replayed keys and confirmations, read after the
-- group committed (a missing one was lost in a failover to a standby).
SELECT * FROM sale_orders WHERE id = ANY($1::text[])

-- name: holdsByIds
-- $1 hold ids text[]
SELECT * FROM sale_holds WHERE id = ANY($1::text[])

-- name: saleOfHold
-- $1 hold id → the hold's sale (it never changes), read without locking to pick the group.
SELECT sale_id FROM sale_holds WHERE id = $1
