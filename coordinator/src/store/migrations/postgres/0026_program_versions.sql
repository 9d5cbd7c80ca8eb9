-- 26: which program migrated the database to each schema version (issue 55), so that a program
-- older than the database refuses it naming the version that wrote it.
CREATE TABLE program_versions (
    schema_version BIGINT PRIMARY KEY,
    program TEXT NOT NULL,
    migrated_ms BIGINT NOT NULL
);
