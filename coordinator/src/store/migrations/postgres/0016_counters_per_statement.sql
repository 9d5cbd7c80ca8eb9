-- 16: progress counters added once per statement, not once per row. A batch of 64 results or
-- leases changed 64 workunit or result rows in one statement, and each row's trigger called
-- c960_count (a plpgsql call and an UPDATE of the counter shard): most of PostgreSQL's CPU per
-- replica. Statement triggers with transition tables sum the deltas of all rows of a statement
-- per campaign and add them with one c960_count each; the sums are those the row triggers added
-- one by one. Transition tables admit no column list and no WHEN, so the filters of the row
-- triggers (state, needed or nodes changed; a result's state changed; issued in state 0) are in
-- the queries. One trigger per event: a trigger with transition tables has one event.
DROP TRIGGER workunit_counts ON workunits;
DROP TRIGGER result_issued ON results;
DROP TRIGGER result_counts ON results;

CREATE FUNCTION c960_workunit_counts_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT n.campaign_id AS c,
            SUM((CASE WHEN n.state = 1 THEN 1 ELSE 0 END) - (CASE WHEN o.state = 1 THEN 1 ELSE 0 END))::BIGINT AS dv,
            SUM((CASE WHEN n.state = 2 THEN 1 ELSE 0 END) - (CASE WHEN o.state = 2 THEN 1 ELSE 0 END))::BIGINT AS df,
            SUM((CASE WHEN n.state = 0 THEN n.needed ELSE 0 END) - (CASE WHEN o.state = 0 THEN o.needed ELSE 0 END))::BIGINT AS dq,
            SUM((CASE WHEN n.state = 1 THEN (COALESCE(n.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                - (CASE WHEN o.state = 1 THEN (COALESCE(o.nodes, 0) >> 32) & 4294967295 ELSE 0 END))::BIGINT AS dhi,
            SUM((CASE WHEN n.state = 1 THEN COALESCE(n.nodes, 0) & 4294967295 ELSE 0 END)
                - (CASE WHEN o.state = 1 THEN COALESCE(o.nodes, 0) & 4294967295 ELSE 0 END))::BIGINT AS dlo
        FROM c960_old_workunits o JOIN c960_new_workunits n ON n.id = o.id
        WHERE o.state IS DISTINCT FROM n.state OR o.needed IS DISTINCT FROM n.needed
            OR o.nodes IS DISTINCT FROM n.nodes
        GROUP BY n.campaign_id
        ORDER BY n.campaign_id
    LOOP
        IF r.dv <> 0 OR r.df <> 0 OR r.dq <> 0 OR r.dhi <> 0 OR r.dlo <> 0 THEN
            PERFORM c960_count(r.c, r.dv, r.df, r.dq, 0, r.dhi, r.dlo, 0, 0);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER workunit_counts AFTER UPDATE ON workunits
    REFERENCING OLD TABLE AS c960_old_workunits NEW TABLE AS c960_new_workunits
    FOR EACH STATEMENT EXECUTE FUNCTION c960_workunit_counts_per_statement();

CREATE FUNCTION c960_results_issued_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT w.campaign_id AS c, COUNT(*)::BIGINT AS k
        FROM c960_new_results n JOIN workunits w ON w.id = n.workunit_id
        WHERE n.state = 0
        GROUP BY w.campaign_id
        ORDER BY w.campaign_id
    LOOP
        PERFORM c960_count(r.c, 0, 0, 0, r.k, 0, 0, 0, 0);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER result_issued AFTER INSERT ON results
    REFERENCING NEW TABLE AS c960_new_results
    FOR EACH STATEMENT EXECUTE FUNCTION c960_results_issued_per_statement();

CREATE FUNCTION c960_result_counts_per_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r RECORD;
BEGIN
    FOR r IN
        SELECT w.campaign_id AS c,
            SUM((CASE WHEN n.state = 0 THEN 1 ELSE 0 END) - (CASE WHEN o.state = 0 THEN 1 ELSE 0 END))::BIGINT AS dflight,
            SUM((CASE WHEN n.state = 1 THEN (COALESCE(n.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                - (CASE WHEN o.state = 1 THEN (COALESCE(o.nodes, 0) >> 32) & 4294967295 ELSE 0 END))::BIGINT AS dhi,
            SUM((CASE WHEN n.state = 1 THEN COALESCE(n.nodes, 0) & 4294967295 ELSE 0 END)
                - (CASE WHEN o.state = 1 THEN COALESCE(o.nodes, 0) & 4294967295 ELSE 0 END))::BIGINT AS dlo
        FROM c960_old_results o JOIN c960_new_results n ON n.id = o.id
            JOIN workunits w ON w.id = n.workunit_id
        WHERE o.state IS DISTINCT FROM n.state
        GROUP BY w.campaign_id
        ORDER BY w.campaign_id
    LOOP
        IF r.dflight <> 0 OR r.dhi <> 0 OR r.dlo <> 0 THEN
            PERFORM c960_count(r.c, 0, 0, 0, r.dflight, 0, 0, r.dhi, r.dlo);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER result_counts AFTER UPDATE ON results
    REFERENCING OLD TABLE AS c960_old_results NEW TABLE AS c960_new_results
    FOR EACH STATEMENT EXECUTE FUNCTION c960_result_counts_per_statement();
