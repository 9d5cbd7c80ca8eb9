-- 14: progress counters in shards summed on read (PostgreSQL: each connection adds to a shard
-- of its own, so coordinators do not queue on one row per campaign). SQLite has one writer:
-- every counter stays in shard 0 and its triggers are unchanged.
ALTER TABLE campaign_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
