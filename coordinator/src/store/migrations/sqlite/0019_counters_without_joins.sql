-- 19: PostgreSQL's statement-level counter triggers stop joining their transition tables.
-- SQLite counts in row triggers: nothing changes here.
SELECT 1;
