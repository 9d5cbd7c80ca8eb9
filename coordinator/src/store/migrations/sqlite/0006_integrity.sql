-- 6: integrity against colluding sybils (see trust.rs): per-worker trust and check counts, the
-- address blocks a worker came from, and per-workunit anchors (a public known answer, or the
-- digest the coordinator computed itself).
ALTER TABLE workers ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0;        -- trust::TrustLevel
ALTER TABLE workers ADD COLUMN checks_passed INTEGER NOT NULL DEFAULT 0;  -- secret checks passed
ALTER TABLE workers ADD COLUMN checks_failed INTEGER NOT NULL DEFAULT 0;  -- wrong or implausible
ALTER TABLE workers ADD COLUMN reg_block TEXT;                            -- address block at registration
ALTER TABLE workers ADD COLUMN last_block TEXT;                           -- address block of the last fetch
CREATE INDEX workers_last_block ON workers(last_block);
ALTER TABLE workunits ADD COLUMN known_nodes INTEGER;                     -- public known answer
ALTER TABLE workunits ADD COLUMN check_state INTEGER NOT NULL DEFAULT 0;  -- 0 none, 1 wanted, 2 done, 3 over budget
ALTER TABLE workunits ADD COLUMN verified_digest BLOB;                    -- the coordinator's own result
ALTER TABLE workunits ADD COLUMN trusted_only INTEGER NOT NULL DEFAULT 0; -- replicas only for trusted workers
ALTER TABLE workunits ADD COLUMN reverify INTEGER NOT NULL DEFAULT 0;     -- reopened after a liar was caught
CREATE INDEX workunits_checks ON workunits(id) WHERE check_state = 1;
ALTER TABLE results ADD COLUMN checked INTEGER NOT NULL DEFAULT 0;        -- 0 no, 1 passed, 2 failed
