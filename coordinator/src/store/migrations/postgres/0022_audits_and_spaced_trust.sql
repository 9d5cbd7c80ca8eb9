-- 22: audits of validated values, and trust earned over time.
--
-- audit_replicas: hidden replicas a workunit needs beyond its quorum, all agreeing: 1 once an
-- audit the coordinator could not compute itself was given to another randomly drawn worker
-- (audit::AuditPath::Replica).
ALTER TABLE workunits ADD COLUMN audit_replicas BIGINT NOT NULL DEFAULT 0;
-- trust_checks: passed checks that counted towards trust (at most one per
-- trust::Integrity::trust_check_spacing_ms); trust_check_ms: when the last one counted.
ALTER TABLE workers ADD COLUMN trust_checks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN trust_check_ms BIGINT;
-- gave_back: leases the worker gave back through /fail (trust::gives_back_too_much).
ALTER TABLE workers ADD COLUMN gave_back BIGINT NOT NULL DEFAULT 0;
-- Every check passed before counted.
UPDATE workers SET trust_checks = checks_passed;
-- The checker's queue of audits, and the count of values nobody could audit.
CREATE INDEX workunits_audits ON workunits(id) WHERE check_state = 6;
CREATE INDEX workunits_unaudited ON workunits(id) WHERE check_state = 8;
