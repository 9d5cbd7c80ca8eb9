-- 3: split campaigns. A split workunit has sp NULL, its own FEN, and belongs to origin_sp.
ALTER TABLE campaigns ADD COLUMN split_ply INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workunits ADD COLUMN origin_sp INTEGER;
ALTER TABLE workunits ADD COLUMN multiplicity INTEGER;             -- paths to this position
ALTER TABLE workunits ADD COLUMN first_moves TEXT;                 -- JSON [[uci, paths], ...]
CREATE INDEX workunits_origin ON workunits(campaign_id, origin_sp);
