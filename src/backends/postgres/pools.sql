-- Statements of the PostgreSQL pool backend (claims are in claim.sql and claim-fast.sql).
-- Lock order, everywhere: code rows → counter shard → pool row (low-stock settle). Keeping one
-- order means a claim and a release/revoke can never deadlock each other. Claims move their shard
-- before they take code rows, but they take codes with SKIP LOCKED and so never wait for a code row
-- while holding a shard; rule changes and deletions lock in the order above (updatePool, deletePool).

-- name: poolByName
-- $1 name → the pool with its counters summed over the shards (one row per shard: O(1)).
SELECT p.id, p.name, p.per_claimant_limit, p.low_stock_threshold, p.metadata, p.starts_at, p.expires_at,
       p.max_redemptions, p.max_redemptions_per_claimant, p.public_codes, p.code_format, p.created_at,
       c.total, c.free, c.claimed, c.redeemed, c.revoked
FROM pools p, LATERAL (
  SELECT coalesce(sum(total), 0)::bigint AS total, coalesce(sum(free), 0)::bigint AS free,
         coalesce(sum(claimed), 0)::bigint AS claimed, coalesce(sum(redeemed), 0)::bigint AS redeemed,
         coalesce(sum(revoked), 0)::bigint AS revoked
  FROM pool_counters WHERE pool_id = p.id
) c
WHERE p.name = $1

-- name: listPools
-- $1 after (name, '' for the start), $2 limit → pools by name in byte order (a stable cursor).
SELECT p.id, p.name, p.per_claimant_limit, p.low_stock_threshold, p.metadata, p.starts_at, p.expires_at,
       p.max_redemptions, p.max_redemptions_per_claimant, p.public_codes, p.code_format, p.created_at,
       c.total, c.free, c.claimed, c.redeemed, c.revoked
FROM pools p, LATERAL (
  SELECT coalesce(sum(total), 0)::bigint AS total, coalesce(sum(free), 0)::bigint AS free,
         coalesce(sum(claimed), 0)::bigint AS claimed, coalesce(sum(redeemed), 0)::bigint AS redeemed,
         coalesce(sum(revoked), 0)::bigint AS revoked
  FROM pool_counters WHERE pool_id = p.id
) c
WHERE p.name COLLATE "C" > $1
ORDER BY p.name COLLATE "C"
LIMIT $2

-- name: insertPool
-- $1 name, $2 perClaimantLimit, $3 lowStockThreshold, $4 metadata jsonb, $5 counter shards,
-- $6 startsAt, $7 expiresAt, $8 maxRedemptions, $9 maxRedemptionsPerClaimant, $10 publicCodes, $11 codeFormat
-- → one row per counter shard created; no rows when the name is taken. A new pool has no code to
-- park yet: claims skip unpark_due until codes_park removes its pools_never_parked row (026).
WITH p AS (
  INSERT INTO pools (name, per_claimant_limit, low_stock_threshold, metadata, counter_shards, starts_at, expires_at, max_redemptions, max_redemptions_per_claimant, public_codes, code_format)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT (name) DO NOTHING
  RETURNING id, counter_shards
),
never_parked AS (
  INSERT INTO pools_never_parked (pool_id) SELECT id FROM p
)
INSERT INTO pool_counters (pool_id, shard)
SELECT p.id, s FROM p, generate_series(0, p.counter_shards - 1) AS s
RETURNING pool_id

-- name: bumpRulesVersion
-- $1 pool id. First step of a rule change (updatePool): locks every counter shard of the pool,
-- waiting for each claim that has already moved one (it judged the old rules) to commit, and
-- raises their rules_version, so a claim that read the old rules and has not reached its shard
-- yet takes nothing (claim.sql). updatePool raises pools.rules_version in the same transaction.
UPDATE pool_counters SET rules_version = rules_version + 1 WHERE pool_id = $1

-- name: lockPoolRow
-- $1 pool id. Serialises limit changes and low-stock settling of one pool.
SELECT id FROM pools WHERE id = $1 FOR NO KEY UPDATE

