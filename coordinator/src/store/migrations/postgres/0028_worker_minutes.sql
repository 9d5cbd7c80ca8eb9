-- 28: each worker's returned nodes per minute (see the SQLite file), kept by a trigger in the
-- statement that stores a result, backfilled for the last hour.
CREATE TABLE worker_minutes (
    worker_id BIGINT NOT NULL,
    minute BIGINT NOT NULL,
    nodes_hi BIGINT NOT NULL DEFAULT 0,
    nodes_lo BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (worker_id, minute)
);
CREATE INDEX worker_minutes_minute ON worker_minutes(minute);
CREATE FUNCTION c960_result_minute() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO worker_minutes (worker_id, minute, nodes_hi, nodes_lo)
    VALUES (NEW.worker_id, NEW.returned_ms / 60000, (NEW.nodes >> 32) & 4294967295, NEW.nodes & 4294967295)
    ON CONFLICT (worker_id, minute) DO UPDATE SET
        nodes_hi = worker_minutes.nodes_hi + excluded.nodes_hi,
        nodes_lo = worker_minutes.nodes_lo + excluded.nodes_lo;
    RETURN NULL;
END $$;
CREATE TRIGGER result_minute AFTER UPDATE OF returned_ms ON results FOR EACH ROW
    WHEN (OLD.returned_ms IS NULL AND NEW.returned_ms IS NOT NULL AND NEW.nodes IS NOT NULL)
    EXECUTE FUNCTION c960_result_minute();
INSERT INTO worker_minutes (worker_id, minute, nodes_hi, nodes_lo)
SELECT worker_id, returned_ms / 60000, CAST(SUM((nodes >> 32) & 4294967295) AS BIGINT), CAST(SUM(nodes & 4294967295) AS BIGINT)
FROM results
WHERE returned_ms >= (CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) - 3600) * 1000 AND nodes IS NOT NULL
GROUP BY worker_id, returned_ms / 60000;
