-- 17: lookups that stay probes as the tables grow.
--
-- A worker's open leases (its lease cap, the leases it asks for again) were found through
-- results_worker, which holds every result the worker ever had: each assignment walked the
-- worker's whole history. They have an index of their own now.
CREATE INDEX results_open_by_worker ON results(worker_id, deadline_ms) WHERE state = 0;
-- Unused since migration 9 (the assignment walks workunits_ready_by_campaign), and written on
-- every handout that leaves a workunit ready.
DROP INDEX workunits_ready;
--
-- The results' counter triggers find each row's campaign with an index probe of its
-- workunit, not a join. The join of migration 16 was planned once per session, as a hash join
-- that read the whole workunits table each time a statement inserted or updated results (its
-- transition table has no statistics): 96 full reads of workunits in one store benchmark run,
-- growing with the table. A scalar subquery in the select list is never turned into a join,
-- so each row is one probe of the primary key. The sums are those of migration 16.
CREATE OR REPLACE FUNCTION c960_results_issued_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT t.c, COUNT(*)::BIGINT AS k
        FROM (SELECT (SELECT w.campaign_id FROM workunits w WHERE w.id = n.workunit_id) AS c
              FROM c960_new_results n WHERE n.state = 0) t
        GROUP BY t.c
        ORDER BY t.c
    LOOP
        PERFORM c960_count(r.c, 0, 0, 0, r.k, 0, 0, 0, 0);
    END LOOP;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION c960_result_counts_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT t.c, SUM(t.dflight)::BIGINT AS dflight, SUM(t.dhi)::BIGINT AS dhi,
            SUM(t.dlo)::BIGINT AS dlo
        FROM (SELECT (SELECT w.campaign_id FROM workunits w WHERE w.id = n.workunit_id) AS c,
                (CASE WHEN n.state = 0 THEN 1 ELSE 0 END) - (CASE WHEN o.state = 0 THEN 1 ELSE 0 END) AS dflight,
                (CASE WHEN n.state = 1 THEN (COALESCE(n.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                    - (CASE WHEN o.state = 1 THEN (COALESCE(o.nodes, 0) >> 32) & 4294967295 ELSE 0 END) AS dhi,
                (CASE WHEN n.state = 1 THEN COALESCE(n.nodes, 0) & 4294967295 ELSE 0 END)
                    - (CASE WHEN o.state = 1 THEN COALESCE(o.nodes, 0) & 4294967295 ELSE 0 END) AS dlo
              FROM c960_old_results o JOIN c960_new_results n ON n.id = o.id
              WHERE o.state IS DISTINCT FROM n.state) t
        GROUP BY t.c
        ORDER BY t.c
    LOOP
        IF r.dflight <> 0 OR r.dhi <> 0 OR r.dlo <> 0 THEN
            PERFORM c960_count(r.c, 0, 0, 0, r.dflight, 0, 0, r.dhi, r.dlo);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
