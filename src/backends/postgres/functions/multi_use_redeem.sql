-- One use of a multi-use code in ONE server-side call: the code's row lock is held only for the
-- moment of this call (not across client round trips), so one hot code (WELCOME10 for the first
-- 1,000 buyers) serves its redeemers one after the other quickly. A retried order and a used-up code
-- are answered from an unlocked read first (both are final for that instant); otherwise the row
-- is locked and every rule checked again under the lock.
-- o_outcome: 'used' | 'replayed' | 'no_pool' | 'no_code', or the refusal's reason id (core/refusals.ts):
-- 'order_of_other_claimant' | 'pool_not_yet_valid' | 'pool_expired' | 'code_not_yet_valid' | 'code_expired' |
-- 'uses_exhausted' | 'claimant_required' | 'uses_per_claimant'. A refusal names its instant in o_at (a
-- window's edge) and its limit in o_limit.
DROP FUNCTION IF EXISTS multi_use_redeem(text, text, text, text);
CREATE FUNCTION multi_use_redeem(p_pool text, p_code text, p_claimant text, p_order text)
RETURNS TABLE (o_outcome text, o_max integer, o_per integer, o_uses integer, o_starts timestamptz, o_expires timestamptz,
               o_claimant text, o_used_at timestamptz, o_pool_starts timestamptz, o_pool_expires timestamptz,
               o_at timestamptz, o_limit integer)
LANGUAGE plpgsql AS $$
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
