-- 21: leases renewed by heartbeats, and why a campaign waits.
--
-- A lease has two deadlines: deadline_ms, by which the worker must renew it (a heartbeat) or
-- answer, and hard_deadline_ms, the lease's whole life (--lease-secs), which renewals never pass.
-- Every query that asks whether a lease is open keeps reading deadline_ms. NULL for leases
-- issued before this migration: their deadline_ms is their whole life.
ALTER TABLE results ADD COLUMN hard_deadline_ms BIGINT;
-- A campaign that no connected worker may take: the rule that keeps its remaining replicas
-- waiting (stall::WaitCause's code), how many replicas wait on it and since when (the
-- coordinator's clock); NULL when it is not stalled.
ALTER TABLE campaigns ADD COLUMN stall_cause BIGINT;
ALTER TABLE campaigns ADD COLUMN stall_replicas BIGINT;
ALTER TABLE campaigns ADD COLUMN stall_ms BIGINT;
-- The leases open now keep the whole life they were given.
UPDATE results SET hard_deadline_ms = deadline_ms WHERE state = 0;
