-- The fair start's draw at the opening, inside room_step (under the sale row lock): every ticket so
-- far is the pre-queue, arrival numbers 1..p_size. With p_fair they are placed by the seeded
-- Fisher–Yates shuffle of src/core/sales/fair-draw.ts, step for step (L'Ecuyer's combined
-- generator; every product stays below 2^47), from a fresh 64-bit seed that is recorded on the room
-- so anyone can re-derive the order; otherwise their place is their number (set at the join for
-- all but a switched fair pre-queue, so only those are written). Returns the seed.
CREATE OR REPLACE FUNCTION room_draw(p_sale text, p_fair boolean, p_size bigint)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  seed text;
  s1 bigint;
  s2 bigint;
  z bigint;
  j integer;
  tmp bigint;
  ord bigint[];
BEGIN
  IF p_fair THEN
    -- cleared first: the unique index on places would trip over a half-done swap
    UPDATE tickets SET place = NULL WHERE sale_id = p_sale;
    seed := substr(md5(gen_random_uuid()::text), 1, 16);
    s1 := ('x' || substr(seed, 1, 8))::bit(32)::bigint % 2147483562 + 1;
    s2 := ('x' || substr(seed, 9, 8))::bit(32)::bigint % 2147483398 + 1;
    ord := ARRAY(SELECT generate_series(1::bigint, p_size));
    FOR i IN REVERSE p_size..2 LOOP
      s1 := (s1 * 40014) % 2147483563;
      s2 := (s2 * 40692) % 2147483399;
      z := s1 - s2;
      IF z < 1 THEN z := z + 2147483562; END IF;
      j := 1 + z % i;
      tmp := ord[i];
      ord[i] := ord[j];
      ord[j] := tmp;
    END LOOP;
    UPDATE tickets t SET place = o.place
    FROM unnest(ord) WITH ORDINALITY AS o(number, place)
    WHERE t.sale_id = p_sale AND t.number = o.number;
  ELSE
    -- arrival order: every ticket placed at its join has place = number already; only a fair
    -- pre-queue switched to arrival order before the opening is without one (by the places index)
    UPDATE tickets SET place = number WHERE sale_id = p_sale AND place IS NULL;
  END IF;
  UPDATE waiting_rooms SET draw_seed = seed, pre_queue = p_size, drawn_at = now() WHERE sale_id = p_sale;
  RETURN seed;
END
$$;
