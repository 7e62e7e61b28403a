CREATE SCHEMA dibs;

CREATE FUNCTION dibs.cart_cancel(p_cart text) RETURNS TABLE(outcome text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  h sale_holds%ROWTYPE;
BEGIN
  SELECT * INTO c FROM carts WHERE id = p_cart FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text;
    RETURN;
  ELSIF c.status = 'confirmed' THEN
    RETURN QUERY SELECT 'cart_confirmed'::text;
    RETURN;
  ELSIF c.status = 'cancelled' OR c.expires_at <= now() THEN
    RETURN QUERY SELECT 'ok'::text;
    RETURN;
  END IF;
  PERFORM 1 FROM sales WHERE id IN (SELECT sale_id FROM sale_holds WHERE cart_id = p_cart) ORDER BY id FOR UPDATE;
  FOR h IN SELECT * FROM sale_holds WHERE cart_id = p_cart AND status = 'active' LOOP
    UPDATE sale_holds SET status = 'cancelled' WHERE id = h.id;
    UPDATE sales SET held = held - h.quantity WHERE id = h.sale_id;
  END LOOP;
  UPDATE carts SET status = 'cancelled' WHERE id = p_cart;
  RETURN QUERY SELECT 'ok'::text;
END
$$;

CREATE FUNCTION dibs.cart_confirm(p_cart text, p_order_ids text[]) RETURNS TABLE(outcome text, ctx jsonb)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  h sale_holds%ROWTYPE;
  s sales%ROWTYPE;
BEGIN
  SELECT * INTO c FROM carts WHERE id = p_cart FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::jsonb;
    RETURN;
  ELSIF c.status = 'confirmed' THEN
    RETURN QUERY SELECT 'replay'::text, NULL::jsonb;
    RETURN;
  ELSIF c.status = 'cancelled' THEN
    RETURN QUERY SELECT 'cart_cancelled'::text, NULL::jsonb;
    RETURN;
  ELSIF c.expires_at <= now() THEN
    RETURN QUERY SELECT 'cart_expired'::text, jsonb_build_object('expiresAt', iso_utc(c.expires_at));
    RETURN;
  END IF;
  PERFORM 1 FROM sales WHERE id IN (SELECT sale_id FROM sale_holds WHERE cart_id = p_cart) ORDER BY id FOR UPDATE;
  -- Unexpired, so no line is stale; a line that is not active was cancelled with its sale.
  SELECT * INTO h FROM sale_holds WHERE cart_id = p_cart AND status <> 'active' ORDER BY cart_line LIMIT 1;
  IF FOUND THEN
    RETURN QUERY SELECT 'cart_line_cancelled'::text, jsonb_build_object('sale', h.sale_id);
    RETURN;
  END IF;
  FOR h IN SELECT * FROM sale_holds WHERE cart_id = p_cart ORDER BY cart_line LOOP
    INSERT INTO sale_orders (id, sale_id, customer, quantity, hold_id)
    VALUES (p_order_ids[h.cart_line + 1], h.sale_id, h.customer, h.quantity, h.id);
    UPDATE sale_holds SET status = 'confirmed', order_id = p_order_ids[h.cart_line + 1] WHERE id = h.id;
    UPDATE sales SET sold = sold + h.quantity, held = held - h.quantity WHERE id = h.sale_id RETURNING * INTO s;
    IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
      INSERT INTO outbox (type, idempotency_key, sale, payload)
      VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
      ON CONFLICT (idempotency_key) DO NOTHING;
    END IF;
  END LOOP;
  UPDATE carts SET status = 'confirmed' WHERE id = p_cart;
  RETURN QUERY SELECT 'ok'::text, NULL::jsonb;
END
$$;

CREATE FUNCTION dibs.cart_hold(p_cart text, p_customer text, p_sales text[], p_quantities integer[], p_ttl_ms double precision, p_key text, p_fingerprint text, p_hold_ids text[]) RETURNS TABLE(outcome text, result_id text, fingerprint text, ctx jsonb)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  c carts%ROWTYPE;
  s sales%ROWTYPE;
  st text;
  ordered integer;
  own_id text;
  left_ integer;
  i integer;
  at_line jsonb;
  n integer := array_length(p_sales, 1);
  expiry timestamptz := now() + make_interval(secs => p_ttl_ms / 1000);
BEGIN
  IF p_key IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('dibs.cart_key:' || p_key, 0));
    SELECT * INTO c FROM carts WHERE key = p_key;
    IF FOUND THEN
      RETURN QUERY SELECT 'replay'::text, c.id, c.fingerprint, NULL::jsonb;
      RETURN;
    END IF;
  END IF;
  PERFORM 1 FROM sales WHERE id = ANY (p_sales) ORDER BY id FOR UPDATE;
  FOR i IN 1 .. n LOOP
    at_line := jsonb_build_object('line', i - 1, 'sale', p_sales[i]);
    SELECT * INTO s FROM sales WHERE id = p_sales[i];
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'cart_line_no_sale'::text, NULL::text, NULL::text, at_line;
      RETURN;
    END IF;
    IF s.held > 0 THEN
      s.held := s.held - sale_expire_stale(s.id);
    END IF;
    st := sale_status(s);
    IF st <> 'live' THEN
      RETURN QUERY SELECT 'sale_not_live'::text, NULL::text, NULL::text, at_line || jsonb_build_object('status', st);
      RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM waiting_rooms WHERE sale_id = s.id) THEN
      RETURN QUERY SELECT 'cart_line_room'::text, NULL::text, NULL::text, at_line;
      RETURN;
    END IF;
    own_id := NULL;
    SELECT id INTO own_id FROM sale_holds WHERE sale_id = s.id AND customer = p_customer AND status = 'active';
    IF own_id IS NOT NULL THEN
      RETURN QUERY SELECT 'cart_line_held'::text, NULL::text, NULL::text, at_line || jsonb_build_object('hold', own_id);
      RETURN;
    END IF;
    SELECT COALESCE(sum(quantity), 0) INTO ordered FROM sale_orders WHERE sale_id = s.id AND customer = p_customer;
    IF ordered + p_quantities[i] > s.per_customer_limit THEN
      RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text,
        at_line || jsonb_build_object('units', ordered, 'quantity', p_quantities[i], 'limit', s.per_customer_limit);
      RETURN;
    END IF;
    IF s.cap IS NOT NULL THEN
      left_ := s.cap - s.sold - s.escrow - s.held;
      IF p_quantities[i] > left_ THEN
        RETURN QUERY SELECT 'sale_sold_out'::text, NULL::text, NULL::text, at_line || jsonb_build_object('available', greatest(left_, 0));
        RETURN;
      END IF;
    END IF;
  END LOOP;
  -- Every line passed: write them all (nothing was written before, so a refusal above leaves no line).
  INSERT INTO carts (id, customer, expires_at, key, fingerprint) VALUES (p_cart, p_customer, expiry, p_key, p_fingerprint);
  FOR i IN 1 .. n LOOP
    INSERT INTO sale_holds (id, sale_id, customer, quantity, expires_at, cart_id, cart_line)
    VALUES (p_hold_ids[i], p_sales[i], p_customer, p_quantities[i], expiry, p_cart, i - 1);
    UPDATE sales SET held = held + p_quantities[i] WHERE id = p_sales[i];
  END LOOP;
  RETURN QUERY SELECT 'ok'::text, p_cart, NULL::text, NULL::jsonb;
END
$$;

CREATE FUNCTION dibs.code_open(p_hold_until timestamp with time zone, p_starts timestamp with time zone, p_expires timestamp with time zone) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT (p_hold_until IS NULL OR p_hold_until <= now())
     AND (p_starts IS NULL OR p_starts <= now())
     AND (p_expires IS NULL OR p_expires > now())
$$;