-- name: maxHeldByOneClaimant
SELECT coalesce(max(n), 0)::int AS n FROM (
  SELECT count(*) AS n FROM codes WHERE pool_id = $1 AND claimant IS NOT NULL GROUP BY claimant
) AS held

-- name: lockHighSlots
-- $1 pool id, $2 the new (lower) perClaimantLimit: locks the holdings compactSlots will move, first
-- (code rows come first in the lock order), so a release of one of them cannot deadlock with it.
SELECT id FROM codes WHERE pool_id = $1 AND claimant IS NOT NULL AND slot > $2::int FOR UPDATE

-- name: compactSlots
-- $1 pool id, $2 the new (lower) perClaimantLimit. Moves every holding in a slot above the limit
-- into a free slot of its claimant within it (each claimant holds at most the limit: checked
-- before), so "every slot within the limit" keeps UNIQUE (pool_id, claimant, slot) enough for I2.
-- Moved rows go only to slots nobody holds, so the unique index never sees two at once; the
-- conditions repeated on c are re-checked if a release changed the row meanwhile.
WITH high AS (
  SELECT id, claimant, row_number() OVER (PARTITION BY claimant ORDER BY slot) AS k
  FROM codes WHERE pool_id = $1 AND claimant IS NOT NULL AND slot > $2::int
),
free_slots AS (
  SELECT h.claimant, s.slot, row_number() OVER (PARTITION BY h.claimant ORDER BY s.slot) AS k
  FROM (SELECT DISTINCT claimant FROM high) h, generate_series(1, $2::int) AS s(slot)
  WHERE NOT EXISTS (SELECT 1 FROM codes c WHERE c.pool_id = $1 AND c.claimant = h.claimant AND c.slot = s.slot)
)
UPDATE codes c SET slot = f.slot
FROM high h JOIN free_slots f ON f.claimant = h.claimant AND f.k = h.k
WHERE c.id = h.id AND c.claimant = h.claimant AND c.slot > $2::int

-- name: updatePool
-- $1 id, $2 perClaimantLimit, $3 lowStockThreshold, $4 metadata, $5 startsAt, $6 expiresAt,
-- $7 maxRedemptions, $8 maxRedemptionsPerClaimant, $9 publicCodes, $10 codeFormat. Re-arms the low-stock alert
-- when the (new) threshold is absent or below the free count. Raises rules_version as
-- bumpRulesVersion did for the shards (they are equal again at commit).
UPDATE pools
SET rules_version = rules_version + 1, per_claimant_limit = $2, low_stock_threshold = $3, metadata = $4, starts_at = $5, expires_at = $6,
    max_redemptions = $7, max_redemptions_per_claimant = $8, public_codes = $9, code_format = $10,
    low_stock_armed = CASE
      WHEN $3::int IS NULL OR (SELECT coalesce(sum(free), 0) FROM pool_counters WHERE pool_id = $1) > $3::int THEN true
      ELSE low_stock_armed END
WHERE id = $1

-- name: lockPoolCodes
-- $1 pool id. First step of a deletion: every code row of the pool, locked in the documented order
-- (waits for releases, revocations and redeems in flight; claims skip locked rows).
SELECT count(*) FROM (SELECT 1 FROM codes WHERE pool_id = $1 FOR UPDATE) AS locked

-- name: deleteKeys
DELETE FROM claim_keys WHERE pool_id = $1

-- name: deletePool
-- Codes and counters go with the pool (ON DELETE CASCADE).
DELETE FROM pools WHERE id = $1

-- name: deleteEvents
-- A pool re-created under the same name starts a fresh event history (idempotency keys name the pool).
DELETE FROM outbox WHERE pool = $1

