-- 10: per-volunteer enrolment tokens (enrolment.rs); the token that enrolled a worker.
CREATE TABLE enrolment_tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    hash BLOB NOT NULL,                    -- SHA-256 of the secret
    cap INTEGER NOT NULL,                  -- workers it may register (0: no cap)
    used INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
ALTER TABLE workers ADD COLUMN enrolment_token INTEGER;
CREATE INDEX workers_enrolment_token ON workers(enrolment_token) WHERE enrolment_token IS NOT NULL;
