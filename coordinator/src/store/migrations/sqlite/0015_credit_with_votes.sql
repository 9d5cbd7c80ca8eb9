-- 15: a result graded valid by the transitioner (outcome 0 -> 1) adds to its worker's credit
-- with the worker's vote count, at the end of the settling transaction in worker order
-- (Conn::count_vote), not in a trigger inside the grading statement: on PostgreSQL that
-- trigger locked the quorum partners' worker rows in the middle of a batch, and other
-- coordinators' transactions queued on them. The trigger keeps every other change (voids,
-- un-gradings, node or worker changes of a valid result). Nothing else grades 0 -> 1.
DROP TRIGGER result_credit;
CREATE TRIGGER result_credit AFTER UPDATE OF outcome, nodes, worker_id ON results
WHEN (OLD.outcome = 1 OR NEW.outcome = 1) AND NOT (OLD.outcome = 0 AND NEW.outcome = 1) BEGIN
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
