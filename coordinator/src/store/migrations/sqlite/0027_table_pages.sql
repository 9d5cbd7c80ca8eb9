-- 27: one page of a campaign's table at any size (issue 55): the rows of a range of start
-- numbers (Chess960's sp, other families' family_number), in table order, found by an index
-- instead of a walk over every workunit of the campaign (921,600 for DFRC).
CREATE INDEX workunits_numbers ON workunits(campaign_id, sp, family_number);
