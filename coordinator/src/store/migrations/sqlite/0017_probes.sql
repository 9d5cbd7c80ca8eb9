-- 17: a worker's open leases (its lease cap, the leases it asks for again) have an index of
-- their own: through results_worker each assignment walked the worker's whole history. And
-- workunits_ready, unused since migration 9 (the assignment walks workunits_ready_by_campaign),
-- is dropped. (PostgreSQL's counter triggers on results also change here; SQLite's row
-- triggers already find the campaign by a probe of the workunit.)
CREATE INDEX results_open_by_worker ON results(worker_id, deadline_ms) WHERE state = 0;
DROP INDEX workunits_ready;
