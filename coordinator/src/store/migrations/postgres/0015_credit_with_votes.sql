-- 15: a result graded valid by the transitioner (outcome 0 -> 1) adds to its worker's credit
-- with the worker's vote count, at the end of the settling transaction in worker order
-- (Conn::count_vote), not in a trigger inside the grading statement: that trigger locked the
-- quorum partners' worker rows in the middle of a batch, and other coordinators' transactions
-- queued on them. The trigger keeps every other change (voids, un-gradings, node or worker
-- changes of a valid result). Nothing else grades 0 -> 1.
DROP TRIGGER result_credit ON results;
CREATE TRIGGER result_credit AFTER UPDATE OF outcome, nodes, worker_id ON results FOR EACH ROW
    WHEN ((OLD.outcome = 1 OR NEW.outcome = 1) AND NOT (OLD.outcome = 0 AND NEW.outcome = 1))
    EXECUTE FUNCTION c960_result_credit();
-- And counter shards by pg_backend_pid() % 1024 instead of % 16: two coordinators' pools are
-- 32 backends, which met on a shard often enough that two transactions waited on each other's
-- shard and workunit rows (deadlock detected); backend ids are consecutive, so 1024 shards
-- keep a few hundred backends apart. Reads sum the shards a campaign has used.
CREATE OR REPLACE FUNCTION c960_count(c BIGINT, d_valid BIGINT, d_failed BIGINT, d_queued BIGINT,
                           d_in_flight BIGINT, d_valid_hi BIGINT, d_valid_lo BIGINT,
                           d_computed_hi BIGINT, d_computed_lo BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    s BIGINT := pg_backend_pid() % 1024;
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
