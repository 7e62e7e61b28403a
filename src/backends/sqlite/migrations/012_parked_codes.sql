-- Parked codes: a claim's cost must not grow with the number of free codes it cannot hand out.
-- Before this, claims walked dibs_codes_free and filtered out every code on hold or outside its
-- own window, on every claim (a pool loaded with next month's codes made each claim scan them
-- all). Now such a code is *parked* (the same arrangement as PostgreSQL's 013 and Redis' parked set):
-- - parked_until is when a free code may be handed out again (its hold's end or its window's
--   start, whichever is later; 'infinity' — after every ISO timestamp — once it has expired: it
--   never comes back by itself); NULL for codes that are not free and free codes that may be
--   claimable now;
-- - claims look only at unparked free codes (dibs_codes_free), and each claim first brings back a
--   bounded batch of due codes and parks a bounded batch of codes that expired while unparked
--   (pools.sql unparkDue / parkExpired), through indexes on those times: no timer is needed and
--   the work is paid once per code, not once per claim;
-- - a trigger parks or unparks a free code whenever what decides it changes (hold, hold release,
--   setCodeWindow, release back to free), so no statement has to remember to; an import parks its
--   codes as it inserts them (pools.sql insertCode: one write per code, as before).
-- A parked code is still free: counts, low stock, export and the audit are unchanged.
ALTER TABLE dibs_codes ADD COLUMN parked_until TEXT CHECK (parked_until IS NULL OR status = 'free');

-- Only rows whose parking can change run it: claims (a free, unparked code becoming claimed) skip it.
CREATE TRIGGER dibs_codes_park AFTER UPDATE OF status, hold_until, starts_at, expires_at ON dibs_codes
WHEN NEW.status = 'free' OR OLD.parked_until IS NOT NULL
BEGIN
  UPDATE dibs_codes SET parked_until = CASE
    WHEN NEW.status <> 'free' THEN NULL
    WHEN NEW.expires_at IS NOT NULL AND NEW.expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN 'infinity'
    WHEN NEW.hold_until > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') OR NEW.starts_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      THEN max(coalesce(NEW.hold_until, ''), coalesce(NEW.starts_at, ''))
  END
  WHERE id = NEW.id;
END;

DROP INDEX dibs_codes_free;
CREATE INDEX dibs_codes_free ON dibs_codes (pool_id, id) WHERE status = 'free' AND parked_until IS NULL;
-- due parked codes, oldest first ('infinity' is never due)
CREATE INDEX dibs_codes_parked ON dibs_codes (pool_id, parked_until) WHERE parked_until IS NOT NULL;
-- unparked free codes that will expire: found once they have
CREATE INDEX dibs_codes_free_expiring ON dibs_codes (pool_id, expires_at) WHERE status = 'free' AND parked_until IS NULL AND expires_at IS NOT NULL;

-- Existing pools: park the free codes that cannot be handed out now (the trigger decides).
UPDATE dibs_codes SET starts_at = starts_at
WHERE status = 'free' AND (hold_until IS NOT NULL OR starts_at IS NOT NULL OR expires_at IS NOT NULL);
