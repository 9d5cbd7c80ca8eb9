-- 14: progress counters in shards summed on read. Every transaction that hands out or settles
-- work changed its campaign's one counter row and held that row's lock until it committed, so
-- coordinators (and the connections of one) queued on it and deadlocked against the workunit
-- rows they had locked. Now each connection adds its deltas to the shard of its backend
-- (pg_backend_pid() % 16, created on first use): two transactions wait on each other's counter
-- row only when their backends share a shard. Reads sum the shards of a campaign; shard 0 holds
-- the totals written when the campaign was created.
ALTER TABLE campaign_counts ADD COLUMN shard BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaign_counts DROP CONSTRAINT campaign_counts_pkey;
ALTER TABLE campaign_counts ADD PRIMARY KEY (campaign_id, shard);
-- Adds deltas to the calling backend's shard of a campaign's counters.
CREATE FUNCTION c960_count(c BIGINT, d_valid BIGINT, d_failed BIGINT, d_queued BIGINT,
                           d_in_flight BIGINT, d_valid_hi BIGINT, d_valid_lo BIGINT,
                           d_computed_hi BIGINT, d_computed_lo BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    s BIGINT := pg_backend_pid() % 16;
BEGIN
    UPDATE campaign_counts SET
        valid = valid + d_valid, failed = failed + d_failed, queued = queued + d_queued,
        in_flight = in_flight + d_in_flight,
        nodes_valid_hi = nodes_valid_hi + d_valid_hi, nodes_valid_lo = nodes_valid_lo + d_valid_lo,
        nodes_computed_hi = nodes_computed_hi + d_computed_hi,
        nodes_computed_lo = nodes_computed_lo + d_computed_lo
    WHERE campaign_id = c AND shard = s;
    IF NOT FOUND THEN
        INSERT INTO campaign_counts (campaign_id, shard, valid, failed, queued, in_flight,
                                     nodes_valid_hi, nodes_valid_lo, nodes_computed_hi, nodes_computed_lo)
        VALUES (c, s, d_valid, d_failed, d_queued, d_in_flight, d_valid_hi, d_valid_lo,
                d_computed_hi, d_computed_lo)
        ON CONFLICT (campaign_id, shard) DO UPDATE SET
            valid = campaign_counts.valid + excluded.valid,
            failed = campaign_counts.failed + excluded.failed,
            queued = campaign_counts.queued + excluded.queued,
            in_flight = campaign_counts.in_flight + excluded.in_flight,
            nodes_valid_hi = campaign_counts.nodes_valid_hi + excluded.nodes_valid_hi,
            nodes_valid_lo = campaign_counts.nodes_valid_lo + excluded.nodes_valid_lo,
            nodes_computed_hi = campaign_counts.nodes_computed_hi + excluded.nodes_computed_hi,
            nodes_computed_lo = campaign_counts.nodes_computed_lo + excluded.nodes_computed_lo;
    END IF;
END $$;
CREATE OR REPLACE FUNCTION c960_workunit_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM c960_count(NEW.campaign_id,
        (CASE WHEN NEW.state = 1 THEN 1 ELSE 0 END) - (CASE WHEN OLD.state = 1 THEN 1 ELSE 0 END),
        (CASE WHEN NEW.state = 2 THEN 1 ELSE 0 END) - (CASE WHEN OLD.state = 2 THEN 1 ELSE 0 END),
        (CASE WHEN NEW.state = 0 THEN NEW.needed ELSE 0 END) - (CASE WHEN OLD.state = 0 THEN OLD.needed ELSE 0 END),
        0,
        (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
            - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
            - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END),
        0, 0);
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION c960_result_issued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM c960_count((SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id),
                       0, 0, 0, 1, 0, 0, 0, 0);
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION c960_result_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM c960_count((SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id),
        0, 0, 0,
        (CASE WHEN NEW.state = 0 THEN 1 ELSE 0 END) - (CASE WHEN OLD.state = 0 THEN 1 ELSE 0 END),
        0, 0,
        (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
            - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
            - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END));
    RETURN NULL;
END $$;
