-- 18: PostgreSQL's results drops its foreign keys (each lease inserted paid for two locking
-- reads there). SQLite keeps them: it checks a key with an in-process index lookup, and
-- dropping a constraint would mean rebuilding the table.
SELECT 1;
