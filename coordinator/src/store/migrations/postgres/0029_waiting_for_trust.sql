-- 29: agreements nothing anchors wait for their workers' trust (see the SQLite file).
ALTER TABLE workers ADD COLUMN trust_check_asked_ms BIGINT;
CREATE INDEX workunits_waiting ON workunits(id) WHERE state = 0 AND trusted_only = 1;
