-- 20: the results' counter trigger sums a statement's rows per workunit before it looks up
-- their campaigns, and looks up only the workunits whose sums are not zero. Migration 19
-- probed the workunit of every old and every new row in a counted state, so grading a
-- quorum partner (its outcome changes, its state does not) cost two probes for sums of zero.
-- The sums are those of migration 19.
CREATE OR REPLACE FUNCTION c960_result_counts_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT (SELECT w.campaign_id FROM workunits w WHERE w.id = g.workunit_id) AS c,
            SUM(g.dflight)::BIGINT AS dflight, SUM(g.dhi)::BIGINT AS dhi, SUM(g.dlo)::BIGINT AS dlo
        FROM (
            SELECT t.workunit_id, SUM(t.dflight) AS dflight, SUM(t.dhi) AS dhi, SUM(t.dlo) AS dlo
            FROM (
                SELECT n.workunit_id,
                    CASE WHEN n.state = 0 THEN 1 ELSE 0 END AS dflight,
                    CASE WHEN n.state = 1 THEN (COALESCE(n.nodes, 0) >> 32) & 4294967295 ELSE 0 END AS dhi,
                    CASE WHEN n.state = 1 THEN COALESCE(n.nodes, 0) & 4294967295 ELSE 0 END AS dlo
                FROM c960_new_results n WHERE n.state IN (0, 1)
                UNION ALL
                SELECT o.workunit_id,
                    -(CASE WHEN o.state = 0 THEN 1 ELSE 0 END),
                    -(CASE WHEN o.state = 1 THEN (COALESCE(o.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
                    -(CASE WHEN o.state = 1 THEN COALESCE(o.nodes, 0) & 4294967295 ELSE 0 END)
                FROM c960_old_results o WHERE o.state IN (0, 1)) t
            GROUP BY t.workunit_id
            HAVING SUM(t.dflight) <> 0 OR SUM(t.dhi) <> 0 OR SUM(t.dlo) <> 0) g
        GROUP BY 1
        ORDER BY 1
    LOOP
        IF r.dflight <> 0 OR r.dhi <> 0 OR r.dlo <> 0 THEN
            PERFORM c960_count(r.c, 0, 0, 0, r.dflight, 0, 0, r.dhi, r.dlo);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
