-- 13: self-play workunits (workunits.kind 3 = built-in engine, 4 = UCI engine): games per
-- workunit and the node budget of every move, on the campaign and on each workunit.
ALTER TABLE campaigns ADD COLUMN games INTEGER;
ALTER TABLE campaigns ADD COLUMN move_nodes BIGINT;
ALTER TABLE workunits ADD COLUMN games INTEGER;
ALTER TABLE workunits ADD COLUMN move_nodes BIGINT;
