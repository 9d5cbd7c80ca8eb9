-- 11: the re-split cross-check (checker.rs): workunits.check_state 4 = a validated value drawn
-- for a recount one ply deeper, 5 = recounted.
CREATE INDEX workunits_resplits ON workunits(id) WHERE check_state = 4;
