-- The cart audit (carts.sql auditCartLines) starts from the carts with a line on one sale. No index
-- led by sale_id covered holds in any status (the sale_id indexes are partial on active holds), so
-- the planner read every cart line of every sale through sale_holds_cart and filtered them by sale:
-- 9-40 ms for one sale among 53 with 500,000 holds, 5,000 of them cart lines, against 0.6-2 ms with
-- this index. Partial on cart lines: holds outside carts (reservations, the bulk) never enter it,
-- so their inserts and status changes pay nothing for it. cart_id rides along for index-only scans.
CREATE INDEX sale_holds_sale_cart ON sale_holds (sale_id, cart_id) WHERE cart_id IS NOT NULL;
