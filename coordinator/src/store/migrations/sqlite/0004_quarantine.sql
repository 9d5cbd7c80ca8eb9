-- 4: quarantine and bans.
ALTER TABLE workers ADD COLUMN banned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN quarantined_ms INTEGER;
CREATE TABLE settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
