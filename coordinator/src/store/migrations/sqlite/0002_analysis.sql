-- 2: analysis workunits. Perft rows keep kind 0 and need no new values.
ALTER TABLE campaigns ADD COLUMN engine TEXT;                      -- analysis: builtin | uci
ALTER TABLE workunits ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;  -- see kind_code
ALTER TABLE workunits ADD COLUMN hash_mib INTEGER;                 -- analysis table size
ALTER TABLE results ADD COLUMN payload TEXT;                       -- analysis result, JSON
