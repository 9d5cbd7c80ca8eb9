-- 12: credit kept on the worker row (the leaderboard reads and orders by it instead of summing
-- results per listed worker): the results graded valid (outcome 1) and their node counts, split
-- as hi * 2^32 + lo like the campaign counters (each half masked to 32 bits, so exact for any
-- u64 count). A trigger keeps them in the statement that grades, voids (quarantine) or
-- ungrades (re-verification) a result, so always in the transaction that settles the workunit.
ALTER TABLE workers ADD COLUMN credit_results INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN credit_nodes_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN credit_nodes_lo INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER result_credit AFTER UPDATE OF outcome, nodes, worker_id ON results
WHEN OLD.outcome = 1 OR NEW.outcome = 1 BEGIN
    UPDATE workers SET
        credit_results = credit_results - 1,
        credit_nodes_hi = credit_nodes_hi - ((COALESCE(OLD.nodes, 0) >> 32) & 4294967295),
        credit_nodes_lo = credit_nodes_lo - (COALESCE(OLD.nodes, 0) & 4294967295)
    WHERE id = OLD.worker_id AND OLD.outcome = 1;
    UPDATE workers SET
        credit_results = credit_results + 1,
        credit_nodes_hi = credit_nodes_hi + ((COALESCE(NEW.nodes, 0) >> 32) & 4294967295),
        credit_nodes_lo = credit_nodes_lo + (COALESCE(NEW.nodes, 0) & 4294967295)
    WHERE id = NEW.worker_id AND NEW.outcome = 1;
END;
UPDATE workers SET
    credit_results = (SELECT COUNT(*) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1),
    credit_nodes_hi = (SELECT COALESCE(SUM((COALESCE(r.nodes, 0) >> 32) & 4294967295), 0) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1),
    credit_nodes_lo = (SELECT COALESCE(SUM(COALESCE(r.nodes, 0) & 4294967295), 0) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1);
-- The leaderboard's order: credit nodes (hi + carry of lo, then the rest of lo), results, id.
CREATE INDEX workers_credit ON workers(
    (credit_nodes_hi + credit_nodes_lo / 4294967296) DESC,
    (credit_nodes_lo % 4294967296) DESC,
    credit_results DESC,
    id
);
-- Throughput over the last minutes reads a worker's recent results only.
DROP INDEX results_worker;
CREATE INDEX results_worker ON results(worker_id, returned_ms);
