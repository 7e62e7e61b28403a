-- Adds to a (locked) sale's sold and held counters. Inside sale_step_group for this sale (the
-- transaction-local setting dibs.sale_defer names it) the amounts are only added up, in the
-- settings dibs.sale_d_sold / dibs.sale_d_held, and the group writes the row once at its end:
-- every UPDATE of the hot row writes a new row version and WAL record, and a group of g steps
-- paid that g times (about a quarter of a step's server time, bench/postgres-sale-row-cost.ts).
-- Steps of the group add the amounts added so far to the counters they read (sale_take_open,
-- sale_confirm), so each still sees the counters its predecessors left. Elsewhere the row is updated at once, as before.
CREATE OR REPLACE FUNCTION sale_counts_add(p_sale text, p_sold integer, p_held integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('dibs.sale_defer', true) IS DISTINCT FROM p_sale THEN
    UPDATE sales SET sold = sold + p_sold, held = held + p_held WHERE id = p_sale;
    RETURN;
  END IF;
  PERFORM set_config('dibs.sale_d_sold', (current_setting('dibs.sale_d_sold')::integer + p_sold)::text, true),
          set_config('dibs.sale_d_held', (current_setting('dibs.sale_d_held')::integer + p_held)::text, true);
END
$$;
