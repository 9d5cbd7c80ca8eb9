-- 16: PostgreSQL adds its progress counters once per statement (transition tables) instead of
-- once per row. SQLite has no statement triggers with transition tables and one writer, whose
-- row triggers cost no lock waits: nothing changes here.
SELECT 1;
