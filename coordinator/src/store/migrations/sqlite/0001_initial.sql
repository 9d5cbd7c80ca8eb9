-- 1: campaigns, workunits, workers and their results (replicas).
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    depth INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    max_results INTEGER NOT NULL,
    positions TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE workunits (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    sp INTEGER,
    fen TEXT NOT NULL,
    depth INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    max_results INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,      -- 0 open, 1 valid, 2 failed
    needed INTEGER NOT NULL,               -- replicas to lease now (transitioner output)
    canonical_result_id INTEGER,
    canonical_digest BLOB,
    nodes INTEGER,
    completed_ms INTEGER
);
CREATE INDEX workunits_ready ON workunits(id) WHERE state = 0 AND needed > 0;
CREATE INDEX workunits_campaign ON workunits(campaign_id, state);
CREATE TABLE workers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash BLOB NOT NULL,
    engine TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    lost_votes INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    valid INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    workunit_id INTEGER NOT NULL REFERENCES workunits(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    state INTEGER NOT NULL,                -- scheduler::ReplicaState::to_db
    outcome INTEGER NOT NULL DEFAULT 0,    -- 0 pending, 1 valid, 2 invalid
    issued_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    returned_ms INTEGER,
    digest BLOB,
    nodes INTEGER,                         -- u64 stored bit-for-bit in an i64
    divide TEXT,                           -- JSON [[uci, count], ...]
    elapsed_ms INTEGER,
    engine TEXT,
    error TEXT
);
CREATE INDEX results_workunit ON results(workunit_id, worker_id);
CREATE INDEX results_open ON results(deadline_ms) WHERE state = 0;
CREATE INDEX results_worker ON results(worker_id);
