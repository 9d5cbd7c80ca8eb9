-- 24: BOINC hosts (issue 33). A host that attaches with the BOINC client is a worker like any
-- other; these two columns say which account (SHA-256 of the account key it presented) and
-- which client installation (its host CPID) it is, so a detached and reattached client is
-- the same worker again. NULL: a native worker.
ALTER TABLE workers ADD COLUMN boinc_account BLOB;
ALTER TABLE workers ADD COLUMN boinc_cpid TEXT;
CREATE INDEX workers_boinc_host ON workers (boinc_account, boinc_cpid) WHERE boinc_account IS NOT NULL;
