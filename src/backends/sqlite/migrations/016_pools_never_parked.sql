-- Claims skip the parked-code upkeep in pools that never had a code to move (issue 26; the same
-- arrangement as PostgreSQL's 026). Since 012 every claim ran parkExpired and unparkDue — two
-- UPDATE statements with their index probes — though most claim pools never hold, window or
-- expire a single code. A row here says the pool never had such a code; claims run the upkeep
-- only when the pool has none.
-- - createPool of this build adds the row with the pool. The triggers below delete it in the
--   statement that gives a free code a parking time or an expiry (import, hold, window, release),
--   so a claim sees the row gone no later than it sees the code. Nothing adds it back.
-- - Triggers, not the statements of pools.sql: they belong to the file, so a build without this
--   migration that writes to a migrated file (a rolling deploy) takes the row away just the same.
-- - Pools that exist now, and pools such an older build creates, have no row: they keep the
--   upkeep, and a code parked before this migration is never missed.
-- - A table of its own, not a column on dibs_pools: the pool row is rewritten by every claim's
--   counter move, and a pool's settings reads stay as they were.
CREATE TABLE dibs_pools_never_parked (
  pool_id INTEGER PRIMARY KEY REFERENCES dibs_pools (id) ON DELETE CASCADE
) STRICT;

-- A free code that is parked (a hold, a window not yet open, expired) or that will expire needs
-- the upkeep. Imports write parked_until in the INSERT itself (pools.sql insertCodes).
CREATE TRIGGER dibs_codes_parked_insert AFTER INSERT ON dibs_codes
WHEN NEW.status = 'free' AND (NEW.parked_until IS NOT NULL OR NEW.expires_at IS NOT NULL)
BEGIN
  DELETE FROM dibs_pools_never_parked WHERE pool_id = NEW.pool_id;
END;

-- Every update that can leave a free code parked or expiring names one of these columns: the
-- parking trigger of 012 and setCodeState write parked_until, setCodeWindow writes expires_at, a
-- release writes status. A claim (status to 'claimed') fails the WHEN at once.
CREATE TRIGGER dibs_codes_parked_update AFTER UPDATE OF status, expires_at, parked_until ON dibs_codes
WHEN NEW.status = 'free' AND (NEW.parked_until IS NOT NULL OR NEW.expires_at IS NOT NULL)
BEGIN
  DELETE FROM dibs_pools_never_parked WHERE pool_id = NEW.pool_id;
END;

-- The cart audit (carts.sql auditCartLines) starts from the carts with a line on one sale. Without
-- this it walked dibs_holds_cart, every cart line of every sale, to pick that sale's; now it reads
-- the sale's own cart lines. Partial, as dibs_holds_cart is: holds outside carts do not pay for it.
CREATE INDEX dibs_holds_sale_cart ON dibs_holds (sale_id, cart_id) WHERE cart_id IS NOT NULL;
