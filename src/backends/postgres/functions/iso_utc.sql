-- Timestamps in event payloads as fixed-width UTC ISO strings, the same shape every backend returns.
CREATE OR REPLACE FUNCTION iso_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
