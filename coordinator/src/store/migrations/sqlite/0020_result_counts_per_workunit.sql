-- 20: PostgreSQL's counter trigger on results looks up fewer campaigns. SQLite counts in row
-- triggers: nothing changes here.
SELECT 1;
