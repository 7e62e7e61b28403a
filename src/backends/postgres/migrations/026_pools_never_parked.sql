-- Claims skip the parked-code upkeep in pools that never had a code to move (issue 26). Since 013
-- every claim statement called unpark_due — a plpgsql call and two index probes, ~60 µs of the
-- fast statement's ~300 µs of server time — though most claim pools never hold, window or expire
-- a single code. A row here says the pool never had such a code; the claim statements run
-- unpark_due only when the pool has none.
-- - insertPool of this build adds the row with the pool. codes_park (the trigger that decides
--   parked_until) deletes it in the transaction that gives a free code a hold, a window or an
--   expiry, so claims see the row gone no later than they see the code. Nothing adds it back, so
--   removing it never races a park.
-- - A table of its own, not a column on pools: the trigger then locks no pool row (updatePool
--   locks counter shards, then the pool row; a release locks its code, then the shards — the
--   trigger's delete sits between code and shards, where nothing else waits).
-- - Pools that exist now, and pools a build without this migration creates (a rolling deploy),
--   have no row: they keep the upkeep, and a code parked by the old trigger before the new one is
--   applied (functions/, right after the migrations) is never missed.
CREATE TABLE pools_never_parked (
  pool_id bigint PRIMARY KEY REFERENCES pools (id) ON DELETE CASCADE
);