-- name: createStaging
-- Per-connection staging table for COPY (each code with its own window, NULL = open on that
-- side); emptied at the end of every transaction. `ord` is the code's place in the batch, numbered
-- by the client: as a serial column it cost a sequence call per staged row (measured: the COPY of
-- a 5,000-code batch took 7-8 ms of server CPU, 4.5 ms without; 2-3 % of the batch's whole cost).
-- Named apart from dibs_import_staging (ord bigserial, filled without `ord`), which an older build
-- may have left in a session shared through a pooler.
CREATE TEMP TABLE IF NOT EXISTS dibs_import_rows (ord integer NOT NULL, code text NOT NULL, starts_at timestamptz, expires_at timestamptz) ON COMMIT DELETE ROWS

-- name: copyIntoStaging
COPY pg_temp.dibs_import_rows (ord, code, starts_at, expires_at) FROM STDIN

-- name: insertFromStaging
-- $1 pool id → inserted rows; duplicates (in the pool or earlier in the batch) are skipped, and
-- a code repeated in the batch keeps the window of its first occurrence.
-- A code the pool already has as a multi-use code is a duplicate too.
-- Ids are drawn in input order (export order = import order), but rows go in sorted by code: a
-- batch waits on a code a parallel batch has inserted but not committed, and batches that take
-- their codes in one order cannot wait on each other in a cycle (shuffled files imported at once
-- deadlocked every time), while neighbouring codes also touch neighbouring index pages.
INSERT INTO codes (id, pool_id, code, starts_at, expires_at)
SELECT s.id, $1, s.code, s.starts_at, s.expires_at
FROM (
  SELECT nextval('codes_id_seq') AS id, st.ord, st.code, st.starts_at, st.expires_at
  FROM pg_temp.dibs_import_rows st ORDER BY st.ord
) s
WHERE NOT EXISTS (SELECT 1 FROM multi_codes m WHERE m.pool_id = $1 AND m.code = s.code)
ORDER BY s.code, s.ord
ON CONFLICT (pool_id, code) DO NOTHING

-- name: insertFreshFromStaging
-- insertFromStaging without ON CONFLICT, for the common batch whose codes are all new: a plain
-- insert costs ~20 % less server CPU per code (no speculative insertion, one WAL record less).
-- A code that is not new makes it fail with a unique violation; the caller then rolls back to a
-- savepoint and runs insertFromStaging, which skips it. Same ids and order as insertFromStaging.
INSERT INTO codes (id, pool_id, code, starts_at, expires_at)
SELECT s.id, $1, s.code, s.starts_at, s.expires_at
FROM (
  SELECT nextval('codes_id_seq') AS id, st.ord, st.code, st.starts_at, st.expires_at
  FROM pg_temp.dibs_import_rows st ORDER BY st.ord
) s
WHERE NOT EXISTS (SELECT 1 FROM multi_codes m WHERE m.pool_id = $1 AND m.code = s.code)
ORDER BY s.code, s.ord

-- name: codesRowEstimate
-- The planner's row count of codes (-1: never analyzed), read to decide whether an import grew it enough to analyze.
SELECT reltuples::bigint AS n FROM pg_class WHERE oid = 'codes'::regclass

-- name: analyzeCodes
ANALYZE codes

-- name: moveCounters
-- $1 pool id, $2 shard in [0,1), $3 total, $4 free, $5 claimed, $6 redeemed, $7 revoked (deltas)
UPDATE pool_counters pc
SET total = total + $3, free = free + $4, claimed = claimed + $5, redeemed = redeemed + $6, revoked = revoked + $7
FROM pools p
WHERE p.id = $1 AND pc.pool_id = p.id AND pc.shard = floor($2::float8 * p.counter_shards)::int

-- name: settleLowStock
-- $1 pool id, $2 free went down in this transaction. Run after lockPoolRow, so this statement's
-- snapshot sees every earlier settled move of the pool: the crossing is decided exactly once.
-- Fires (disarms + counts the crossing) when free dropped to/below the threshold while armed;
-- re-arms when free is above the threshold. Returns a row only when something changed.
WITH f AS (
  SELECT coalesce(sum(free), 0)::int AS free FROM pool_counters WHERE pool_id = $1
),
d AS (
  SELECT p.id, p.name, p.low_stock_threshold AS threshold, f.free,
         (p.low_stock_threshold IS NOT NULL AND p.low_stock_armed AND $2::boolean AND f.free <= p.low_stock_threshold) AS fire,
         (p.low_stock_threshold IS NULL OR f.free > p.low_stock_threshold) AS rearm
  FROM pools p, f WHERE p.id = $1
)
UPDATE pools p
SET low_stock_armed = CASE WHEN d.rearm THEN true WHEN d.fire THEN false ELSE p.low_stock_armed END,
    low_stock_events = p.low_stock_events + d.fire::int
FROM d
WHERE p.id = d.id AND (d.fire OR (d.rearm AND NOT p.low_stock_armed))
RETURNING d.fire, d.name, d.free, d.threshold, p.low_stock_events

-- name: insertEvent
-- $1 type, $2 idempotency key, $3 pool, $4 payload
INSERT INTO outbox (type, idempotency_key, pool, payload) VALUES ($1, $2, $3, $4)
ON CONFLICT (idempotency_key) DO NOTHING

-- name: deleteSpentKey
-- $1 pool id, $2 key: forgets a key none of whose codes its claimant still holds.
DELETE FROM claim_keys k
WHERE k.pool_id = $1 AND k.key = $2
  AND NOT EXISTS (SELECT 1 FROM codes c WHERE c.pool_id = $1 AND c.claim_key = $2 AND c.claimant = k.claimant)

-- name: codeForUpdate
-- $1 pool id, $2 code
SELECT id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order, hold_claimant, hold_until, starts_at, expires_at FROM codes WHERE pool_id = $1 AND code = $2 FOR UPDATE

-- name: codeByValue
SELECT id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order FROM codes WHERE pool_id = $1 AND code = $2

-- name: codeByName
-- $1 pool name, $2 code: one statement for the hot read of a checkout (validate). pool_id is null
-- when the pool does not exist; no row at all when the pool exists but the code does not.
SELECT p.id AS pool_id, c.id, c.code, c.status, c.claimant, c.claim_key, c.claimed_at, c.redeemed_at, c.redeemed_order,
       c.hold_claimant, c.hold_until, c.starts_at, c.expires_at, now() AS now
FROM pools p LEFT JOIN codes c ON c.pool_id = p.id AND c.code = $2
WHERE p.name = $1

-- name: poolIdByName
-- $1 name → id, threshold and window with now() (no counter sum): what a code transition needs.
SELECT id, per_claimant_limit, low_stock_threshold, starts_at, expires_at, max_redemptions, max_redemptions_per_claimant, public_codes, now() AS now
FROM pools WHERE name = $1

-- name: freeSlot
-- $1 pool id, $2 claimant → the pool's perClaimantLimit and the claimant's lowest free slot (null:
-- at the limit). Run under the pool row lock, so the limit is the committed one, not the one the
-- transaction read before it waited.
SELECT p.per_claimant_limit,
  (SELECT s FROM generate_series(1, p.per_claimant_limit) AS s
   WHERE NOT EXISTS (SELECT 1 FROM codes WHERE pool_id = $1 AND claimant = $2 AND slot = s)
   ORDER BY s LIMIT 1) AS slot
FROM pools p WHERE p.id = $1

-- name: redeemDirect
-- $1 id, $2 claimant, $3 slot, $4 order: a never-claimed code of a public pool redeemed at once,
-- its redeemer becoming its holder → the new row
UPDATE codes
SET status = 'redeemed', claimant = $2, slot = $3, claim_key = NULL, claimed_at = now(), redeemed_at = now(), redeemed_order = $4::text,
    hold_claimant = NULL, hold_until = NULL
WHERE id = $1
RETURNING id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order, hold_claimant, hold_until, starts_at, expires_at

-- name: redeemedCounts
-- $1 pool id, $2 claimant: codes redeemed in the pool and by the claimant. Run under the pool row
-- lock (lockPoolRow), so concurrent redeems of a limited pool count one after the other.
SELECT (SELECT coalesce(sum(redeemed), 0) FROM pool_counters WHERE pool_id = $1)::int AS pool,
       (SELECT count(*) FROM codes WHERE pool_id = $1 AND claimant = $2 AND status = 'redeemed')::int AS claimant

-- name: now
SELECT now() AS now

-- name: setCodeState
-- $1 id, $2 status, $3 keep holder (redeem, unredeem), $4 order of a redemption → the new row
UPDATE codes
SET status = $2,
    claimant = CASE WHEN $3::boolean THEN claimant END,
    slot = CASE WHEN $3::boolean THEN slot END,
    claim_key = CASE WHEN $3::boolean THEN claim_key END,
    claimed_at = CASE WHEN $3::boolean THEN claimed_at END,
    redeemed_at = CASE WHEN $2 = 'redeemed' THEN now() END,
    redeemed_order = CASE WHEN $2 = 'redeemed' THEN $4::text END,
    -- every state change ends a checkout hold (a redeem by its claimant consumes it)
    hold_claimant = NULL, hold_until = NULL
WHERE id = $1
RETURNING id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order, hold_claimant, hold_until, starts_at, expires_at

-- name: heldCodes
SELECT id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order FROM codes
WHERE pool_id = $1 AND claimant = $2 ORDER BY claimed_at, id

-- name: exportAll
SELECT id, code, status, claimant, claimed_at, redeemed_at, redeemed_order, starts_at, expires_at FROM codes WHERE pool_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: exportByStatus
SELECT id, code, status, claimant, claimed_at, redeemed_at, redeemed_order, starts_at, expires_at FROM codes WHERE pool_id = $1 AND status = $4 AND id > $2 ORDER BY id LIMIT $3

-- name: countByStatus
SELECT status, count(*)::bigint AS n FROM codes WHERE pool_id = $1 GROUP BY status

-- name: claimantsOverLimit
SELECT claimant, count(*)::int AS n FROM codes WHERE pool_id = $1 AND claimant IS NOT NULL
GROUP BY claimant HAVING count(*) > $2 LIMIT 100

-- name: holderMismatch
SELECT code, status, claimant FROM codes
WHERE pool_id = $1 AND ((claimant IS NOT NULL) <> (status IN ('claimed', 'redeemed')))
LIMIT 100

-- name: keysWithForeignCodes
SELECT k.key, k.claimant, c.code, c.claimant AS holder FROM claim_keys k
JOIN codes c ON c.pool_id = k.pool_id AND c.claim_key = k.key
WHERE k.pool_id = $1 AND c.claimant IS DISTINCT FROM k.claimant
LIMIT 100

-- name: lowStockState
SELECT low_stock_events FROM pools WHERE id = $1

-- name: lowStockEventCount
SELECT count(*)::int AS n FROM outbox WHERE type = 'pool.low_stock' AND pool = $1

-- name: eventsAfter
SELECT id::text, type, idempotency_key, payload, created_at FROM outbox WHERE id > $1 ORDER BY id LIMIT $2

-- name: poolEventsAfter
SELECT id::text, type, idempotency_key, payload, created_at FROM outbox WHERE pool = $3 AND id > $1 ORDER BY id LIMIT $2

-- name: setHold
-- $1 id, $2 claimant (null ends the hold), $3 ttl in ms → the new row
UPDATE codes
SET hold_claimant = $2::text, hold_until = CASE WHEN $2::text IS NULL THEN NULL ELSE now() + make_interval(secs => $3::float8 / 1000) END
WHERE id = $1
RETURNING id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order, hold_claimant, hold_until, starts_at, expires_at

-- name: setCodeWindow
-- $1 id, $2 startsAt, $3 expiresAt → the new row
UPDATE codes SET starts_at = $2, expires_at = $3 WHERE id = $1
RETURNING id, code, status, claimant, claim_key, claimed_at, redeemed_at, redeemed_order, hold_claimant, hold_until, starts_at, expires_at

-- name: multiForUpdate
-- $1 pool id, $2 code: a multi-use code, locked — its redeems and refunds count one after the other
SELECT code, max_uses, per_claimant, uses, starts_at, expires_at FROM multi_codes WHERE pool_id = $1 AND code = $2 FOR UPDATE

-- name: multiByName
-- $1 pool name, $2 code, $3 claimant or null → the multi-use code with the claimant's uses
SELECT m.code, m.max_uses, m.per_claimant, m.uses, m.starts_at, m.expires_at,
       (SELECT count(*) FROM code_uses u WHERE u.pool_id = m.pool_id AND u.code = m.code AND u.claimant = $3::text)::int AS by_claimant
FROM pools p JOIN multi_codes m ON m.pool_id = p.id AND m.code = $2
WHERE p.name = $1

-- name: insertMulti
-- $1 pool id, $2 code, $3 max uses, $4 per claimant, $5 startsAt, $6 expiresAt; no row when the
-- pool has the code (single- or multi-use). Admin steps: an import of the same code committing at
-- the same instant is not excluded (the import's check is the mirror of this one).
INSERT INTO multi_codes (pool_id, code, max_uses, per_claimant, starts_at, expires_at)
SELECT $1, $2, $3, $4, $5, $6
WHERE NOT EXISTS (SELECT 1 FROM codes WHERE pool_id = $1 AND code = $2)
ON CONFLICT (pool_id, code) DO NOTHING
RETURNING code, max_uses, per_claimant, uses, starts_at, expires_at

-- name: setMultiWindow
UPDATE multi_codes SET starts_at = $3, expires_at = $4 WHERE pool_id = $1 AND code = $2
RETURNING code, max_uses, per_claimant, uses, starts_at, expires_at

-- name: moveUses
UPDATE multi_codes SET uses = uses + $3 WHERE pool_id = $1 AND code = $2

-- name: useOfOrder
SELECT order_id, claimant, used_at FROM code_uses WHERE pool_id = $1 AND code = $2 AND order_id = $3

-- name: usesByClaimant
SELECT count(*)::int AS n FROM code_uses WHERE pool_id = $1 AND code = $2 AND claimant = $3

-- name: insertUse
INSERT INTO code_uses (pool_id, code, order_id, claimant) VALUES ($1, $2, $3, $4) RETURNING order_id, claimant, used_at

-- name: deleteUse
DELETE FROM code_uses WHERE pool_id = $1 AND code = $2 AND order_id = $3

-- name: holdMismatch
-- A hold only on a code that can still be redeemed, and a claimed code's hold is its holder's.
SELECT code, status, claimant, hold_claimant FROM codes
WHERE pool_id = $1 AND hold_claimant IS NOT NULL AND (status NOT IN ('free', 'claimed') OR (status = 'claimed' AND hold_claimant <> claimant))
LIMIT 100

-- name: multiUseMismatch
SELECT m.code, m.uses, m.max_uses, (SELECT count(*) FROM code_uses u WHERE u.pool_id = m.pool_id AND u.code = m.code)::int AS recorded
FROM multi_codes m WHERE m.pool_id = $1
  AND (m.uses <> (SELECT count(*) FROM code_uses u WHERE u.pool_id = m.pool_id AND u.code = m.code) OR m.uses > m.max_uses)
LIMIT 100

-- name: multiUseOverClaimant
SELECT u.code, u.claimant, count(*)::int AS n, m.per_claimant FROM code_uses u
JOIN multi_codes m ON m.pool_id = u.pool_id AND m.code = u.code
WHERE u.pool_id = $1 AND u.claimant IS NOT NULL AND m.per_claimant IS NOT NULL
GROUP BY u.code, u.claimant, m.per_claimant HAVING count(*) > m.per_claimant
LIMIT 100

-- name: multiUseRedeem
-- $1 pool name, $2 code, $3 claimant or null, $4 order → one row (see functions/multi_use_redeem.sql)
SELECT * FROM multi_use_redeem($1, $2, $3::text, $4)
