-- 8: campaigns over any family of start positions (common/src/family.rs). A workunit of
-- another family has sp NULL, its start's FEN, and its number in the family.
ALTER TABLE campaigns ADD COLUMN family TEXT NOT NULL DEFAULT 'chess960';
ALTER TABLE workunits ADD COLUMN family_number INTEGER;
