-- 29: agreements nothing anchors wait for their workers' trust (crate::integrity::anchoring)
-- instead of each being recounted by the coordinator. trust_check_asked_ms: when the
-- coordinator last asked for a check of one of the worker's results so that its trust grows
-- (one every trust_check_spacing_ms); the index finds the waiting workunits.
ALTER TABLE workers ADD COLUMN trust_check_asked_ms INTEGER;
CREATE INDEX workunits_waiting ON workunits(id) WHERE state = 0 AND trusted_only = 1;