CREATE FUNCTION dibs.code_parked_until(p_hold_until timestamp with time zone, p_starts timestamp with time zone, p_expires timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE
    WHEN p_expires IS NOT NULL AND p_expires <= now() THEN 'infinity'::timestamptz
    WHEN p_hold_until > now() OR p_starts > now() THEN greatest(p_hold_until, p_starts)
  END
$$;

CREATE FUNCTION dibs.codes_park() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  NEW.parked_until := CASE WHEN NEW.status = 'free' THEN code_parked_until(NEW.hold_until, NEW.starts_at, NEW.expires_at) END;
  IF NEW.status = 'free' AND (NEW.parked_until IS NOT NULL OR NEW.expires_at IS NOT NULL) THEN
    DELETE FROM pools_never_parked WHERE pool_id = NEW.pool_id;
  END IF;
  RETURN NEW;
END
$$;

CREATE FUNCTION dibs.iso_utc(t timestamp with time zone) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE FUNCTION dibs.limit_decide(p_fresh boolean, p_last double precision, p_tat double precision, p_base bigint, p_counts bigint[], p_clock double precision, p_kind text, p_interval double precision, p_tolerance double precision, p_width double precision, p_span integer, p_limit bigint, p_n bigint, OUT allowed boolean, OUT remaining bigint, OUT retry_ms bigint, OUT at_ms double precision, OUT new_tat double precision, OUT new_base bigint, OUT new_counts bigint[]) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    AS $$
DECLARE
  v_last double precision := CASE WHEN p_fresh THEN 0 ELSE p_last END;
  v_tat double precision := CASE WHEN p_fresh THEN 0 ELSE p_tat END;
  v_base bigint := CASE WHEN p_fresh THEN 0 ELSE p_base END;
  v_stored bigint[] := CASE WHEN p_fresh THEN '{}'::bigint[] ELSE p_counts END;
  v_now double precision;
  v_t double precision;
  v_over double precision;
  v_first bigint;
  v_used bigint := 0;
  v_excess bigint;
  v_freed bigint := 0;
  v_len integer;
  i integer;
  j bigint;
BEGIN
  -- the store's clock as this key has seen it: never earlier than an admission already made
  v_now := greatest(p_clock, v_last);
  at_ms := v_now;
  retry_ms := 0;
  IF p_kind = 'gcra' THEN
    v_t := greatest(v_tat, v_now);
    new_tat := v_t + p_n * p_interval;
    v_over := new_tat - v_now - p_tolerance;
    IF v_over > 0 THEN
      allowed := false;
      remaining := greatest(0, floor((p_tolerance - (v_t - v_now)) / p_interval + 1e-9))::bigint;
      retry_ms := ceil(v_over)::bigint;
      RETURN;
    END IF;
    allowed := true;
    remaining := floor((p_tolerance - (new_tat - v_now)) / p_interval + 1e-9)::bigint;
    new_base := 0;
    new_counts := '{}';
    RETURN;
  END IF;

  v_first := floor(v_now / p_width)::bigint - p_span;
  new_counts := array_fill(0::bigint, ARRAY[p_span + 1]);
  v_len := coalesce(array_length(v_stored, 1), 0);
  FOR i IN 1 .. p_span + 1 LOOP
    j := v_first + (i - 1) - v_base;
    IF j >= 0 AND j < v_len THEN
      new_counts[i] := v_stored[j + 1];
    END IF;
    v_used := v_used + new_counts[i];
  END LOOP;
  IF v_used + p_n > p_limit THEN
    -- the wait: until the oldest buckets holding the excess have left the window
    v_excess := v_used + p_n - p_limit;
    i := 1;
    LOOP
      v_freed := v_freed + new_counts[i];
      EXIT WHEN v_freed >= v_excess OR i >= p_span + 1;
      i := i + 1;
    END LOOP;
    allowed := false;
    remaining := greatest(0, p_limit - v_used);
    retry_ms := greatest(1, ceil((v_first + i + p_span) * p_width - v_now))::bigint;
    RETURN;
  END IF;
  new_counts[p_span + 1] := new_counts[p_span + 1] + p_n;
  allowed := true;
  remaining := p_limit - v_used - p_n;
  new_tat := 0;
  new_base := v_first;
END
$$;

CREATE FUNCTION dibs.limit_take(p_name text, p_key text, p_kind text, p_shape text, p_interval double precision, p_tolerance double precision, p_width double precision, p_span integer, p_limit bigint, p_idle_ms double precision, p_n bigint) RETURNS TABLE(allowed boolean, remaining bigint, retry_ms bigint, at_ms double precision)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s limit_state%ROWTYPE;
  d record;
BEGIN
  SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key;
  IF FOUND THEN
    d := limit_decide(s.shape <> p_shape, s.last_ms, s.tat_ms, s.base, s.counts, (extract(epoch FROM clock_timestamp()) * 1000)::double precision,
                      p_kind, p_interval, p_tolerance, p_width, p_span, p_limit, p_n);
    IF NOT d.allowed THEN
      RETURN QUERY SELECT d.allowed, d.remaining, d.retry_ms, d.at_ms;
      RETURN;
    END IF;
  END IF;

  SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO limit_state AS t (name, key, shape, last_ms, tat_ms, base, counts, idle_at_ms)
    VALUES (p_name, p_key, '', 0, 0, 0, '{}', extract(epoch FROM clock_timestamp()) * 1000 + p_idle_ms)
    ON CONFLICT (name, key) DO NOTHING;
    SELECT * INTO s FROM limit_state AS t WHERE t.name = p_name AND t.key = p_key FOR UPDATE;
  END IF;
  d := limit_decide(s.shape <> p_shape, s.last_ms, s.tat_ms, s.base, s.counts, (extract(epoch FROM clock_timestamp()) * 1000)::double precision,
                    p_kind, p_interval, p_tolerance, p_width, p_span, p_limit, p_n);
  IF d.allowed THEN
    UPDATE limit_state AS t
    SET shape = p_shape, last_ms = d.at_ms, tat_ms = d.new_tat, base = d.new_base, counts = d.new_counts, idle_at_ms = d.at_ms + p_idle_ms
    WHERE t.name = p_name AND t.key = p_key;
  END IF;
  RETURN QUERY SELECT d.allowed, d.remaining, d.retry_ms, d.at_ms;
END
$$;

CREATE FUNCTION dibs.lock_acquire(p_key text, p_token text, p_limit integer, p_ttl_ms integer) RETURNS TABLE(fence bigint, expires_at timestamp with time zone, valid_ms double precision)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_live integer;
BEGIN
  -- Cheap refusal first: a plain read takes no row lock and no transaction id, so a waiter that
  -- finds every slot live costs no WAL and no commit flush. The locked path below re-checks.
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at > clock_timestamp();
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  v_now := lock_enter(p_key);
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM lock_grant(p_key, p_token, p_ttl_ms, v_now);
END
$$;

CREATE FUNCTION dibs.lock_acquire_fair(p_key text, p_token text, p_limit integer, p_ttl_ms integer, p_queue text, p_ticket text) RETURNS TABLE(fence bigint, expires_at timestamp with time zone, valid_ms double precision)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz;
  v_live integer;
  v_ahead integer;
  v_mine bigint := 9223372036854775807;
BEGIN
  -- Cheap refusal first (plain reads: no row lock, no transaction id, no WAL): all slots live, or
  -- enough live tickets ahead. Waiters behind the head of the line stop here. The locked path re-checks.
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at > clock_timestamp();
  IF v_live >= p_limit THEN
    RETURN;
  END IF;
  SELECT count(*) INTO v_ahead FROM lock_holders AS h
  WHERE h.key = p_queue AND h.expires_at > clock_timestamp()
    AND h.fence < coalesce((SELECT t.fence FROM lock_holders AS t WHERE t.key = p_queue AND t.token = p_ticket), v_mine);
  IF v_live + v_ahead >= p_limit THEN
    RETURN;
  END IF;
  v_now := lock_enter(p_key);
  IF p_ticket IS NOT NULL THEN
    SELECT h.fence INTO v_mine FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket AND h.expires_at > v_now;
    IF NOT FOUND THEN
      RETURN;
    END IF;
  END IF;
  SELECT count(*) INTO v_live FROM lock_holders AS h WHERE h.key = p_key;
  SELECT count(*) INTO v_ahead FROM lock_holders AS h WHERE h.key = p_queue AND h.expires_at > v_now AND h.fence < v_mine;
  IF v_live + v_ahead >= p_limit THEN
    RETURN;
  END IF;
  IF p_ticket IS NOT NULL THEN
    DELETE FROM lock_holders AS h WHERE h.key = p_queue AND h.token = p_ticket;
  END IF;
  RETURN QUERY SELECT * FROM lock_grant(p_key, p_token, p_ttl_ms, v_now);
END
$$;

CREATE FUNCTION dibs.lock_enter(p_key text) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_now timestamptz;
BEGIN
  PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO lock_fences AS f (key, fence) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    PERFORM 1 FROM lock_fences AS f WHERE f.key = p_key FOR UPDATE;
  END IF;
  v_now := clock_timestamp();
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.expires_at <= v_now;
  RETURN v_now;
END
$$;

CREATE FUNCTION dibs.lock_grant(p_key text, p_token text, p_ttl_ms integer, p_now timestamp with time zone) RETURNS TABLE(fence bigint, expires_at timestamp with time zone, valid_ms double precision)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  v_fence bigint;
  v_expires timestamptz;
BEGIN
  v_fence := lock_next_fence(p_key, p_now);
  v_expires := p_now + make_interval(secs => p_ttl_ms / 1000.0);
  INSERT INTO lock_holders (key, token, fence, expires_at) VALUES (p_key, p_token, v_fence, v_expires);
  RETURN QUERY SELECT v_fence, v_expires, (extract(epoch FROM v_expires - clock_timestamp()) * 1000)::double precision;
END
$$;

CREATE FUNCTION dibs.lock_next_fence(p_key text, p_now timestamp with time zone) RETURNS bigint
    LANGUAGE sql
    AS $$
  UPDATE lock_fences AS f
  SET fence = greatest(f.fence + 1, floor(extract(epoch FROM p_now) * 1000000)::bigint)
  WHERE f.key = p_key
  RETURNING f.fence
$$;

CREATE FUNCTION dibs.lock_release(p_key text, p_token text, p_channel text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  DELETE FROM lock_holders AS h WHERE h.key = p_key AND h.token = p_token AND h.expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM pg_notify(p_channel, p_key);
  RETURN true;
END
$$;

CREATE FUNCTION dibs.multi_use_redeem(p_pool text, p_code text, p_claimant text, p_order text) RETURNS TABLE(o_outcome text, o_max integer, o_per integer, o_uses integer, o_starts timestamp with time zone, o_expires timestamp with time zone, o_claimant text, o_used_at timestamp with time zone, o_pool_starts timestamp with time zone, o_pool_expires timestamp with time zone, o_at timestamp with time zone, o_limit integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_pool pools%ROWTYPE;
  v_code multi_codes%ROWTYPE;
  v_use code_uses%ROWTYPE;
  v_n integer;
  v_window text;
BEGIN
  SELECT * INTO v_pool FROM pools WHERE name = p_pool;
  IF NOT FOUND THEN o_outcome := 'no_pool'; RETURN NEXT; RETURN; END IF;
  o_pool_starts := v_pool.starts_at; o_pool_expires := v_pool.expires_at;
  FOR pass IN 1..2 LOOP
    IF pass = 1 THEN
      SELECT * INTO v_code FROM multi_codes WHERE pool_id = v_pool.id AND code = p_code;
    ELSE
      SELECT * INTO v_code FROM multi_codes WHERE pool_id = v_pool.id AND code = p_code FOR UPDATE;
    END IF;
    IF NOT FOUND THEN o_outcome := 'no_code'; RETURN NEXT; RETURN; END IF;
    o_max := v_code.max_uses; o_per := v_code.per_claimant; o_uses := v_code.uses; o_starts := v_code.starts_at; o_expires := v_code.expires_at;
    SELECT * INTO v_use FROM code_uses WHERE pool_id = v_pool.id AND code = p_code AND order_id = p_order;
    IF FOUND THEN
      -- the same checkout again: its use, unchanged
      o_claimant := v_use.claimant; o_used_at := v_use.used_at;
      o_outcome := CASE WHEN p_claimant IS NOT NULL AND v_use.claimant IS DISTINCT FROM p_claimant THEN 'order_of_other_claimant' ELSE 'replayed' END;
      RETURN NEXT; RETURN;
    END IF;
    v_window := pool_window_state(v_pool.starts_at, v_pool.expires_at);
    IF v_window <> 'open' THEN o_outcome := 'pool_' || v_window; RETURN NEXT; RETURN; END IF;
    IF v_code.starts_at IS NOT NULL AND now() < v_code.starts_at THEN
      o_outcome := 'code_not_yet_valid'; o_at := v_code.starts_at; RETURN NEXT; RETURN;
    END IF;
    IF v_code.expires_at IS NOT NULL AND now() >= v_code.expires_at THEN
      o_outcome := 'code_expired'; o_at := v_code.expires_at; RETURN NEXT; RETURN;
    END IF;
    IF v_code.uses >= v_code.max_uses THEN o_outcome := 'uses_exhausted'; o_limit := v_code.max_uses; RETURN NEXT; RETURN; END IF;
    IF v_code.per_claimant IS NOT NULL THEN
      IF p_claimant IS NULL THEN o_outcome := 'claimant_required'; RETURN NEXT; RETURN; END IF;
      SELECT count(*) INTO v_n FROM code_uses WHERE pool_id = v_pool.id AND code = p_code AND claimant = p_claimant;
      IF v_n >= v_code.per_claimant THEN
        o_outcome := 'uses_per_claimant'; o_limit := v_code.per_claimant; RETURN NEXT; RETURN;
      END IF;
    END IF;
  END LOOP;
  -- under the row lock, every rule passed: record the use and count it
  INSERT INTO code_uses (pool_id, code, order_id, claimant) VALUES (v_pool.id, p_code, p_order, p_claimant)
  RETURNING claimant, used_at INTO o_claimant, o_used_at;
  UPDATE multi_codes SET uses = uses + 1 WHERE pool_id = v_pool.id AND code = p_code;
  o_uses := v_code.uses + 1;
  o_outcome := 'used';
  RETURN NEXT;
END
$$;

CREATE FUNCTION dibs.pool_window_state(p_starts timestamp with time zone, p_expires timestamp with time zone) RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE
    WHEN p_starts IS NOT NULL AND now() < p_starts THEN 'not_yet_valid'
    WHEN p_expires IS NOT NULL AND now() >= p_expires THEN 'expired'
    ELSE 'open'
  END
$$;

CREATE FUNCTION dibs.room_draw(p_sale text, p_fair boolean, p_size bigint) RETURNS text
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION dibs.room_poll(p_sale text, p_customer text) RETURNS TABLE(sale_id text, admit_per_second double precision, window_ms integer, secret text, admitted_through bigint, created_at timestamp with time zone, fair_start boolean, verification boolean, draw_seed text, pre_queue bigint, drawn_at timestamp with time zone, joined bigint, number bigint, customer text, status text, admitted_until timestamp with time zone, hold_id text, place bigint, verified boolean)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE SKIP LOCKED;
  IF FOUND THEN
    -- the lock is ours until the statement ends; room_step's own FOR UPDATE is re-entrant
    RETURN QUERY SELECT * FROM room_step(p_sale, p_customer, false);
    RETURN;
  END IF;
  -- Someone holds the lock (or the sale does not exist: then no room row matches either).
  -- A window that ran out is reported as expired, as the next step will record it.
  RETURN QUERY
    SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
           r.fair_start, r.verification, r.draw_seed, r.pre_queue, r.drawn_at, r.next_number - 1,
           t.number, t.customer,
           CASE WHEN t.status = 'admitted' AND t.admitted_until <= now() THEN 'expired' ELSE t.status END,
           t.admitted_until, t.hold_id, t.place, t.verified
    FROM waiting_rooms r
    LEFT JOIN tickets t ON t.sale_id = r.sale_id AND t.customer = p_customer
    WHERE r.sale_id = p_sale;
END
$$;

CREATE FUNCTION dibs.room_step(p_sale text, p_customer text DEFAULT NULL::text, p_join boolean DEFAULT false) RETURNS TABLE(sale_id text, admit_per_second double precision, window_ms integer, secret text, admitted_through bigint, created_at timestamp with time zone, fair_start boolean, verification boolean, draw_seed text, pre_queue bigint, drawn_at timestamp with time zone, joined bigint, number bigint, customer text, status text, admitted_until timestamp with time zone, hold_id text, place bigint, verified boolean)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  r waiting_rooms%ROWTYPE;
  t tickets%ROWTYPE;
  st text;
  unused integer;
  bucket double precision;
  slots bigint;
  n bigint;
  m bigint := 0;
  top bigint := 0;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN RETURN; END IF;
  SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  IF NOT FOUND THEN RETURN; END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
    SELECT * INTO s FROM sales WHERE id = p_sale;
  END IF;
  st := sale_status(s);
  IF st = 'live' AND r.drawn_at IS NULL THEN
    PERFORM room_draw(p_sale, r.fair_start, r.next_number - 1);
    SELECT * INTO r FROM waiting_rooms WHERE sale_id = p_sale;
  END IF;
  IF p_join AND NOT EXISTS (SELECT 1 FROM tickets WHERE sale_id = p_sale AND customer = p_customer) THEN
    UPDATE waiting_rooms SET next_number = next_number + 1 WHERE sale_id = p_sale RETURNING * INTO r;
    INSERT INTO tickets (sale_id, number, customer, place, verified)
    VALUES (p_sale, r.next_number - 1, p_customer,
            CASE WHEN r.fair_start AND r.drawn_at IS NULL THEN NULL ELSE r.next_number - 1 END,
            NOT r.verification);
  END IF;
  UPDATE tickets SET status = 'expired' WHERE sale_id = p_sale AND status = 'admitted' AND admitted_until <= now();
  IF st IN ('ended', 'cancelled') OR (s.cap IS NOT NULL AND s.sold >= s.cap) THEN
    UPDATE tickets SET status = 'sold_out' WHERE sale_id = p_sale AND status = 'waiting';
  ELSIF st = 'live' THEN
    SELECT count(*) INTO unused FROM tickets WHERE sale_id = p_sale AND status = 'admitted';
    bucket := least(greatest(1.0, r.admit_per_second), r.budget + greatest(0, extract(epoch FROM now() - r.refilled_at)) * r.admit_per_second);
    slots := greatest(0, ceil((s.cap - s.sold - s.held - unused * s.per_customer_limit)::double precision / s.per_customer_limit));
    n := greatest(0, least(floor(bucket)::bigint, slots));
    IF n > 0 THEN
      WITH admitted AS (
        UPDATE tickets SET status = 'admitted', admitted_until = now() + make_interval(secs => r.window_ms / 1000.0)
        WHERE sale_id = p_sale AND number IN (
          SELECT w.number FROM tickets w
          WHERE w.sale_id = p_sale AND w.status = 'waiting' AND w.place IS NOT NULL AND (w.verified OR NOT r.verification)
          ORDER BY w.place LIMIT n)
        RETURNING place)
      SELECT count(*), coalesce(max(place), 0) INTO m, top FROM admitted;
    END IF;
    UPDATE waiting_rooms SET budget = bucket - m, refilled_at = now(), admitted_through = greatest(admitted_through, top)
    WHERE sale_id = p_sale RETURNING * INTO r;
  END IF;
  IF p_customer IS NOT NULL THEN
    SELECT * INTO t FROM tickets WHERE sale_id = p_sale AND customer = p_customer;
  END IF;
  RETURN QUERY SELECT r.sale_id, r.admit_per_second, r.window_ms, r.secret, r.admitted_through, r.created_at,
                      r.fair_start, r.verification, r.draw_seed, r.pre_queue, r.drawn_at, r.next_number - 1,
                      t.number, t.customer, t.status, t.admitted_until, t.hold_id, t.place, t.verified;
END
$$;

CREATE FUNCTION dibs.sale_confirm(p_hold text, p_order_id text) RETURNS TABLE(outcome text, result_id text, ctx jsonb, order_customer text, order_quantity integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  h sale_holds%ROWTYPE;
  s sales%ROWTYPE;
BEGIN
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::jsonb, NULL::text, NULL::integer;
    RETURN;
  END IF;
  -- A hold's sale never changes: lock it, then look at the hold as it is now.
  SELECT * INTO s FROM sales WHERE id = h.sale_id FOR UPDATE;
  -- Inside a group (sale_step_group) the counters its earlier steps added are not written yet.
  IF current_setting('dibs.sale_defer', true) = h.sale_id THEN
    s.sold := s.sold + current_setting('dibs.sale_d_sold')::integer;
    s.held := s.held + current_setting('dibs.sale_d_held')::integer;
  END IF;
  PERFORM sale_expire_stale(h.sale_id);
  SELECT * INTO h FROM sale_holds WHERE id = p_hold;
  IF h.status = 'confirmed' THEN
    RETURN QUERY SELECT 'replay'::text, o.id, NULL::jsonb, NULL::text, NULL::integer FROM sale_orders o WHERE o.hold_id = p_hold;
    RETURN;
  ELSIF h.status = 'cancelled' THEN
    RETURN QUERY SELECT 'hold_cancelled'::text, NULL::text, NULL::jsonb, NULL::text, NULL::integer;
    RETURN;
  ELSIF h.cart_id IS NOT NULL THEN
    RETURN QUERY SELECT 'hold_in_cart'::text, NULL::text, jsonb_build_object('cart', h.cart_id), NULL::text, NULL::integer;
    RETURN;
  ELSIF h.status = 'expired' THEN
    RETURN QUERY SELECT 'hold_expired'::text, NULL::text, jsonb_build_object('expiresAt', iso_utc(h.expires_at)), NULL::text, NULL::integer;
    RETURN;
  ELSIF s.cancelled_at IS NOT NULL THEN
    RETURN QUERY SELECT 'sale_not_live'::text, NULL::text, jsonb_build_object('sale', h.sale_id, 'status', 'cancelled'), NULL::text, NULL::integer;
    RETURN;
  END IF;
  INSERT INTO sale_orders (id, sale_id, customer, quantity, hold_id) VALUES (p_order_id, h.sale_id, h.customer, h.quantity, p_hold);
  UPDATE sale_holds SET status = 'confirmed', order_id = p_order_id WHERE id = p_hold;
  -- Written at once, or once at the end of a group (sale_counts_add). Only s.sold is read below
  -- (s.held would still count holds sale_expire_stale just took off).
  PERFORM sale_counts_add(h.sale_id, h.quantity, -h.quantity);
  s.sold := s.sold + h.quantity;
  IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
    ON CONFLICT (idempotency_key) DO NOTHING;
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_order_id, NULL::jsonb, h.customer, h.quantity;
END
$$;

CREATE FUNCTION dibs.sale_counts_add(p_sale text, p_sold integer, p_held integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF current_setting('dibs.sale_defer', true) IS DISTINCT FROM p_sale THEN
    UPDATE sales SET sold = sold + p_sold, held = held + p_held WHERE id = p_sale;
    RETURN;
  END IF;
  PERFORM set_config('dibs.sale_d_sold', (current_setting('dibs.sale_d_sold')::integer + p_sold)::text, true),
          set_config('dibs.sale_d_held', (current_setting('dibs.sale_d_held')::integer + p_held)::text, true);
END
$$;

CREATE FUNCTION dibs.sale_expire_stale(p_sale text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  units integer;
BEGIN
  -- Most steps find nothing to expire: one probe of sale_holds_sale_expiry answers that for a
  -- fraction of what starting the three writes below costs (every reserve and confirm runs this).
  -- The caller holds the sale row lock, under which alone this sale's holds change, so nothing
  -- can turn stale between the probe and the writes that the writes would not also have missed.
  IF NOT EXISTS (SELECT 1 FROM sale_holds WHERE sale_id = p_sale AND status = 'active' AND expires_at <= now()) THEN
    RETURN 0;
  END IF;
  WITH expired AS (
    UPDATE sale_holds SET status = 'expired'
    WHERE sale_id = p_sale AND status = 'active' AND expires_at <= now()
    RETURNING id, sale_id, customer, quantity, expires_at
  ), events AS (
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    SELECT 'hold.expired', 'hold.expired:' || id, sale_id,
           jsonb_build_object('sale', sale_id, 'hold', id, 'customer', customer, 'quantity', quantity, 'expiresAt', iso_utc(expires_at))
    FROM expired ORDER BY expires_at, id
    ON CONFLICT (idempotency_key) DO NOTHING
  ), moved AS (
    UPDATE sales s SET held = s.held - x.units
    FROM (SELECT sum(quantity)::int AS units FROM expired) x
    WHERE s.id = p_sale AND x.units > 0
  )
  SELECT COALESCE(sum(quantity), 0)::int INTO units FROM expired;
  RETURN units;
END
$$;

CREATE FUNCTION dibs.sale_grant(p_sale text, p_size integer, p_ttl_ms double precision, p_revoke_all boolean, p_newest bigint DEFAULT NULL::bigint) RETURNS TABLE(outcome text, status text, grant_id bigint, size integer, escrow integer, per_customer_limit integer, ends_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  st text;
  left_ integer;
  g bigint;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::bigint, NULL::int, NULL::int, NULL::int, NULL::timestamptz;
    RETURN;
  END IF;
  IF s.held > 0 THEN
    PERFORM sale_expire_stale(p_sale);
  END IF;
  PERFORM sale_grants_revoke_locked(p_sale, p_revoke_all);
  IF p_newest IS NOT NULL THEN
    PERFORM sale_grants_revoke_newer_locked(p_sale, p_newest);
  END IF;
  SELECT * INTO s FROM sales WHERE id = p_sale;
  st := sale_status(s);
  IF st = 'sold_out' THEN
    -- Every unit sold: Redis may answer sold_out itself for a while.
    RETURN QUERY SELECT 'empty'::text, st, NULL::bigint, 0, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  ELSIF st <> 'live' THEN
    RETURN QUERY SELECT 'not_live'::text, st, NULL::bigint, NULL::int, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  IF s.cap IS NULL OR EXISTS (SELECT 1 FROM waiting_rooms w WHERE w.sale_id = p_sale) THEN
    RETURN QUERY SELECT 'ledger_only'::text, st, NULL::bigint, NULL::int, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  left_ := least(p_size, s.cap - s.sold - s.held - s.escrow);
  IF left_ <= 0 THEN
    RETURN QUERY SELECT 'empty'::text, st, NULL::bigint, 0, s.escrow, s.per_customer_limit, s.ends_at;
    RETURN;
  END IF;
  INSERT INTO sale_grants (sale_id, size, expires_at) VALUES (p_sale, left_, now() + make_interval(secs => p_ttl_ms / 1000)) RETURNING id INTO g;
  UPDATE sales SET escrow = sales.escrow + left_ WHERE id = p_sale;
  RETURN QUERY SELECT 'ok'::text, st, g, left_, s.escrow + left_, s.per_customer_limit, s.ends_at;
END
$$;

CREATE FUNCTION dibs.sale_grant_close(p_grant bigint, p_unused integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  sid text;
  n integer;
BEGIN
  SELECT sale_id INTO sid FROM sale_grants WHERE id = p_grant;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM sales WHERE id = sid FOR UPDATE;
  SELECT least(p_unused, size - used) INTO n FROM sale_grants WHERE id = p_grant AND revoked_at IS NULL;
  IF n > 0 THEN
    UPDATE sale_grants SET size = size - n WHERE id = p_grant;
  END IF;
  n := COALESCE(n, 0);
  IF n > 0 THEN
    UPDATE sales SET escrow = escrow - n WHERE id = sid;
  END IF;
  RETURN n;
END
$$;

CREATE FUNCTION dibs.sale_grants_expire(p_limit integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  sid text;
  total integer := 0;
BEGIN
  FOR sid IN SELECT DISTINCT g.sale_id FROM (SELECT sale_id FROM sale_grants WHERE revoked_at IS NULL AND expires_at <= now() LIMIT p_limit) g ORDER BY 1 LOOP
    PERFORM 1 FROM sales WHERE id = sid FOR UPDATE;
    total := total + sale_grants_revoke_locked(sid, false);
  END LOOP;
  RETURN total;
END
$$;

CREATE FUNCTION dibs.sale_grants_revoke(p_sale text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN sale_grants_revoke_locked(p_sale, true);
END
$$;

CREATE FUNCTION dibs.sale_grants_revoke_locked(p_sale text, p_all boolean) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  units integer;
BEGIN
  WITH revoked AS (
    UPDATE sale_grants SET revoked_at = now()
    WHERE sale_id = p_sale AND revoked_at IS NULL AND (p_all OR expires_at <= now())
    RETURNING size - used AS unused
  )
  SELECT COALESCE(sum(unused), 0)::int INTO units FROM revoked;
  IF units > 0 THEN
    UPDATE sales SET escrow = escrow - units WHERE id = p_sale;
  END IF;
  RETURN units;
END
$$;

CREATE FUNCTION dibs.sale_grants_revoke_newer(p_sale text, p_newest bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  RETURN sale_grants_revoke_newer_locked(p_sale, p_newest);
END
$$;

CREATE FUNCTION dibs.sale_grants_revoke_newer_locked(p_sale text, p_newest bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  units integer;
BEGIN
  WITH revoked AS (
    UPDATE sale_grants SET revoked_at = now()
    WHERE sale_id = p_sale AND revoked_at IS NULL AND id > p_newest
    RETURNING size - used AS unused
  )
  SELECT COALESCE(sum(unused), 0)::int INTO units FROM revoked;
  IF units > 0 THEN
    UPDATE sales SET escrow = escrow - units WHERE id = p_sale;
  END IF;
  RETURN units;
END
$$;

CREATE TABLE dibs.sales (
    id text NOT NULL,
    sku text NOT NULL,
    starts_at timestamp with time zone NOT NULL,
    ends_at timestamp with time zone NOT NULL,
    cap integer,
    per_customer_limit integer NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    cancelled_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    sold integer DEFAULT 0 NOT NULL,
    held integer DEFAULT 0 NOT NULL,
    announced_at timestamp with time zone,
    ended_recorded_at timestamp with time zone,
    escrow integer DEFAULT 0 NOT NULL,
    CONSTRAINT sales_cap_check CHECK ((cap >= 0)),
    CONSTRAINT sales_committed_within_cap CHECK (((cap IS NULL) OR ((sold + held) <= cap))),
    CONSTRAINT sales_escrow_check CHECK ((escrow >= 0)),
    CONSTRAINT sales_escrow_within_cap CHECK (((cap IS NULL) OR (((sold + held) + escrow) <= cap))),
    CONSTRAINT sales_held_check CHECK ((held >= 0)),
    CONSTRAINT sales_per_customer_limit_check CHECK ((per_customer_limit >= 1)),
    CONSTRAINT sales_sold_check CHECK ((sold >= 0)),
    CONSTRAINT sales_sold_within_cap CHECK (((cap IS NULL) OR (sold <= cap)))
)
WITH (fillfactor='70');

CREATE FUNCTION dibs.sale_status(s dibs.sales) RETURNS text
    LANGUAGE sql STABLE
    AS $$
  SELECT CASE
    WHEN s.cancelled_at IS NOT NULL THEN 'cancelled'
    WHEN now() < s.starts_at THEN 'scheduled'
    WHEN now() >= s.ends_at THEN 'ended'
    WHEN s.cap IS NOT NULL AND s.sold >= s.cap THEN 'sold_out'
    ELSE 'live'
  END
$$;

CREATE FUNCTION dibs.sale_step_group(p_sale text, p_customers text[], p_quantities integer[], p_keys text[], p_new_ids text[], p_ttls double precision[], p_holds text[]) RETURNS TABLE(i bigint, outcome text, result_id text, key_kind text, key_customer text, key_quantity integer, ctx jsonb, order_customer text, order_quantity integer, at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  d_sold integer;
  d_held integer;
BEGIN
  PERFORM set_config('dibs.sale_defer', p_sale, true), set_config('dibs.sale_d_sold', '0', true),
          set_config('dibs.sale_d_held', '0', true);
  -- One query over the requests, as the statement was before this function (the same LATERAL
  -- calls, in request order): a loop of one RETURN QUERY per request cost more per step.
  RETURN QUERY
  SELECT r.i, t.*, now(), now() + make_interval(secs => r.ttl_ms / 1000)
  FROM unnest(p_customers, p_quantities, p_keys, p_new_ids, p_ttls, p_holds) WITH ORDINALITY AS r (customer, quantity, key, new_id, ttl_ms, hold, i)
  CROSS JOIN LATERAL (
    SELECT k.outcome, k.result_id, k.key_kind, k.key_customer, k.key_quantity, k.ctx, NULL::text AS order_customer, NULL::int AS order_quantity
    FROM sale_take(p_sale, r.customer, r.quantity, r.key, r.new_id, r.ttl_ms, false) AS k
    WHERE r.hold IS NULL
    UNION ALL
    SELECT c.outcome, c.result_id, NULL::text, NULL::text, NULL::int, c.ctx, c.order_customer, c.order_quantity
    FROM sale_confirm(r.hold, r.new_id) AS c
    WHERE r.hold IS NOT NULL
  ) AS t;
  d_sold := current_setting('dibs.sale_d_sold')::integer;
  d_held := current_setting('dibs.sale_d_held')::integer;
  PERFORM set_config('dibs.sale_defer', '', true);
  IF d_sold <> 0 OR d_held <> 0 THEN
    UPDATE sales SET sold = sold + d_sold, held = held + d_held WHERE id = p_sale;
  END IF;
END
$$;

CREATE FUNCTION dibs.sale_take(p_sale text, p_customer text, p_quantity integer, p_key text, p_new_id text, p_ttl_ms double precision, p_via_ticket boolean DEFAULT false) RETURNS TABLE(outcome text, result_id text, key_kind text, key_customer text, key_quantity integer, ctx jsonb)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  o record;
  ordered integer;
  own_id text;
  own integer;
  own_cart text;
  ask integer;
  left_ integer;
  kind text := CASE WHEN p_ttl_ms IS NULL THEN 'buy' ELSE 'reserve' END;
BEGIN
  -- A sale behind a waiting room sells only through admitted tickets (reserve, then confirm).
  SELECT * INTO o FROM sale_take_open(p_sale, p_customer, p_key, kind = 'reserve' AND p_via_ticket);
  IF o.o_outcome IS NOT NULL THEN
    RETURN QUERY SELECT o.o_outcome, (o.o_key).result_id, (o.o_key).kind, (o.o_key).customer, (o.o_key).quantity, o.o_ctx;
    RETURN;
  END IF;
  s := o.o_sale;
  ordered := o.o_ordered;
  SELECT id, quantity, cart_id INTO own_id, own, own_cart FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  own := COALESCE(own, 0);
  -- A cart's line is replaced only with its whole cart.
  IF kind = 'reserve' AND own_cart IS NOT NULL THEN
    RETURN QUERY SELECT 'hold_in_cart'::text, NULL::text, NULL::text, NULL::text, NULL::int, jsonb_build_object('hold', own_id, 'cart', own_cart);
    RETURN;
  END IF;
  -- A reserve replaces the customer's own hold; a buy comes on top of it.
  ask := CASE WHEN kind = 'reserve' THEN p_quantity - own ELSE p_quantity END;
  IF ordered + own + ask > s.per_customer_limit THEN
    RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text, NULL::text, NULL::int,
      jsonb_build_object('units', ordered + own, 'quantity', ask, 'limit', s.per_customer_limit);
    RETURN;
  END IF;
  IF s.cap IS NOT NULL THEN
    -- Everyone else's holds count against the cap (for a reserve, the own hold is being replaced).
    left_ := s.cap - s.sold - s.escrow - (s.held - CASE WHEN kind = 'reserve' THEN own ELSE 0 END);
    IF p_quantity > left_ THEN
      RETURN QUERY SELECT 'sale_sold_out'::text, NULL::text, NULL::text, NULL::text, NULL::int, jsonb_build_object('available', greatest(left_, 0));
      RETURN;
    END IF;
  END IF;
  IF kind = 'buy' THEN
    INSERT INTO sale_orders (id, sale_id, customer, quantity) VALUES (p_new_id, p_sale, p_customer, p_quantity);
    -- The counters go through sale_counts_add (written at once, or once at the end of a group);
    -- s is the locked row with every earlier step's counts, so it is the row as updated.
    PERFORM sale_counts_add(p_sale, p_quantity, 0);
    s.sold := s.sold + p_quantity;
    IF s.cap IS NOT NULL AND s.sold >= s.cap THEN
      INSERT INTO outbox (type, idempotency_key, sale, payload)
      VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
      ON CONFLICT (idempotency_key) DO NOTHING;
    END IF;
    result_id := p_new_id;
  ELSIF own_id IS NOT NULL THEN
    UPDATE sale_holds SET quantity = p_quantity, expires_at = now() + make_interval(secs => p_ttl_ms / 1000) WHERE id = own_id;
    PERFORM sale_counts_add(p_sale, 0, p_quantity - own);
    result_id := own_id;
  ELSE
    INSERT INTO sale_holds (id, sale_id, customer, quantity, expires_at)
    VALUES (p_new_id, p_sale, p_customer, p_quantity, now() + make_interval(secs => p_ttl_ms / 1000));
    PERFORM sale_counts_add(p_sale, 0, p_quantity);
    result_id := p_new_id;
  END IF;
  IF p_key IS NOT NULL THEN
    INSERT INTO sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (p_sale, p_key, kind, p_customer, p_quantity, result_id);
  END IF;
  RETURN QUERY SELECT 'ok'::text, result_id, NULL::text, NULL::text, NULL::int, NULL::jsonb;
END
$$;

CREATE FUNCTION dibs.sale_take_granted(p_sale text, p_grant bigint, p_customer text, p_quantity integer, p_key text, p_new_id text) RETURNS TABLE(outcome text, result_id text, key_kind text, key_customer text, key_quantity integer, ctx jsonb)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  o record;
  ordered integer;
  own integer;
BEGIN
  -- A room enabled while a grant was out: the grant's units sell only through tickets now.
  SELECT * INTO o FROM sale_take_open(p_sale, p_customer, p_key, false);
  IF o.o_outcome IS NOT NULL THEN
    RETURN QUERY SELECT o.o_outcome, (o.o_key).result_id, (o.o_key).kind, (o.o_key).customer, (o.o_key).quantity, o.o_ctx;
    RETURN;
  END IF;
  s := o.o_sale;
  ordered := o.o_ordered;
  SELECT COALESCE(sum(quantity), 0) INTO own FROM sale_holds WHERE sale_id = p_sale AND customer = p_customer AND status = 'active';
  IF ordered + own + p_quantity > s.per_customer_limit THEN
    RETURN QUERY SELECT 'sale_limit'::text, NULL::text, NULL::text, NULL::text, NULL::int,
      jsonb_build_object('units', ordered + own, 'quantity', p_quantity, 'limit', s.per_customer_limit);
    RETURN;
  END IF;
  UPDATE sale_grants SET used = used + p_quantity
  WHERE id = p_grant AND sale_id = p_sale AND revoked_at IS NULL AND used + p_quantity <= size;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'revoked'::text, NULL::text, NULL::text, NULL::text, NULL::int, NULL::jsonb;
    RETURN;
  END IF;
  INSERT INTO sale_orders (id, sale_id, customer, quantity, grant_id) VALUES (p_new_id, p_sale, p_customer, p_quantity, p_grant);
  UPDATE sales SET sold = sold + p_quantity, escrow = escrow - p_quantity WHERE id = p_sale RETURNING * INTO s;
  IF s.sold >= s.cap THEN
    INSERT INTO outbox (type, idempotency_key, sale, payload)
    VALUES ('sale.sold_out', 'sale.sold_out:' || s.id, s.id, jsonb_build_object('sale', s.id, 'sku', s.sku, 'sold', s.sold, 'cap', s.cap))
    ON CONFLICT (idempotency_key) DO NOTHING;
  END IF;
  IF p_key IS NOT NULL THEN
    INSERT INTO sale_keys (sale_id, key, kind, customer, quantity, result_id) VALUES (p_sale, p_key, 'buy', p_customer, p_quantity, p_new_id);
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_new_id, NULL::text, NULL::text, NULL::int, NULL::jsonb;
END
$$;

CREATE TABLE dibs.sale_keys (
    sale_id text NOT NULL,
    key text NOT NULL,
    kind text NOT NULL,
    customer text NOT NULL,
    quantity integer NOT NULL,
    result_id text NOT NULL,
    CONSTRAINT sale_keys_kind_check CHECK ((kind = ANY (ARRAY['buy'::text, 'reserve'::text])))
);

CREATE FUNCTION dibs.sale_take_open(p_sale text, p_customer text, p_key text, p_ticket_ok boolean, OUT o_outcome text, OUT o_ctx jsonb, OUT o_sale dibs.sales, OUT o_key dibs.sale_keys, OUT o_ordered integer) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  s sales%ROWTYPE;
  st text;
BEGIN
  SELECT * INTO s FROM sales WHERE id = p_sale FOR UPDATE;
  IF NOT FOUND THEN
    o_outcome := 'not_found';
    RETURN;
  END IF;
  -- Inside a group (sale_step_group) the counters its earlier steps added are not written yet.
  -- (Inline rather than a function: a composite in and out of a plpgsql call costs more.)
  IF current_setting('dibs.sale_defer', true) = p_sale THEN
    s.sold := s.sold + current_setting('dibs.sale_d_sold')::integer;
    s.held := s.held + current_setting('dibs.sale_d_held')::integer;
  END IF;
  IF p_key IS NOT NULL THEN
    SELECT * INTO o_key FROM sale_keys WHERE sale_id = p_sale AND key = p_key;
    IF FOUND THEN
      o_outcome := 'replay';
      RETURN;
    END IF;
  END IF;
  -- Holds marked active are counted in held, so with held = 0 there is nothing to expire.
  IF s.held > 0 THEN
    s.held := s.held - sale_expire_stale(p_sale);
  END IF;
  st := sale_status(s);
  IF st <> 'live' THEN
    o_outcome := 'sale_not_live';
    o_ctx := jsonb_build_object('status', st);
    RETURN;
  END IF;
  IF NOT p_ticket_ok AND EXISTS (SELECT 1 FROM waiting_rooms WHERE sale_id = p_sale) THEN
    o_outcome := 'sale_ticket_required';
    RETURN;
  END IF;
  SELECT COALESCE(sum(quantity), 0) INTO o_ordered FROM sale_orders WHERE sale_id = p_sale AND customer = p_customer;
  o_sale := s;
END
$$;

CREATE FUNCTION dibs.tickets_count() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION dibs.unpark_due(p_pool bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  due CURSOR FOR SELECT 1 FROM codes WHERE pool_id = p_pool AND parked_until IS NOT NULL AND parked_until <= now()
                 ORDER BY parked_until LIMIT 200 FOR UPDATE SKIP LOCKED;
  expired CURSOR FOR SELECT 1 FROM codes WHERE pool_id = p_pool AND status = 'free' AND parked_until IS NULL
                     AND expires_at IS NOT NULL AND expires_at <= now() LIMIT 200 FOR UPDATE SKIP LOCKED;
  v_moved integer := 0;
BEGIN
  -- plpgsql, not sql: its plans are cached per session, and this runs in every claim. Each row is
  -- updated through its cursor (WHERE CURRENT OF), never by a join back to codes: a join's plan
  -- cached while the table was small (a seq scan) would stay slow once the table has grown.
  FOR r IN due LOOP
    UPDATE codes SET parked_until = NULL WHERE CURRENT OF due;
    v_moved := v_moved + 1;
  END LOOP;
  FOR r IN expired LOOP
    UPDATE codes SET parked_until = 'infinity' WHERE CURRENT OF expired;
    v_moved := v_moved + 1;
  END LOOP;
  RETURN v_moved;
END
$$;

CREATE TABLE dibs.api_keys (
    id text NOT NULL,
    tenant text NOT NULL,
    name text NOT NULL,
    scopes text[] NOT NULL,
    hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);

CREATE TABLE dibs.carts (
    id text NOT NULL,
    customer text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key text,
    fingerprint text,
    CONSTRAINT carts_status_check CHECK ((status = ANY (ARRAY['active'::text, 'confirmed'::text, 'cancelled'::text])))
);

CREATE TABLE dibs.claim_keys (
    pool_id bigint NOT NULL,
    key text NOT NULL,
    claimant text NOT NULL,
    count integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE dibs.code_uses (
    pool_id bigint NOT NULL,
    code text NOT NULL,
    order_id text NOT NULL,
    claimant text,
    used_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE dibs.codes (
    id bigint NOT NULL,
    pool_id bigint NOT NULL,
    code text NOT NULL,
    status text DEFAULT 'free'::text NOT NULL,
    rnd double precision DEFAULT random() NOT NULL,
    claimant text,
    slot integer,
    claim_key text,
    claimed_at timestamp with time zone,
    redeemed_at timestamp with time zone,
    redeemed_order text,
    hold_claimant text,
    hold_until timestamp with time zone,
    starts_at timestamp with time zone,
    expires_at timestamp with time zone,
    parked_until timestamp with time zone,
    CONSTRAINT codes_check CHECK (((claimant IS NOT NULL) = (status = ANY (ARRAY['claimed'::text, 'redeemed'::text])))),
    CONSTRAINT codes_check1 CHECK (((slot IS NOT NULL) = (claimant IS NOT NULL))),
    CONSTRAINT codes_parked_free CHECK (((parked_until IS NULL) OR (status = 'free'::text))),
    CONSTRAINT codes_status_check CHECK ((status = ANY (ARRAY['free'::text, 'claimed'::text, 'redeemed'::text, 'revoked'::text])))
);

CREATE SEQUENCE dibs.codes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE dibs.codes_id_seq OWNED BY dibs.codes.id;

CREATE TABLE dibs.counter_shards (
    name text NOT NULL,
    shard integer NOT NULL,
    value bigint NOT NULL,
    CONSTRAINT counter_shards_shard_check CHECK ((shard >= 0))
);

CREATE TABLE dibs.counters (
    name text NOT NULL,
    shards integer NOT NULL,
    CONSTRAINT counters_shards_check CHECK ((shards >= 1))
);

CREATE TABLE dibs.forecast_watches (
    kind text NOT NULL,
    subject text NOT NULL,
    within_ms bigint NOT NULL,
    armed boolean DEFAULT true NOT NULL,
    fired integer DEFAULT 0 NOT NULL,
    CONSTRAINT forecast_watches_kind_check CHECK ((kind = ANY (ARRAY['pool'::text, 'sale'::text]))),
    CONSTRAINT forecast_watches_within_ms_check CHECK ((within_ms > 0))
);

CREATE TABLE dibs.function_versions (
    name text NOT NULL,
    hash text NOT NULL,
    level integer NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE dibs.idempotency_records (
    scope text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    response jsonb,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE dibs.limit_definitions (
    name text NOT NULL,
    definition jsonb NOT NULL
);

CREATE TABLE dibs.limit_state (
    name text NOT NULL,
    key text NOT NULL,
    shape text NOT NULL,
    last_ms double precision NOT NULL,
    tat_ms double precision NOT NULL,
    base bigint NOT NULL,
    counts bigint[] NOT NULL,
    idle_at_ms double precision NOT NULL
);

CREATE TABLE dibs.lock_fences (
    key text NOT NULL,
    fence bigint NOT NULL,
    CONSTRAINT lock_fences_fence_check CHECK ((fence >= 0))
);

CREATE TABLE dibs.lock_holders (
    key text NOT NULL,
    token text NOT NULL,
    fence bigint NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

CREATE TABLE dibs.migrations (
    id integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE dibs.multi_codes (
    pool_id bigint NOT NULL,
    code text NOT NULL,
    max_uses integer NOT NULL,
    per_claimant integer,
    uses integer DEFAULT 0 NOT NULL,
    starts_at timestamp with time zone,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT multi_codes_check CHECK (((uses >= 0) AND (uses <= max_uses))),
    CONSTRAINT multi_codes_max_uses_check CHECK ((max_uses >= 1)),
    CONSTRAINT multi_codes_per_claimant_check CHECK ((per_claimant >= 1))
);

CREATE TABLE dibs.outbox (
    id bigint NOT NULL,
    type text NOT NULL,
    idempotency_key text NOT NULL,
    pool text,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    delivered_at timestamp with time zone,
    sale text,
    attempts integer DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone,
    locked_until timestamp with time zone,
    last_error text,
    dead_at timestamp with time zone
);

CREATE TABLE dibs.outbox_deliveries (
    id bigint NOT NULL,
    event_id bigint NOT NULL,
    attempt integer NOT NULL,
    ok boolean NOT NULL,
    detail text NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE dibs.outbox_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE dibs.outbox_deliveries_id_seq OWNED BY dibs.outbox_deliveries.id;

CREATE SEQUENCE dibs.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE dibs.outbox_id_seq OWNED BY dibs.outbox.id;

CREATE TABLE dibs.pool_counters (
    pool_id bigint NOT NULL,
    shard integer NOT NULL,
    total bigint DEFAULT 0 NOT NULL,
    free bigint DEFAULT 0 NOT NULL,
    claimed bigint DEFAULT 0 NOT NULL,
    redeemed bigint DEFAULT 0 NOT NULL,
    revoked bigint DEFAULT 0 NOT NULL,
    rules_version bigint DEFAULT 0 NOT NULL
)
WITH (fillfactor='50');

CREATE TABLE dibs.pools (
    id bigint NOT NULL,
    name text NOT NULL,
    per_claimant_limit integer NOT NULL,
    low_stock_threshold integer,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    counter_shards integer NOT NULL,
    low_stock_armed boolean DEFAULT true NOT NULL,
    low_stock_events integer DEFAULT 0 NOT NULL,
    starts_at timestamp with time zone,
    expires_at timestamp with time zone,
    max_redemptions integer,
    max_redemptions_per_claimant integer,
    public_codes boolean DEFAULT false NOT NULL,
    code_format jsonb,
    rules_version bigint DEFAULT 0 NOT NULL,
    CONSTRAINT pools_counter_shards_check CHECK ((counter_shards >= 1)),
    CONSTRAINT pools_low_stock_threshold_check CHECK ((low_stock_threshold >= 0)),
    CONSTRAINT pools_max_redemptions_check CHECK ((max_redemptions >= 0)),
    CONSTRAINT pools_max_redemptions_per_claimant_check CHECK ((max_redemptions_per_claimant >= 1)),
    CONSTRAINT pools_per_claimant_limit_check CHECK ((per_claimant_limit >= 1))
);

CREATE SEQUENCE dibs.pools_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE dibs.pools_id_seq OWNED BY dibs.pools.id;

CREATE TABLE dibs.pools_never_parked (
    pool_id bigint NOT NULL
);

CREATE TABLE dibs.rate_limits (
    key text NOT NULL,
    count bigint NOT NULL,
    reset_at timestamp with time zone NOT NULL
);

CREATE TABLE dibs.sale_grants (
    id bigint NOT NULL,
    sale_id text NOT NULL,
    size integer NOT NULL,
    used integer DEFAULT 0 NOT NULL,
    revoked_at timestamp with time zone,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT sale_grants_size_check CHECK ((size >= 0)),
    CONSTRAINT sale_grants_used_check CHECK ((used >= 0)),
    CONSTRAINT sale_grants_used_within_size CHECK ((used <= size))
);

CREATE SEQUENCE dibs.sale_grants_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE dibs.sale_grants_id_seq OWNED BY dibs.sale_grants.id;

CREATE TABLE dibs.sale_holds (
    id text NOT NULL,
    sale_id text NOT NULL,
    customer text NOT NULL,
    quantity integer NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    order_id text,
    cart_id text,
    cart_line integer,
    CONSTRAINT sale_holds_quantity_check CHECK ((quantity >= 1)),
    CONSTRAINT sale_holds_status_check CHECK ((status = ANY (ARRAY['active'::text, 'confirmed'::text, 'cancelled'::text, 'expired'::text])))
);

CREATE TABLE dibs.sale_orders (
    id text NOT NULL,
    sale_id text NOT NULL,
    customer text NOT NULL,
    quantity integer NOT NULL,
    hold_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    grant_id bigint,
    CONSTRAINT sale_orders_quantity_check CHECK ((quantity >= 1))
);

CREATE TABLE dibs.tickets (
    sale_id text NOT NULL,
    number bigint NOT NULL,
    customer text NOT NULL,
    status text DEFAULT 'waiting'::text NOT NULL,
    joined_at timestamp with time zone DEFAULT now() NOT NULL,
    admitted_until timestamp with time zone,
    hold_id text,
    place bigint,
    verified boolean DEFAULT true NOT NULL,
    CONSTRAINT tickets_status_check CHECK ((status = ANY (ARRAY['waiting'::text, 'admitted'::text, 'used'::text, 'expired'::text, 'sold_out'::text])))
);

CREATE TABLE dibs.waiting_rooms (
    sale_id text NOT NULL,
    admit_per_second double precision NOT NULL,
    window_ms integer NOT NULL,
    secret text NOT NULL,
    next_number bigint DEFAULT 1 NOT NULL,
    admitted_through bigint DEFAULT 0 NOT NULL,
    budget double precision DEFAULT 0 NOT NULL,
    refilled_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fair_start boolean DEFAULT false NOT NULL,
    verification boolean DEFAULT false NOT NULL,
    draw_seed text,
    pre_queue bigint,
    drawn_at timestamp with time zone,
    n_waiting bigint DEFAULT 0 NOT NULL,
    n_admitted bigint DEFAULT 0 NOT NULL,
    n_used bigint DEFAULT 0 NOT NULL,
    n_expired bigint DEFAULT 0 NOT NULL,
    n_sold_out bigint DEFAULT 0 NOT NULL,
    CONSTRAINT waiting_rooms_admit_per_second_check CHECK ((admit_per_second > (0)::double precision)),
    CONSTRAINT waiting_rooms_window_ms_check CHECK ((window_ms > 0))
);

CREATE TABLE dibs.wishlist (
    sku text NOT NULL,
    customer text NOT NULL,
    channels jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY dibs.codes ALTER COLUMN id SET DEFAULT nextval('dibs.codes_id_seq'::regclass);

ALTER TABLE ONLY dibs.outbox ALTER COLUMN id SET DEFAULT nextval('dibs.outbox_id_seq'::regclass);

ALTER TABLE ONLY dibs.outbox_deliveries ALTER COLUMN id SET DEFAULT nextval('dibs.outbox_deliveries_id_seq'::regclass);

ALTER TABLE ONLY dibs.pools ALTER COLUMN id SET DEFAULT nextval('dibs.pools_id_seq'::regclass);

ALTER TABLE ONLY dibs.sale_grants ALTER COLUMN id SET DEFAULT nextval('dibs.sale_grants_id_seq'::regclass);

ALTER TABLE ONLY dibs.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.carts
    ADD CONSTRAINT carts_key_key UNIQUE (key);

ALTER TABLE ONLY dibs.carts
    ADD CONSTRAINT carts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.claim_keys
    ADD CONSTRAINT claim_keys_pkey PRIMARY KEY (pool_id, key);

ALTER TABLE ONLY dibs.code_uses
    ADD CONSTRAINT code_uses_pkey PRIMARY KEY (pool_id, code, order_id);

ALTER TABLE ONLY dibs.codes
    ADD CONSTRAINT codes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.codes
    ADD CONSTRAINT codes_pool_id_code_key UNIQUE (pool_id, code);

ALTER TABLE ONLY dibs.counter_shards
    ADD CONSTRAINT counter_shards_pkey PRIMARY KEY (name, shard);

ALTER TABLE ONLY dibs.counters
    ADD CONSTRAINT counters_pkey PRIMARY KEY (name);

ALTER TABLE ONLY dibs.forecast_watches
    ADD CONSTRAINT forecast_watches_pkey PRIMARY KEY (kind, subject);

ALTER TABLE ONLY dibs.function_versions
    ADD CONSTRAINT function_versions_pkey PRIMARY KEY (name);

ALTER TABLE ONLY dibs.idempotency_records
    ADD CONSTRAINT idempotency_records_pkey PRIMARY KEY (scope, key);

ALTER TABLE ONLY dibs.limit_definitions
    ADD CONSTRAINT limit_definitions_pkey PRIMARY KEY (name);

ALTER TABLE ONLY dibs.limit_state
    ADD CONSTRAINT limit_state_pkey PRIMARY KEY (name, key);

ALTER TABLE ONLY dibs.lock_fences
    ADD CONSTRAINT lock_fences_pkey PRIMARY KEY (key);

ALTER TABLE ONLY dibs.lock_holders
    ADD CONSTRAINT lock_holders_pkey PRIMARY KEY (key, token);

ALTER TABLE ONLY dibs.migrations
    ADD CONSTRAINT migrations_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.multi_codes
    ADD CONSTRAINT multi_codes_pkey PRIMARY KEY (pool_id, code);

ALTER TABLE ONLY dibs.outbox_deliveries
    ADD CONSTRAINT outbox_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.outbox
    ADD CONSTRAINT outbox_idempotency_key_key UNIQUE (idempotency_key);

ALTER TABLE ONLY dibs.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.pool_counters
    ADD CONSTRAINT pool_counters_pkey PRIMARY KEY (pool_id, shard);

ALTER TABLE ONLY dibs.pools
    ADD CONSTRAINT pools_name_key UNIQUE (name);

ALTER TABLE ONLY dibs.pools_never_parked
    ADD CONSTRAINT pools_never_parked_pkey PRIMARY KEY (pool_id);

ALTER TABLE ONLY dibs.pools
    ADD CONSTRAINT pools_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.rate_limits
    ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (key);

ALTER TABLE ONLY dibs.sale_grants
    ADD CONSTRAINT sale_grants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.sale_holds
    ADD CONSTRAINT sale_holds_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.sale_keys
    ADD CONSTRAINT sale_keys_pkey PRIMARY KEY (sale_id, key);

ALTER TABLE ONLY dibs.sale_orders
    ADD CONSTRAINT sale_orders_hold_id_key UNIQUE (hold_id);

ALTER TABLE ONLY dibs.sale_orders
    ADD CONSTRAINT sale_orders_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.sales
    ADD CONSTRAINT sales_pkey PRIMARY KEY (id);

ALTER TABLE ONLY dibs.tickets
    ADD CONSTRAINT tickets_pkey PRIMARY KEY (sale_id, number);

ALTER TABLE ONLY dibs.tickets
    ADD CONSTRAINT tickets_sale_id_customer_key UNIQUE (sale_id, customer);

ALTER TABLE ONLY dibs.waiting_rooms
    ADD CONSTRAINT waiting_rooms_pkey PRIMARY KEY (sale_id);

ALTER TABLE ONLY dibs.wishlist
    ADD CONSTRAINT wishlist_pkey PRIMARY KEY (sku, customer);

CREATE INDEX api_keys_tenant ON dibs.api_keys USING btree (tenant, created_at);

CREATE INDEX code_uses_claimant ON dibs.code_uses USING btree (pool_id, code, claimant) WHERE (claimant IS NOT NULL);

CREATE INDEX codes_claim_key ON dibs.codes USING btree (pool_id, claim_key) WHERE (claim_key IS NOT NULL);

CREATE INDEX codes_claimed_at ON dibs.codes USING btree (pool_id, claimed_at) WHERE (claimed_at IS NOT NULL);

CREATE INDEX codes_free_expiring ON dibs.codes USING btree (pool_id, expires_at) WHERE ((status = 'free'::text) AND (parked_until IS NULL) AND (expires_at IS NOT NULL));

CREATE INDEX codes_free_open ON dibs.codes USING btree (pool_id, rnd) WHERE ((status = 'free'::text) AND (parked_until IS NULL));

CREATE UNIQUE INDEX codes_holder_slot ON dibs.codes USING btree (pool_id, claimant, slot) WHERE (claimant IS NOT NULL);

CREATE INDEX codes_parked ON dibs.codes USING btree (pool_id, parked_until) WHERE (parked_until IS NOT NULL);

CREATE INDEX idempotency_records_expiry ON dibs.idempotency_records USING btree (expires_at);

CREATE INDEX limit_state_idle ON dibs.limit_state USING btree (idle_at_ms);

CREATE INDEX outbox_deliveries_event ON dibs.outbox_deliveries USING btree (event_id, id);

CREATE INDEX outbox_due ON dibs.outbox USING btree (id) WHERE ((delivered_at IS NULL) AND (dead_at IS NULL));

CREATE INDEX outbox_pool ON dibs.outbox USING btree (pool, id);

CREATE INDEX outbox_sale ON dibs.outbox USING btree (sale, id);

CREATE INDEX sale_grants_expiry ON dibs.sale_grants USING btree (expires_at) WHERE (revoked_at IS NULL);

CREATE INDEX sale_grants_open ON dibs.sale_grants USING btree (sale_id) WHERE (revoked_at IS NULL);

CREATE INDEX sale_holds_cart ON dibs.sale_holds USING btree (cart_id, cart_line) WHERE (cart_id IS NOT NULL);

CREATE INDEX sale_holds_expiry ON dibs.sale_holds USING btree (expires_at) WHERE (status = 'active'::text);

CREATE UNIQUE INDEX sale_holds_one_active ON dibs.sale_holds USING btree (sale_id, customer) WHERE (status = 'active'::text);

CREATE INDEX sale_holds_sale_cart ON dibs.sale_holds USING btree (sale_id, cart_id) WHERE (cart_id IS NOT NULL);

CREATE INDEX sale_holds_sale_expiry ON dibs.sale_holds USING btree (sale_id, expires_at) WHERE (status = 'active'::text);

CREATE INDEX sale_orders_created_at ON dibs.sale_orders USING btree (sale_id, created_at);

CREATE INDEX sale_orders_customer ON dibs.sale_orders USING btree (sale_id, customer);

CREATE INDEX sale_orders_grant ON dibs.sale_orders USING btree (grant_id) WHERE (grant_id IS NOT NULL);

CREATE INDEX sales_sku ON dibs.sales USING btree (sku, starts_at);

CREATE INDEX sales_to_announce ON dibs.sales USING btree (starts_at) WHERE ((announced_at IS NULL) AND (cancelled_at IS NULL));

CREATE INDEX sales_to_end ON dibs.sales USING btree (ends_at) WHERE (ended_recorded_at IS NULL);

CREATE INDEX tickets_admitted ON dibs.tickets USING btree (sale_id, admitted_until) WHERE (status = 'admitted'::text);

CREATE UNIQUE INDEX tickets_place ON dibs.tickets USING btree (sale_id, place);

CREATE INDEX tickets_waiting ON dibs.tickets USING btree (sale_id, place) WHERE (status = 'waiting'::text);

CREATE TRIGGER codes_park_insert BEFORE INSERT ON dibs.codes FOR EACH ROW WHEN (((new.hold_until IS NOT NULL) OR (new.starts_at IS NOT NULL) OR (new.expires_at IS NOT NULL))) EXECUTE FUNCTION dibs.codes_park();

CREATE TRIGGER codes_park_update BEFORE UPDATE OF status, hold_until, starts_at, expires_at ON dibs.codes FOR EACH ROW WHEN (((new.status = 'free'::text) OR (old.parked_until IS NOT NULL))) EXECUTE FUNCTION dibs.codes_park();

CREATE TRIGGER tickets_count_delete AFTER DELETE ON dibs.tickets REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dibs.tickets_count();

CREATE TRIGGER tickets_count_insert AFTER INSERT ON dibs.tickets REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dibs.tickets_count();

CREATE TRIGGER tickets_count_update AFTER UPDATE ON dibs.tickets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dibs.tickets_count();

ALTER TABLE ONLY dibs.code_uses
    ADD CONSTRAINT code_uses_pool_id_code_fkey FOREIGN KEY (pool_id, code) REFERENCES dibs.multi_codes(pool_id, code) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.codes
    ADD CONSTRAINT codes_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES dibs.pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.multi_codes
    ADD CONSTRAINT multi_codes_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES dibs.pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.outbox_deliveries
    ADD CONSTRAINT outbox_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES dibs.outbox(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.pool_counters
    ADD CONSTRAINT pool_counters_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES dibs.pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.pools_never_parked
    ADD CONSTRAINT pools_never_parked_pool_id_fkey FOREIGN KEY (pool_id) REFERENCES dibs.pools(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.sale_grants
    ADD CONSTRAINT sale_grants_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.sales(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.sale_holds
    ADD CONSTRAINT sale_holds_cart_id_fkey FOREIGN KEY (cart_id) REFERENCES dibs.carts(id);

ALTER TABLE ONLY dibs.sale_holds
    ADD CONSTRAINT sale_holds_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.sales(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.sale_keys
    ADD CONSTRAINT sale_keys_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.sales(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.sale_orders
    ADD CONSTRAINT sale_orders_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.sales(id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.tickets
    ADD CONSTRAINT tickets_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.waiting_rooms(sale_id) ON DELETE CASCADE;

ALTER TABLE ONLY dibs.waiting_rooms
    ADD CONSTRAINT waiting_rooms_sale_id_fkey FOREIGN KEY (sale_id) REFERENCES dibs.sales(id) ON DELETE CASCADE;
