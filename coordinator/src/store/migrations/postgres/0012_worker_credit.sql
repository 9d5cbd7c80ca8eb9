-- 12: credit kept on the worker row (see the SQLite file): results graded valid and their node
-- counts as hi * 2^32 + lo, kept by a trigger in the statement that grades, voids or ungrades
-- a result, backfilled here.
ALTER TABLE workers ADD COLUMN credit_results BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN credit_nodes_hi BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN credit_nodes_lo BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION c960_result_credit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.outcome = 1 THEN
        UPDATE workers SET
            credit_results = credit_results - 1,
            credit_nodes_hi = credit_nodes_hi - ((COALESCE(OLD.nodes, 0) >> 32) & 4294967295),
            credit_nodes_lo = credit_nodes_lo - (COALESCE(OLD.nodes, 0) & 4294967295)
        WHERE id = OLD.worker_id;
    END IF;
    IF NEW.outcome = 1 THEN
        UPDATE workers SET
            credit_results = credit_results + 1,
            credit_nodes_hi = credit_nodes_hi + ((COALESCE(NEW.nodes, 0) >> 32) & 4294967295),
            credit_nodes_lo = credit_nodes_lo + (COALESCE(NEW.nodes, 0) & 4294967295)
        WHERE id = NEW.worker_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER result_credit AFTER UPDATE OF outcome, nodes, worker_id ON results FOR EACH ROW
    WHEN (OLD.outcome = 1 OR NEW.outcome = 1)
    EXECUTE FUNCTION c960_result_credit();
UPDATE workers SET
    credit_results = (SELECT COUNT(*) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1),
    credit_nodes_hi = (SELECT CAST(COALESCE(SUM((COALESCE(r.nodes, 0) >> 32) & 4294967295), 0) AS BIGINT) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1),
    credit_nodes_lo = (SELECT CAST(COALESCE(SUM(COALESCE(r.nodes, 0) & 4294967295), 0) AS BIGINT) FROM results r WHERE r.worker_id = workers.id AND r.outcome = 1);
CREATE INDEX workers_credit ON workers(
    (credit_nodes_hi + credit_nodes_lo / 4294967296) DESC,
    (credit_nodes_lo % 4294967296) DESC,
    credit_results DESC,
    id
);
DROP INDEX results_worker;
CREATE INDEX results_worker ON results(worker_id, returned_ms);
