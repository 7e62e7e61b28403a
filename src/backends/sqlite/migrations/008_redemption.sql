-- Redemption at checkout: the order a code was redeemed for. A second redeem for the
-- same order is a replay; for another order, `already_redeemed`. Cleared by unredeem (refunds).
ALTER TABLE dibs_codes ADD COLUMN redeemed_order TEXT;
