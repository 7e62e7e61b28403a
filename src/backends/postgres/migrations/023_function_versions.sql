-- The ledger of functions/*.sql: each function's current text lives once, in its own file, and is
-- applied (CREATE OR REPLACE) when the file's content hash differs from the one recorded here.
-- `level` is the newest migration of the build that applied it: a build with fewer migrations
-- (an older instance during a rolling deploy) does not put its older text back.
CREATE TABLE function_versions (
  name       text        PRIMARY KEY,
  hash       text        NOT NULL,
  level      integer     NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);
