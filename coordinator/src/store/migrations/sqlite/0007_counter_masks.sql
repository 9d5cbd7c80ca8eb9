-- 7: node counts of 2^63 and more are stored as negative i64s, and `>> 32` of a negative value
-- shifts the sign in, so their hi halves were negative. Mask hi to 32 bits like lo: both halves
-- are then the u64's own, and the sums are exact for any u64 counts.
DROP TRIGGER workunit_counts;
DROP TRIGGER result_counts;
CREATE TRIGGER workunit_counts AFTER UPDATE OF state, needed, nodes ON workunits BEGIN
    UPDATE campaign_counts SET
        valid = valid + (NEW.state = 1) - (OLD.state = 1),
        failed = failed + (NEW.state = 2) - (OLD.state = 2),
        queued = queued + (CASE WHEN NEW.state = 0 THEN NEW.needed ELSE 0 END)
                        - (CASE WHEN OLD.state = 0 THEN OLD.needed ELSE 0 END),
        nodes_valid_hi = nodes_valid_hi + (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        nodes_valid_lo = nodes_valid_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = NEW.campaign_id;
END;
CREATE TRIGGER result_counts AFTER UPDATE OF state ON results WHEN OLD.state != NEW.state BEGIN
    UPDATE campaign_counts SET
        in_flight = in_flight + (NEW.state = 0) - (OLD.state = 0),
        nodes_computed_hi = nodes_computed_hi + (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        nodes_computed_lo = nodes_computed_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
UPDATE campaign_counts SET
    nodes_valid_hi = (SELECT COALESCE(SUM((COALESCE(w.nodes, 0) >> 32) & 4294967295), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    nodes_computed_hi = (SELECT COALESCE(SUM((COALESCE(r.nodes, 0) >> 32) & 4294967295), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1);
