-- 25: disagreements settled by bisection (issue 54). A dispute is between two results of one
-- perft workunit that the coordinator cannot settle by counting it: the node in dispute (its
-- FEN and remaining depth, reached from the workunit by `path`, UCI moves) and each side's
-- claim for it. A challenge asks one side for the divide of that node; its lease id on the
-- wire is the challenge's id plus a fixed base (crate::model::disputes::CHALLENGE_BASE).
CREATE TABLE disputes (
    id INTEGER PRIMARY KEY,
    workunit_id INTEGER NOT NULL REFERENCES workunits(id),
    result_a INTEGER NOT NULL,
    result_b INTEGER NOT NULL,
    worker_a INTEGER NOT NULL REFERENCES workers(id),
    worker_b INTEGER NOT NULL REFERENCES workers(id),
    fen TEXT NOT NULL,
    depth INTEGER NOT NULL,
    path TEXT NOT NULL DEFAULT '',
    claim_a INTEGER NOT NULL,
    claim_b INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,      -- 0 the referee's turn, 1 challenged, 2 decided
    rounds INTEGER NOT NULL DEFAULT 0,
    losers TEXT,                           -- worker ids, space-separated, once decided
    leaf_nodes INTEGER NOT NULL DEFAULT 0,
    opened_ms INTEGER NOT NULL,
    decided_ms INTEGER
);
CREATE INDEX disputes_workunit ON disputes(workunit_id);
CREATE INDEX disputes_due ON disputes(id) WHERE state = 0;
CREATE TABLE challenges (
    id INTEGER PRIMARY KEY,
    dispute_id INTEGER NOT NULL REFERENCES disputes(id),
    side INTEGER NOT NULL,                 -- 0: worker_a, 1: worker_b
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    fen TEXT NOT NULL,
    depth INTEGER NOT NULL,
    claim INTEGER NOT NULL,
    issued_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,      -- 0 open, 1 answered, 2 missed
    nodes INTEGER,
    divide TEXT,
    answered_ms INTEGER
);
CREATE INDEX challenges_open ON challenges(worker_id) WHERE state = 0;
CREATE INDEX challenges_dispute ON challenges(dispute_id);
-- Values waiting for an audit replica (workunits.check_state 7), swept when nobody can take it.
CREATE INDEX workunits_audit_replicas ON workunits(id) WHERE check_state = 7;
