-- 28: each worker's returned nodes per minute, kept by a trigger in the statement that stores a
-- result, so a page reads a worker's recent throughput from at most a dozen rows instead of
-- summing its results of the last ten minutes (at 2,000 results a second, over a million rows
-- a worker: 100-200 ms a page). Nodes as hi * 2^32 + lo like the other counters. Minutes older
-- than the longest window are pruned with the expired leases.
CREATE TABLE worker_minutes (
    worker_id INTEGER NOT NULL,
    minute INTEGER NOT NULL,
    nodes_hi INTEGER NOT NULL DEFAULT 0,
    nodes_lo INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (worker_id, minute)
) WITHOUT ROWID;
CREATE INDEX worker_minutes_minute ON worker_minutes(minute);
CREATE TRIGGER result_minute AFTER UPDATE OF returned_ms ON results
WHEN OLD.returned_ms IS NULL AND NEW.returned_ms IS NOT NULL AND NEW.nodes IS NOT NULL BEGIN
    INSERT INTO worker_minutes (worker_id, minute, nodes_hi, nodes_lo)
    VALUES (NEW.worker_id, NEW.returned_ms / 60000, (NEW.nodes >> 32) & 4294967295, NEW.nodes & 4294967295)
    ON CONFLICT (worker_id, minute) DO UPDATE SET
        nodes_hi = nodes_hi + excluded.nodes_hi,
        nodes_lo = nodes_lo + excluded.nodes_lo;
END;
INSERT INTO worker_minutes (worker_id, minute, nodes_hi, nodes_lo)
SELECT worker_id, returned_ms / 60000, SUM((nodes >> 32) & 4294967295), SUM(nodes & 4294967295)
FROM results
WHERE returned_ms >= (CAST(strftime('%s', 'now') AS INTEGER) - 3600) * 1000 AND nodes IS NOT NULL
GROUP BY worker_id, returned_ms / 60000;
