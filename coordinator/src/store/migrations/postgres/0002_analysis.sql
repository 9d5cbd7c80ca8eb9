-- 2: in 0001 for PostgreSQL (its schema began at migration 8).
SELECT 1;
