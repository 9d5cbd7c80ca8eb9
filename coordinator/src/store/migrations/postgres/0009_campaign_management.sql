-- 9: campaign management: the operator's name for a campaign, its priority (higher served
-- first) and its status (0 active, 1 paused, 2 cancelled: only active campaigns are served).
-- The ready workunits are indexed per campaign, so assignment walks campaigns in serving order.
ALTER TABLE campaigns ADD COLUMN name TEXT;
ALTER TABLE campaigns ADD COLUMN priority BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN status BIGINT NOT NULL DEFAULT 0;
CREATE INDEX workunits_ready_by_campaign ON workunits(campaign_id, id) WHERE state = 0 AND needed > 0;
