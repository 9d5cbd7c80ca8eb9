-- 5: progress counters per campaign, kept by triggers, so that progress and the status page
-- cost O(1) per campaign instead of a scan of millions of workunits. Node sums are split as
-- hi * 2^32 + lo so that they stay exact far beyond 2^63 (each unit adds < 2^31 to hi and
-- < 2^32 to lo).
CREATE TABLE campaign_counts (
    campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
    total INTEGER NOT NULL DEFAULT 0,
    valid INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,            -- replicas wanted by open workunits
    in_flight INTEGER NOT NULL DEFAULT 0,         -- leases issued and not answered
    nodes_valid_hi INTEGER NOT NULL DEFAULT 0,    -- canonical node counts of valid workunits
    nodes_valid_lo INTEGER NOT NULL DEFAULT 0,
    nodes_computed_hi INTEGER NOT NULL DEFAULT 0, -- node counts of all returned results
    nodes_computed_lo INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER workunit_counts AFTER UPDATE OF state, needed, nodes ON workunits BEGIN
    UPDATE campaign_counts SET
        valid = valid + (NEW.state = 1) - (OLD.state = 1),
        failed = failed + (NEW.state = 2) - (OLD.state = 2),
        queued = queued + (CASE WHEN NEW.state = 0 THEN NEW.needed ELSE 0 END)
                        - (CASE WHEN OLD.state = 0 THEN OLD.needed ELSE 0 END),
        nodes_valid_hi = nodes_valid_hi + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) >> 32 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) >> 32 ELSE 0 END),
        nodes_valid_lo = nodes_valid_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = NEW.campaign_id;
END;
CREATE TRIGGER result_issued AFTER INSERT ON results WHEN NEW.state = 0 BEGIN
    UPDATE campaign_counts SET in_flight = in_flight + 1
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
CREATE TRIGGER result_counts AFTER UPDATE OF state ON results WHEN OLD.state != NEW.state BEGIN
    UPDATE campaign_counts SET
        in_flight = in_flight + (NEW.state = 0) - (OLD.state = 0),
        nodes_computed_hi = nodes_computed_hi + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) >> 32 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) >> 32 ELSE 0 END),
        nodes_computed_lo = nodes_computed_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
INSERT INTO campaign_counts (campaign_id) SELECT id FROM campaigns;
UPDATE campaign_counts SET
    total = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id),
    valid = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    failed = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 2),
    queued = (SELECT COALESCE(SUM(w.needed), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 0),
    nodes_valid_hi = (SELECT COALESCE(SUM(COALESCE(w.nodes, 0) >> 32), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    nodes_valid_lo = (SELECT COALESCE(SUM(COALESCE(w.nodes, 0) & 4294967295), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    in_flight = (SELECT COUNT(*) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 0),
    nodes_computed_hi = (SELECT COALESCE(SUM(COALESCE(r.nodes, 0) >> 32), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1),
    nodes_computed_lo = (SELECT COALESCE(SUM(COALESCE(r.nodes, 0) & 4294967295), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1);
