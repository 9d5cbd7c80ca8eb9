//! Persistence: the [`Store`] trait, and [`SqliteStore`], its embedded SQLite implementation.
//!
//! Every state change is one transaction that also runs the transitioner
//! ([`crate::scheduler::transition`]) on the workunits it touches, so the stored state is always
//! consistent: a coordinator killed at any moment restarts from the file alone. The trait is
//! synchronous on purpose — SQLite is a blocking library and the HTTP layer calls the store from
//! `spawn_blocking`; a Postgres backend can implement the same trait with a blocking pool.

use std::path::Path;
use std::sync::Mutex;

use c960_common::wire::{
    AnalysisEngine, AnalysisResult, Capabilities, PositionSpec, WorkResult, WorkUnitKind,
};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;

use crate::assembly::SplitUnit;
use crate::campaign::{ANALYSIS_HASH_MIB, NewCampaign};
use crate::enrolment::{self, EnrolmentToken};
use crate::scheduler::{self, Anchor, QuorumPolicy, ReplicaState, ReplicaView, Transition};
use crate::trust::{self, Integrity, TrustLevel};
use crate::validator::Digest;

/// Why a store operation failed. The domain variants map to 4xx responses; `Db` is a 500.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No worker with this id.
    #[error("unknown worker {0}")]
    UnknownWorker(u64),
    /// No workunit with this id.
    #[error("unknown workunit {0}")]
    UnknownWorkunit(u64),
    /// No lease with this id (for this workunit).
    #[error("unknown lease {0}")]
    UnknownLease(u64),
    /// The lease belongs to another worker.
    #[error("lease {0} is held by another worker")]
    LeaseNotYours(u64),
    /// The lease was already answered, abandoned or refused.
    #[error("lease {0} is closed ({1})")]
    LeaseClosed(u64, &'static str),
    /// The lease deadline passed; the replica went to another worker.
    #[error("lease {0} expired")]
    LeaseExpired(u64),
    /// The worker already holds as many open leases as the coordinator allows.
    #[error("worker {worker} already holds {open} open leases (cap {cap})")]
    LeaseLimit {
        /// The worker.
        worker: u64,
        /// Its open leases.
        open: u64,
        /// The cap.
        cap: u64,
    },
    /// The worker is banned or quarantined (checked inside the assign transaction).
    #[error("worker {worker} is {}", if *.banned { "banned by the operator" } else { "quarantined: a failed check or refused results; its results are being re-verified" })]
    NotInGoodStanding {
        /// The worker.
        worker: u64,
        /// Banned (else quarantined).
        banned: bool,
    },
    /// No campaign with this id.
    #[error("unknown campaign {0}")]
    UnknownCampaign(u64),
    /// An enrolment token that registers nobody (the code: bad, revoked, exhausted).
    #[error("enrolment token refused ({0})")]
    Enrolment(&'static str),
    /// The database failed or holds something impossible.
    #[error("database: {0}")]
    Db(String),
    /// A request the store refuses on its merits (e.g. a campaign with bad parameters).
    #[error("{0}")]
    Bad(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Db(e.to_string())
    }
}

/// Result alias of the store.
pub type StoreResult<T> = Result<T, StoreError>;

/// A campaign as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Campaign {
    /// Id.
    pub id: u64,
    /// `perft` or `analysis`.
    pub kind: String,
    /// Analysis campaigns: `builtin` or `uci`.
    pub engine: Option<String>,
    /// Perft campaigns split at this ply (0: one workunit per start position).
    pub split_ply: u32,
    /// Depth.
    pub depth: u32,
    /// Quorum.
    pub quorum: u32,
    /// Result cap per workunit.
    pub max_results: u32,
    /// Position list, canonical text.
    pub positions: String,
    /// The family the positions are numbered in (`chess960` for every older campaign).
    pub family: String,
}

/// A registered worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerRecord {
    /// Id.
    pub id: u64,
    /// Self-chosen name.
    pub name: String,
    /// SHA-256 of the worker key.
    #[serde(skip)]
    pub key_hash: Vec<u8>,
    /// Results that lost a vote.
    pub lost_votes: u64,
    /// Results refused on receipt (digest mismatch, impossible divide).
    pub refused: u64,
    /// Results that agreed with the canonical result.
    pub valid: u64,
    /// Banned by the operator.
    pub banned: bool,
    /// Quarantined (automatically, on evidence: a failed check or too many refused results;
    /// or by a ban).
    pub quarantined: bool,
    /// `untrusted`, `earned` (passed enough secret checks) or `operator` (granted).
    pub trust: String,
    /// Secret checks passed (results the coordinator recomputed and found right).
    pub checks_passed: u64,
    /// Checks failed: a wrong answer to a known or secret check, or an implausibly fast one.
    pub checks_failed: u64,
}

/// The columns [`worker_row`] reads.
pub(crate) const WORKER_COLS: &str = "id, name, key_hash, lost_votes, refused, valid, banned, quarantined_ms IS NOT NULL, trusted, checks_passed, checks_failed";

/// A [`WorkerRecord`] from a row of [`WORKER_COLS`].
pub(crate) fn worker_row(r: &rusqlite::Row) -> rusqlite::Result<WorkerRecord> {
    Ok(WorkerRecord {
        id: db_to_u64(r.get(0)?),
        name: r.get(1)?,
        key_hash: r.get(2)?,
        lost_votes: db_to_u64(r.get(3)?),
        refused: db_to_u64(r.get(4)?),
        valid: db_to_u64(r.get(5)?),
        banned: r.get::<_, i64>(6)? != 0,
        quarantined: r.get::<_, i64>(7)? != 0,
        trust: TrustLevel::from_db(r.get(8)?).name().into(),
        checks_passed: db_to_u64(r.get(9)?),
        checks_failed: db_to_u64(r.get(10)?),
    })
}

/// A lease as the HTTP layer needs it to check a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseInfo {
    /// Lease/result id.
    pub id: u64,
    /// Its workunit.
    pub workunit_id: u64,
    /// Holder.
    pub worker_id: u64,
    /// State.
    pub state: ReplicaState,
    /// Deadline.
    pub deadline_ms: i64,
    /// When it was issued (the coordinator's clock: the plausibility check measures from here).
    pub issued_ms: i64,
    /// What the workunit asks.
    pub kind: WorkUnitKind,
    /// The public known answer of the workunit, if there is one.
    pub known_nodes: Option<u64>,
}

/// A newly issued lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Lease/result id.
    pub lease_id: u64,
    /// Workunit.
    pub workunit_id: u64,
    /// What to compute.
    pub kind: WorkUnitKind,
    /// Deadline.
    pub deadline_ms: i64,
}

/// An accepted result to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The result (its kind already checked against the workunit).
    pub result: WorkResult,
    /// Digest (already verified against the payload).
    pub digest: Digest,
    /// Wall time.
    pub elapsed_ms: u64,
    /// `name version` of the engine.
    pub engine: String,
}

/// One row of a campaign table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableRow {
    /// Workunit id.
    pub workunit_id: u64,
    /// Start position number.
    pub sp: Option<u16>,
    /// The start's number in the campaign's family, for families other than Chess960.
    pub family_number: Option<u32>,
    /// Shredder-FEN.
    pub fen: String,
    /// Depth.
    pub depth: u32,
    /// Canonical node count once valid.
    pub nodes: Option<u64>,
    /// `open`, `valid`, `failed`, or `reverifying` (validated once, reopened because a worker
    /// that helped validate it was caught lying; no value until it is validated again).
    pub status: String,
    /// Results that agree with the canonical one.
    pub agreeing_results: u32,
    /// Canonical digest (hex) once valid.
    pub digest: Option<String>,
}

/// One stored result (replica), for audits and tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResultRecord {
    /// Id.
    pub id: u64,
    /// Workunit.
    pub workunit_id: u64,
    /// Worker.
    pub worker_id: u64,
    /// Replica state name.
    pub state: String,
    /// `pending`, `valid` or `invalid`.
    pub outcome: String,
    /// Node count when returned.
    pub nodes: Option<u64>,
    /// Digest (hex) when returned.
    pub digest: Option<String>,
}

/// Progress of one campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CampaignProgress {
    /// The campaign.
    pub campaign: Campaign,
    /// Workunits in total.
    pub total: u64,
    /// Valid workunits.
    pub valid: u64,
    /// Failed workunits.
    pub failed: u64,
    /// Replicas waiting to be leased.
    pub queued_replicas: u64,
    /// Leases in progress.
    pub in_flight: u64,
    /// Sum of canonical node counts so far.
    pub nodes_valid: u128,
    /// Sum of node counts of all returned results (work done, including replicas).
    pub nodes_computed: u128,
}

/// Worker counts for the status page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerSummary {
    /// Registered workers.
    pub registered: u64,
    /// Seen in the last hour.
    pub active_last_hour: u64,
    /// Workers with lost votes, refused results or failed checks, worst first (at most 20).
    pub marked: Vec<WorkerRecord>,
    /// Trusted workers (earned or granted).
    pub trusted: u64,
    /// Every worker with its trust and checks, by id (the first 200).
    pub list: Vec<WorkerRecord>,
}

/// A workunit waiting for the coordinator's own check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRequest {
    /// The workunit.
    pub workunit_id: u64,
    /// What to compute.
    pub kind: WorkUnitKind,
    /// A validated value drawn for the re-split cross-check ([`trust::picks_resplit`]): count
    /// its children one ply deeper, each on its own ([`crate::checker::resplit`]).
    pub resplit: bool,
}

/// The coordinator's verdict on a workunit it was asked to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    /// Computed: the digest (and node count) of the true result.
    Verified {
        /// The true result's digest.
        digest: Digest,
        /// Its node count (the cost of the check).
        nodes: u64,
    },
    /// Too large for the check budget: left to trusted workers.
    OverBudget,
}

/// What checking has cost, for the status page.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CheckCost {
    /// Workunits the coordinator computed itself.
    pub checks_run: u64,
    /// Nodes it counted for them.
    pub check_nodes: u64,
    /// Checks skipped as over the node budget.
    pub checks_over_budget: u64,
    /// Checks waiting.
    pub checks_waiting: u64,
    /// Validated values re-split one ply deeper and recounted (the cross-check).
    pub resplits_run: u64,
    /// Of those, values the recount overturned (reopened; their workers failed a check).
    pub resplits_overturned: u64,
    /// Results returned for workunits that are valid now, per valid workunit (quorum plus the
    /// extra replicas that disagreement and trust cost).
    pub replicas_per_valid_workunit: f64,
}

/// What to do with one result of a batch, decided by the handler after checking it.
#[derive(Clone, Debug)]
pub enum Settlement {
    /// A verified result: store it and run the transitioner.
    Store {
        /// The lease answered.
        lease_id: u64,
        /// The result.
        submission: Submission,
    },
    /// A refused result: close the lease as an error and count it against the worker.
    Refuse {
        /// The lease answered.
        lease_id: u64,
        /// Why (kept with the replica).
        reason: String,
        /// A failed check (a wrong known answer, an implausibly fast result): evidence that
        /// quarantines the worker at once, not a mere strike.
        failed_check: bool,
    },
}

/// The persistent state of the coordinator. See the module documentation.
pub trait Store: Send + Sync {
    /// Creates a campaign with one workunit per start position.
    fn create_campaign(&self, c: &NewCampaign, now_ms: i64) -> StoreResult<Campaign>;
    /// A perft campaign with exactly these parameters, if one exists (for `run`'s resume).
    fn find_campaign(&self, c: &NewCampaign) -> StoreResult<Option<Campaign>>;
    /// All campaigns.
    fn campaigns(&self) -> StoreResult<Vec<Campaign>>;
    /// Registers a worker (untrusted, address unknown); returns its id.
    fn register_worker(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        now_ms: i64,
    ) -> StoreResult<u64> {
        self.register_worker_from(name, key_hash, engine, None, now_ms)
    }
    /// Registers a worker that came from this address block (see [`trust::address_block`]).
    fn register_worker_from(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        block: Option<&str>,
        now_ms: i64,
    ) -> StoreResult<u64>;
    /// Registers a worker with a per-volunteer enrolment token (its id and the SHA-256 of its
    /// secret): the token is checked and one of its registrations spent in the same transaction.
    #[allow(clippy::too_many_arguments)]
    fn register_worker_with_token(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        block: Option<&str>,
        token_id: u64,
        token_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<u64>;
    /// Mints an enrolment token (the SHA-256 of its secret) for up to `cap` workers.
    fn mint_enrolment_token(
        &self,
        name: &str,
        cap: u64,
        secret_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<EnrolmentToken>;
    /// Revokes an enrolment token: it registers nobody more.
    fn revoke_enrolment_token(&self, id: u64, now_ms: i64) -> StoreResult<EnrolmentToken>;
    /// Every enrolment token.
    fn enrolment_tokens(&self) -> StoreResult<Vec<EnrolmentToken>>;
    /// Grants (or withdraws) the operator's trust; returns the updated record.
    fn set_trust(&self, worker_id: u64, trusted: bool) -> StoreResult<WorkerRecord>;
    /// Stores the integrity settings the transactions apply.
    fn set_integrity(&self, integrity: &Integrity) -> StoreResult<()>;
    /// Up to `limit` workunits waiting for a coordinator check, oldest first.
    fn checks_wanted(&self, limit: usize) -> StoreResult<Vec<CheckRequest>>;
    /// Records the coordinator's own verdict on a workunit and runs the transitioner, which
    /// grades its results as passed or failed checks.
    fn record_check(
        &self,
        workunit_id: u64,
        outcome: &CheckOutcome,
        now_ms: i64,
    ) -> StoreResult<()>;
    /// What checking has cost so far.
    fn check_cost(&self) -> StoreResult<CheckCost>;
    /// An independent recomputation (the re-split cross-check) found `truth` for a workunit:
    /// it overturns an earlier check or canonical result that disagrees, withdrawing the
    /// evidence against workers that told the truth ([`crate::quarantine::overturn`]).
    fn overturn_check(&self, workunit_id: u64, truth: &Digest, now_ms: i64) -> StoreResult<()>;
    /// A worker by id.
    fn worker(&self, id: u64) -> StoreResult<Option<WorkerRecord>>;
    /// Expires overdue leases, then leases one replica of a workunit of a kind the worker
    /// accepts, if any is wanted.
    fn assign(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        now_ms: i64,
        lease_ms: i64,
    ) -> StoreResult<Option<Lease>> {
        Ok(self
            .assign_batch(worker_id, accepts, now_ms, lease_ms, 1, 0)?
            .pop())
    }
    /// Expires overdue leases, then leases up to `max_units` replicas, each of a different
    /// workunit, in one transaction. With `lease_cap` > 0 the worker's open leases (counted in
    /// the same transaction) never exceed it: [`StoreError::LeaseLimit`] if it holds the cap
    /// already, otherwise fewer leases than asked for.
    fn assign_batch(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        now_ms: i64,
        lease_ms: i64,
        max_units: u32,
        lease_cap: u64,
    ) -> StoreResult<Vec<Lease>> {
        self.assign_from(
            worker_id, accepts, now_ms, lease_ms, max_units, lease_cap, None,
        )
    }
    /// [`Store::assign_batch`] for a request from address block `block`, in one transaction:
    /// checks the worker's standing (banned, quarantined: [`StoreError::NotInGoodStanding`]),
    /// hands back the worker's own open leases first (a worker that crashed and fetches again
    /// gets them, instead of leaving them orphaned until their deadline), caps open leases by
    /// trust ([`trust::lease_cap`]) and per address block, never gives an untrusted worker a
    /// replica reserved for trusted ones, and never gives two workers of one address block
    /// replicas of one workunit (when the integrity settings say so).
    #[allow(clippy::too_many_arguments)]
    fn assign_from(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        now_ms: i64,
        lease_ms: i64,
        max_units: u32,
        lease_cap: u64,
        block: Option<&str>,
    ) -> StoreResult<Vec<Lease>>;
    /// A lease, for checking a submission before storing it.
    fn lease(&self, lease_id: u64) -> StoreResult<Option<LeaseInfo>> {
        Ok(self.leases(&[lease_id])?.pop().flatten())
    }
    /// Several leases at once (`None` for an unknown id), in the order asked.
    fn leases(&self, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>>;
    /// Stores verified results and closes refused ones, all of leases held by `worker_id`, in
    /// one transaction. Each settlement gets its own outcome (an expired or closed lease
    /// refuses that one only); an `Err` of the whole call means nothing was written.
    fn settle(
        &self,
        worker_id: u64,
        settlements: &[Settlement],
        now_ms: i64,
    ) -> StoreResult<Vec<StoreResult<()>>>;
    /// Whether a workunit exists.
    fn workunit_exists(&self, workunit_id: u64) -> StoreResult<bool>;
    /// Stores a verified result of a lease held by `worker_id` and runs the transitioner.
    fn submit(
        &self,
        worker_id: u64,
        lease_id: u64,
        s: &Submission,
        now_ms: i64,
    ) -> StoreResult<()> {
        let settlement = [Settlement::Store {
            lease_id,
            submission: s.clone(),
        }];
        self.settle(worker_id, &settlement, now_ms)?
            .pop()
            .unwrap_or(Ok(()))
    }
    /// Closes a lease whose result was refused, and records the refusal against the worker.
    fn refuse(&self, worker_id: u64, lease_id: u64, reason: &str, now_ms: i64) -> StoreResult<()> {
        let settlement = [Settlement::Refuse {
            lease_id,
            reason: reason.to_string(),
            failed_check: false,
        }];
        self.settle(worker_id, &settlement, now_ms)?
            .pop()
            .unwrap_or(Ok(()))
    }
    /// Closes a lease whose worker could not compute it (its engine failed). Unlike
    /// [`Store::refuse`] this is no strike against the worker, but the worker is not offered the
    /// workunit again.
    fn fail(&self, worker_id: u64, lease_id: u64, reason: &str, now_ms: i64) -> StoreResult<()>;
    /// Closes a lease its worker gave back.
    fn abandon(&self, worker_id: u64, lease_id: u64, now_ms: i64) -> StoreResult<()>;
    /// Expires leases past their deadline; returns how many.
    fn expire_leases(&self, now_ms: i64) -> StoreResult<u64>;
    /// Abandons every open lease (used by `run` at start: its previous workers are gone).
    fn release_all_leases(&self, now_ms: i64) -> StoreResult<u64>;
    /// Progress of every campaign.
    fn progress(&self) -> StoreResult<Vec<CampaignProgress>>;
    /// Worker counts.
    fn worker_summary(&self, now_ms: i64) -> StoreResult<WorkerSummary>;
    /// The table of a campaign, by start position.
    fn table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)>;
    /// All results of a workunit.
    fn results(&self, workunit_id: u64) -> StoreResult<Vec<ResultRecord>>;
    /// Sets the quarantine threshold: lost votes + refused results (0: never).
    fn set_max_strikes(&self, max_strikes: u64) -> StoreResult<()>;
    /// Leases this worker holds open (issued, not answered, deadline not passed).
    fn open_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<u64>;
    /// Bans a worker (and quarantines it: see [`crate::quarantine`]) or lifts the ban (which
    /// also lifts the quarantine and forgives its strikes). Returns the updated record.
    fn set_banned(&self, worker_id: u64, banned: bool, now_ms: i64) -> StoreResult<WorkerRecord>;
    /// The table of an analysis campaign with the canonical result of each valid workunit.
    fn analysis_table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<AnalysisRow>)>;
    /// The workunits of a split campaign, for [`crate::assembly::assemble`].
    fn split_units(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<SplitUnit>)> {
        let mut units = Vec::new();
        let c = self.visit_split_units(campaign_id, &mut |u| units.push(u))?;
        Ok((c, units))
    }
    /// Streams the workunits of a split campaign to `visit` without collecting them (a depth-8
    /// campaign has millions); returns the campaign.
    fn visit_split_units(
        &self,
        campaign_id: u64,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<Campaign>;
    /// The leaderboard (or the connected workers) with credit; see [`crate::reads`].
    fn standings(
        &self,
        q: &crate::reads::StandingsQuery,
    ) -> StoreResult<Vec<crate::reads::WorkerStanding>>;
    /// One worker's standing and its `limit` latest results; `None` for an unknown worker.
    fn worker_history(
        &self,
        worker_id: u64,
        recent_since_ms: i64,
        limit: u64,
    ) -> StoreResult<Option<crate::reads::WorkerHistory>>;
    /// Streams the split workunits of start positions `first_sp..=last_sp` only.
    fn visit_split_units_of(
        &self,
        campaign_id: u64,
        first_sp: u16,
        last_sp: u16,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<()>;
}

/// One row of an analysis campaign table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AnalysisRow {
    /// Workunit id.
    pub workunit_id: u64,
    /// Start position number.
    pub sp: Option<u16>,
    /// The start's number in the campaign's family, for families other than Chess960.
    pub family_number: Option<u32>,
    /// Shredder-FEN.
    pub fen: String,
    /// Search depth.
    pub depth: u32,
    /// `open`, `valid` or `failed`.
    pub status: String,
    /// Results that agree with the canonical one.
    pub agreeing_results: u32,
    /// The canonical result once valid.
    pub result: Option<AnalysisResult>,
}

/// Numbered migrations; `PRAGMA user_version` records how many have run.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    depth INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    max_results INTEGER NOT NULL,
    positions TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE workunits (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    sp INTEGER,
    fen TEXT NOT NULL,
    depth INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    max_results INTEGER NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,      -- 0 open, 1 valid, 2 failed
    needed INTEGER NOT NULL,               -- replicas to lease now (transitioner output)
    canonical_result_id INTEGER,
    canonical_digest BLOB,
    nodes INTEGER,
    completed_ms INTEGER
);
CREATE INDEX workunits_ready ON workunits(id) WHERE state = 0 AND needed > 0;
CREATE INDEX workunits_campaign ON workunits(campaign_id, state);
CREATE TABLE workers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash BLOB NOT NULL,
    engine TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    lost_votes INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    valid INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    workunit_id INTEGER NOT NULL REFERENCES workunits(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    state INTEGER NOT NULL,                -- scheduler::ReplicaState::to_db
    outcome INTEGER NOT NULL DEFAULT 0,    -- 0 pending, 1 valid, 2 invalid
    issued_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    returned_ms INTEGER,
    digest BLOB,
    nodes INTEGER,                         -- u64 stored bit-for-bit in an i64
    divide TEXT,                           -- JSON [[uci, count], ...]
    elapsed_ms INTEGER,
    engine TEXT,
    error TEXT
);
CREATE INDEX results_workunit ON results(workunit_id, worker_id);
CREATE INDEX results_open ON results(deadline_ms) WHERE state = 0;
CREATE INDEX results_worker ON results(worker_id);
"#,
    r#"
-- 2: analysis workunits. Perft rows keep kind 0 and need no new values.
ALTER TABLE campaigns ADD COLUMN engine TEXT;                      -- analysis: builtin | uci
ALTER TABLE workunits ADD COLUMN kind INTEGER NOT NULL DEFAULT 0;  -- see kind_code
ALTER TABLE workunits ADD COLUMN hash_mib INTEGER;                 -- analysis table size
ALTER TABLE results ADD COLUMN payload TEXT;                       -- analysis result, JSON
"#,
    r#"
-- 3: split campaigns. A split workunit has sp NULL, its own FEN, and belongs to origin_sp.
ALTER TABLE campaigns ADD COLUMN split_ply INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workunits ADD COLUMN origin_sp INTEGER;
ALTER TABLE workunits ADD COLUMN multiplicity INTEGER;             -- paths to this position
ALTER TABLE workunits ADD COLUMN first_moves TEXT;                 -- JSON [[uci, paths], ...]
CREATE INDEX workunits_origin ON workunits(campaign_id, origin_sp);
"#,
    r#"
-- 4: quarantine and bans.
ALTER TABLE workers ADD COLUMN banned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN quarantined_ms INTEGER;
CREATE TABLE settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"#,
    r#"
-- 5: progress counters per campaign, kept by triggers, so that progress and the status page
-- cost O(1) per campaign instead of a scan of millions of workunits. Node sums are split as
-- hi * 2^32 + lo so that they stay exact far beyond 2^63 (each unit adds < 2^31 to hi and
-- < 2^32 to lo).
CREATE TABLE campaign_counts (
    campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
    total INTEGER NOT NULL DEFAULT 0,
    valid INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,            -- replicas wanted by open workunits
    in_flight INTEGER NOT NULL DEFAULT 0,         -- leases issued and not answered
    nodes_valid_hi INTEGER NOT NULL DEFAULT 0,    -- canonical node counts of valid workunits
    nodes_valid_lo INTEGER NOT NULL DEFAULT 0,
    nodes_computed_hi INTEGER NOT NULL DEFAULT 0, -- node counts of all returned results
    nodes_computed_lo INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER workunit_counts AFTER UPDATE OF state, needed, nodes ON workunits BEGIN
    UPDATE campaign_counts SET
        valid = valid + (NEW.state = 1) - (OLD.state = 1),
        failed = failed + (NEW.state = 2) - (OLD.state = 2),
        queued = queued + (CASE WHEN NEW.state = 0 THEN NEW.needed ELSE 0 END)
                        - (CASE WHEN OLD.state = 0 THEN OLD.needed ELSE 0 END),
        nodes_valid_hi = nodes_valid_hi + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) >> 32 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) >> 32 ELSE 0 END),
        nodes_valid_lo = nodes_valid_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = NEW.campaign_id;
END;
CREATE TRIGGER result_issued AFTER INSERT ON results WHEN NEW.state = 0 BEGIN
    UPDATE campaign_counts SET in_flight = in_flight + 1
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
CREATE TRIGGER result_counts AFTER UPDATE OF state ON results WHEN OLD.state != NEW.state BEGIN
    UPDATE campaign_counts SET
        in_flight = in_flight + (NEW.state = 0) - (OLD.state = 0),
        nodes_computed_hi = nodes_computed_hi + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) >> 32 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) >> 32 ELSE 0 END),
        nodes_computed_lo = nodes_computed_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
INSERT INTO campaign_counts (campaign_id) SELECT id FROM campaigns;
UPDATE campaign_counts SET
    total = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id),
    valid = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    failed = (SELECT COUNT(*) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 2),
    queued = (SELECT COALESCE(SUM(w.needed), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 0),
    nodes_valid_hi = (SELECT COALESCE(SUM(COALESCE(w.nodes, 0) >> 32), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    nodes_valid_lo = (SELECT COALESCE(SUM(COALESCE(w.nodes, 0) & 4294967295), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    in_flight = (SELECT COUNT(*) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 0),
    nodes_computed_hi = (SELECT COALESCE(SUM(COALESCE(r.nodes, 0) >> 32), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1),
    nodes_computed_lo = (SELECT COALESCE(SUM(COALESCE(r.nodes, 0) & 4294967295), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1);
"#,
    r#"
-- 6: integrity against colluding sybils (see trust.rs): per-worker trust and check counts, the
-- address blocks a worker came from, and per-workunit anchors (a public known answer, or the
-- digest the coordinator computed itself).
ALTER TABLE workers ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0;        -- trust::TrustLevel
ALTER TABLE workers ADD COLUMN checks_passed INTEGER NOT NULL DEFAULT 0;  -- secret checks passed
ALTER TABLE workers ADD COLUMN checks_failed INTEGER NOT NULL DEFAULT 0;  -- wrong or implausible
ALTER TABLE workers ADD COLUMN reg_block TEXT;                            -- address block at registration
ALTER TABLE workers ADD COLUMN last_block TEXT;                           -- address block of the last fetch
CREATE INDEX workers_last_block ON workers(last_block);
ALTER TABLE workunits ADD COLUMN known_nodes INTEGER;                     -- public known answer
ALTER TABLE workunits ADD COLUMN check_state INTEGER NOT NULL DEFAULT 0;  -- 0 none, 1 wanted, 2 done, 3 over budget
ALTER TABLE workunits ADD COLUMN verified_digest BLOB;                    -- the coordinator's own result
ALTER TABLE workunits ADD COLUMN trusted_only INTEGER NOT NULL DEFAULT 0; -- replicas only for trusted workers
ALTER TABLE workunits ADD COLUMN reverify INTEGER NOT NULL DEFAULT 0;     -- reopened after a liar was caught
CREATE INDEX workunits_checks ON workunits(id) WHERE check_state = 1;
ALTER TABLE results ADD COLUMN checked INTEGER NOT NULL DEFAULT 0;        -- 0 no, 1 passed, 2 failed
"#,
    r#"
-- 7: node counts of 2^63 and more are stored as negative i64s, and `>> 32` of a negative value
-- shifts the sign in, so their hi halves were negative. Mask hi to 32 bits like lo: both halves
-- are then the u64's own, and the sums are exact for any u64 counts.
DROP TRIGGER workunit_counts;
DROP TRIGGER result_counts;
CREATE TRIGGER workunit_counts AFTER UPDATE OF state, needed, nodes ON workunits BEGIN
    UPDATE campaign_counts SET
        valid = valid + (NEW.state = 1) - (OLD.state = 1),
        failed = failed + (NEW.state = 2) - (OLD.state = 2),
        queued = queued + (CASE WHEN NEW.state = 0 THEN NEW.needed ELSE 0 END)
                        - (CASE WHEN OLD.state = 0 THEN OLD.needed ELSE 0 END),
        nodes_valid_hi = nodes_valid_hi + (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        nodes_valid_lo = nodes_valid_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                        - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = NEW.campaign_id;
END;
CREATE TRIGGER result_counts AFTER UPDATE OF state ON results WHEN OLD.state != NEW.state BEGIN
    UPDATE campaign_counts SET
        in_flight = in_flight + (NEW.state = 0) - (OLD.state = 0),
        nodes_computed_hi = nodes_computed_hi + (CASE WHEN NEW.state = 1 THEN (COALESCE(NEW.nodes, 0) >> 32) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN (COALESCE(OLD.nodes, 0) >> 32) & 4294967295 ELSE 0 END),
        nodes_computed_lo = nodes_computed_lo + (CASE WHEN NEW.state = 1 THEN COALESCE(NEW.nodes, 0) & 4294967295 ELSE 0 END)
                                              - (CASE WHEN OLD.state = 1 THEN COALESCE(OLD.nodes, 0) & 4294967295 ELSE 0 END)
    WHERE campaign_id = (SELECT campaign_id FROM workunits WHERE id = NEW.workunit_id);
END;
UPDATE campaign_counts SET
    nodes_valid_hi = (SELECT COALESCE(SUM((COALESCE(w.nodes, 0) >> 32) & 4294967295), 0) FROM workunits w WHERE w.campaign_id = campaign_counts.campaign_id AND w.state = 1),
    nodes_computed_hi = (SELECT COALESCE(SUM((COALESCE(r.nodes, 0) >> 32) & 4294967295), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = campaign_counts.campaign_id AND r.state = 1);
"#,
    r#"
-- 8: campaigns over any family of start positions (common/src/family.rs). A workunit of
-- another family has sp NULL, its start's FEN, and its number in the family.
ALTER TABLE campaigns ADD COLUMN family TEXT NOT NULL DEFAULT 'chess960';
ALTER TABLE workunits ADD COLUMN family_number INTEGER;
"#,
    r#"
-- 9: per-volunteer enrolment tokens (enrolment.rs); the token that enrolled a worker.
CREATE TABLE enrolment_tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    hash BLOB NOT NULL,                    -- SHA-256 of the secret
    cap INTEGER NOT NULL,                  -- workers it may register (0: no cap)
    used INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
ALTER TABLE workers ADD COLUMN enrolment_token INTEGER;
CREATE INDEX workers_enrolment_token ON workers(enrolment_token) WHERE enrolment_token IS NOT NULL;
"#,
    r#"
-- 10: the re-split cross-check (checker.rs): workunits.check_state 4 = a validated value drawn
-- for a recount one ply deeper, 5 = recounted.
CREATE INDEX workunits_resplits ON workunits(id) WHERE check_state = 4;
"#,
];

/// A workunit as the assign query reads it: id, sp, fen, depth, kind, hash MiB.
type WorkunitRow = (i64, Option<i64>, String, i64, i64, Option<i64>);

/// Workunit kinds as stored in `workunits.kind`; the assign query filters on them.
const KIND_PERFT: i64 = 0;
const KIND_BUILTIN_ANALYSIS: i64 = 1;
const KIND_UCI_ANALYSIS: i64 = 2;

fn kind_code(analysis: Option<AnalysisEngine>) -> i64 {
    match analysis {
        None => KIND_PERFT,
        Some(AnalysisEngine::Builtin) => KIND_BUILTIN_ANALYSIS,
        Some(AnalysisEngine::Uci) => KIND_UCI_ANALYSIS,
    }
}

/// The stored kinds a worker with these capabilities accepts, as an SQL list (integers only).
fn accepted_codes(c: &Capabilities) -> String {
    let mut codes = Vec::new();
    if c.perft {
        codes.push(KIND_PERFT.to_string());
    }
    if c.builtin_analysis {
        codes.push(KIND_BUILTIN_ANALYSIS.to_string());
    }
    if c.uci_analysis {
        codes.push(KIND_UCI_ANALYSIS.to_string());
    }
    codes.join(",")
}

/// The SQLite store: one file, WAL journal, one connection behind a mutex for everything that
/// writes, and a second, read-only one for the long reads of the table exports: WAL lets a
/// reader see its snapshot while the writer commits, so an export never holds the writer's lock
/// (four export loops over a 371,766-unit campaign once took worker fetches from 6.7 ms to
/// 2.1 s at p99).
pub struct SqliteStore {
    conn: Mutex<Connection>,
    reader: Mutex<Connection>,
    path: std::path::PathBuf,
}

/// A read-only connection: the store's own, or a fresh one while that is busy (exports at once
/// do not queue behind each other either).
enum ReadConn<'a> {
    Shared(std::sync::MutexGuard<'a, Connection>),
    Own(Connection),
}

impl std::ops::Deref for ReadConn<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        match self {
            ReadConn::Shared(c) => c,
            ReadConn::Own(c) => c,
        }
    }
}

fn open_reader(path: &Path) -> StoreResult<Connection> {
    let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(c)
}

pub(crate) fn u64_to_db(v: u64) -> i64 {
    v as i64
}

pub(crate) fn db_to_u64(v: i64) -> u64 {
    v as u64
}

fn kind_of(
    sp: Option<i64>,
    fen: String,
    depth: i64,
    kind: i64,
    hash_mib: Option<i64>,
) -> WorkUnitKind {
    let position = match sp {
        Some(n) => PositionSpec::StartPosition(n as u16),
        None => PositionSpec::Fen(fen),
    };
    let engine = match kind {
        KIND_BUILTIN_ANALYSIS => AnalysisEngine::Builtin,
        KIND_UCI_ANALYSIS => AnalysisEngine::Uci,
        _ => {
            return WorkUnitKind::Perft {
                position,
                depth: depth as u32,
            };
        }
    };
    WorkUnitKind::Analysis {
        position,
        depth: depth as u32,
        engine,
        hash_mib: hash_mib.unwrap_or(i64::from(ANALYSIS_HASH_MIB)) as u32,
    }
}

fn digest_from(blob: Option<Vec<u8>>) -> Option<Digest> {
    blob.and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and runs pending migrations.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        let conn = Connection::open(path)?;
        // WAL: readers (status, export) do not block the writer; NORMAL sync is durable across
        // process crashes, which is the failure the coordinator must survive.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.set_prepared_statement_cache_capacity(64);
        // The reader opens an empty placeholder until the writer has created and migrated the
        // file; then it is replaced by a read-only connection to it.
        let mut store = SqliteStore {
            conn: Mutex::new(conn),
            reader: Mutex::new(Connection::open_in_memory()?),
            path: path.to_path_buf(),
        };
        store.migrate()?;
        store.reader = Mutex::new(open_reader(path)?);
        Ok(store)
    }

    /// A read-only connection for the exports (never the writer's lock).
    fn read(&self) -> StoreResult<ReadConn<'_>> {
        match self.reader.try_lock() {
            Ok(c) => Ok(ReadConn::Shared(c)),
            Err(std::sync::TryLockError::Poisoned(p)) => Ok(ReadConn::Shared(p.into_inner())),
            Err(std::sync::TryLockError::WouldBlock) => Ok(ReadConn::Own(open_reader(&self.path)?)),
        }
    }

    fn migrate(&self) -> StoreResult<()> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            return Err(StoreError::Db(format!(
                "database schema version {version} is newer than this program ({})",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn lock(&self) -> StoreResult<std::sync::MutexGuard<'_, Connection>> {
        // A panic while holding the lock cannot leave a half-written transaction (it rolls back
        // on drop), so a poisoned mutex is safe to reuse.
        Ok(self.conn.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn with_tx<T>(&self, f: impl FnOnce(&Transaction) -> StoreResult<T>) -> StoreResult<T> {
        let _timer = crate::metrics::store_transaction_timer();
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

/// The parties ([`trust::Party`]: blocks, token) of the other workers holding or having answered
/// a replica of a workunit.
type Holder = (Option<String>, Option<String>, Option<i64>, i64);
fn holders(tx: &Connection, wu: i64, worker_id: u64) -> StoreResult<Vec<Holder>> {
    let mut st = tx.prepare_cached(
        "SELECT o.reg_block, o.last_block, o.enrolment_token, o.created_ms FROM results r JOIN workers o ON o.id = r.worker_id
         WHERE r.workunit_id = ?1 AND r.state IN (0, 1) AND o.id != ?2",
    )?;
    let rows = st.query_map(params![wu, u64_to_db(worker_id)], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn insert_worker(
    tx: &Connection,
    name: &str,
    key_hash: &[u8],
    engine: &str,
    block: Option<&str>,
    now_ms: i64,
) -> StoreResult<u64> {
    exec(
        tx,
        "INSERT INTO workers (name, key_hash, engine, created_ms, last_seen_ms, reg_block, last_block) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?5)",
        params![name, key_hash, engine, now_ms, block],
    )?;
    Ok(db_to_u64(tx.last_insert_rowid()))
}

/// Runs a statement through the connection's statement cache: assign and submit run the same few
/// statements thousands of times a second, and preparing them anew is a large share of the cost.
fn exec<P: rusqlite::Params>(c: &Connection, sql: &str, params: P) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(params)
}

fn replicas(tx: &Connection, workunit_id: u64) -> StoreResult<Vec<ReplicaView>> {
    let mut st = tx.prepare_cached(
        "SELECT r.id, r.worker_id, r.state, r.digest, o.trusted FROM results r JOIN workers o ON o.id = r.worker_id
         WHERE r.workunit_id = ?1",
    )?;
    let rows = st.query_map([u64_to_db(workunit_id)], |r| {
        Ok(ReplicaView {
            id: db_to_u64(r.get(0)?),
            worker_id: db_to_u64(r.get(1)?),
            state: ReplicaState::from_db(r.get(2)?),
            digest: digest_from(r.get(3)?),
            trusted: TrustLevel::from_db(r.get(4)?).is_trusted(),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The integrity settings stored by [`Store::set_integrity`] (defaults where unset).
pub(crate) fn integrity_in(tx: &Connection) -> StoreResult<Integrity> {
    let mut st = tx.prepare_cached("SELECT key, value FROM settings")?;
    let pairs: Vec<(String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(Integrity::from_settings(
        pairs.iter().map(|(k, v)| (k.as_str(), db_to_u64(*v))),
    ))
}

/// Adds `by` to a counter in the settings table (the cost of checking, for the status page).
fn bump_setting(tx: &Connection, key: &str, by: u64) -> StoreResult<()> {
    exec(
        tx,
        "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = value + ?2",
        params![key, u64_to_db(by)],
    )?;
    Ok(())
}

/// Grades the returned results of a workunit the coordinator checked against its own digest:
/// a match is a passed secret check (trust grows), a mismatch a failed one (trust is lost at
/// once; evidence for quarantine). Returns the workers that failed.
fn grade_checks(tx: &Connection, workunit_id: u64, verified: &Digest) -> StoreResult<Vec<u64>> {
    let integrity = integrity_in(tx)?;
    let rows: Vec<(i64, i64, Option<Vec<u8>>)> = tx
        .prepare_cached(
            "SELECT id, worker_id, digest FROM results WHERE workunit_id = ?1 AND state = 1 AND checked = 0",
        )?
        .query_map([u64_to_db(workunit_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut failed = Vec::new();
    for (id, worker, digest) in rows {
        let good = digest_from(digest).is_some_and(|d| d == *verified);
        exec(
            tx,
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, if good { 1 } else { 2 }],
        )?;
        if good {
            let (level, passed): (i64, i64) = tx
                .prepare_cached(
                    "UPDATE workers SET checks_passed = checks_passed + 1 WHERE id = ?1 RETURNING trusted, checks_passed",
                )?
                .query_row([worker], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let level = TrustLevel::from_db(level);
            let after = trust::after_passed_check(level, db_to_u64(passed), &integrity);
            if after != level {
                exec(
                    tx,
                    "UPDATE workers SET trusted = ?2 WHERE id = ?1",
                    params![worker, after as i64],
                )?;
            }
        } else {
            fail_check(tx, db_to_u64(worker))?;
            failed.push(db_to_u64(worker));
        }
    }
    Ok(failed)
}

/// Records a failed check against a worker: its trust is gone at once.
fn fail_check(tx: &Connection, worker_id: u64) -> StoreResult<()> {
    exec(
        tx,
        "UPDATE workers SET checks_failed = checks_failed + 1, trusted = 0 WHERE id = ?1",
        [u64_to_db(worker_id)],
    )?;
    Ok(())
}

/// Runs the transitioner on one workunit and writes its verdict (and the verdict on each
/// returned result, with the workers' vote counts) in the same transaction. A perft workunit
/// needs an anchored quorum ([`scheduler::transition_anchored`]); an unanchored or contested
/// one asks for a coordinator check, and a checked one grades its results as checks.
pub(crate) fn retransition(tx: &Connection, workunit_id: u64, now_ms: i64) -> StoreResult<()> {
    type Row = (
        i64,
        i64,
        i64,
        Option<Vec<u8>>,
        i64,
        Option<i64>,
        Option<Vec<u8>>,
        i64,
    );
    let (state, quorum, max_results, canonical, kind, known, verified, check_state): Row = tx
        .prepare_cached(
            "SELECT state, quorum, max_results, canonical_digest, kind, known_nodes, verified_digest, check_state
             FROM workunits WHERE id = ?1",
        )?
        .query_row([u64_to_db(workunit_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
        })
        .optional()?
        .ok_or(StoreError::UnknownWorkunit(workunit_id))?;
    let verified = digest_from(verified);
    let mut evidence = Vec::new();
    if let Some(v) = &verified {
        evidence = grade_checks(tx, workunit_id, v)?;
    }
    let reps = replicas(tx, workunit_id)?;
    let want_check = |tx: &Connection| -> StoreResult<()> {
        if check_state == 0 {
            exec(
                tx,
                "UPDATE workunits SET check_state = 1 WHERE id = ?1",
                [u64_to_db(workunit_id)],
            )?;
        }
        Ok(())
    };
    let canonical = match state {
        0 => {
            let policy = QuorumPolicy {
                quorum: quorum as u32,
                max_results: max_results as u32,
            };
            let anchor = Anchor {
                required: kind == KIND_PERFT,
                verified,
                known_total: known.is_some(),
            };
            match scheduler::transition_anchored(policy, &anchor, &reps) {
                t @ (Transition::Pending { needed } | Transition::NeedsTrust { needed }) => {
                    let trusted_only = matches!(t, Transition::NeedsTrust { .. });
                    exec(
                        tx,
                        "UPDATE workunits SET needed = ?2, trusted_only = ?3 WHERE id = ?1",
                        params![u64_to_db(workunit_id), needed, trusted_only],
                    )?;
                    let digests: std::collections::BTreeSet<Digest> = reps
                        .iter()
                        .filter(|r| r.state == ReplicaState::Returned)
                        .filter_map(|r| r.digest)
                        .collect();
                    // Contested or agreed without an anchor: the coordinator looks itself (a
                    // contested built-in analysis too: its search is deterministic).
                    let checkable = anchor.required || kind == KIND_BUILTIN_ANALYSIS;
                    if checkable && verified.is_none() && (trusted_only || digests.len() > 1) {
                        want_check(tx)?;
                    }
                    return quarantine_all(tx, evidence, now_ms);
                }
                Transition::Failed => {
                    exec(
                        tx,
                        "UPDATE workunits SET state = 2, needed = 0, trusted_only = 0, completed_ms = ?2 WHERE id = ?1",
                        params![u64_to_db(workunit_id), now_ms],
                    )?;
                    return quarantine_all(tx, evidence, now_ms);
                }
                Transition::Valid { canonical } => {
                    let winner = reps
                        .iter()
                        .find(|r| r.state == ReplicaState::Returned && r.digest == Some(canonical))
                        .ok_or_else(|| StoreError::Db("quorum without a result".into()))?;
                    exec(tx,
                        "UPDATE workunits SET state = 1, needed = 0, trusted_only = 0, reverify = 0, completed_ms = ?2, canonical_result_id = ?3,
                         canonical_digest = ?4, nodes = (SELECT nodes FROM results WHERE id = ?3) WHERE id = ?1",
                        params![u64_to_db(workunit_id), now_ms, u64_to_db(winner.id), canonical.to_vec()],
                    )?;
                    // A share of the values without a public answer is recounted one ply deeper.
                    if anchor.required
                        && known.is_none()
                        && matches!(check_state, 0 | 2)
                        && trust::picks_resplit(
                            rand::random::<u64>() % 1_000_000,
                            &integrity_in(tx)?,
                        )
                    {
                        exec(
                            tx,
                            "UPDATE workunits SET check_state = 4 WHERE id = ?1",
                            [u64_to_db(workunit_id)],
                        )?;
                    }
                    canonical
                }
            }
        }
        1 => digest_from(canonical)
            .ok_or_else(|| StoreError::Db("valid workunit without digest".into()))?,
        _ => return quarantine_all(tx, evidence, now_ms),
    };
    // Grade every returned result not graded yet (including late ones after validation). A
    // lost vote is recorded (history, status page) but is no evidence against the worker.
    for r in reps.iter().filter(|r| r.state == ReplicaState::Returned) {
        let Some(d) = r.digest else { continue };
        let good = scheduler::agrees(&canonical, &d);
        let changed = exec(
            tx,
            "UPDATE results SET outcome = ?2 WHERE id = ?1 AND outcome = 0",
            params![u64_to_db(r.id), if good { 1 } else { 2 }],
        )?;
        if changed == 1 {
            let col = if good { "valid" } else { "lost_votes" };
            exec(
                tx,
                &format!("UPDATE workers SET {col} = {col} + 1 WHERE id = ?1"),
                [u64_to_db(r.worker_id)],
            )?;
        }
    }
    // After the grading, so the quarantine sees this workunit settled.
    quarantine_all(tx, evidence, now_ms)
}

/// Records the outcome of a re-split cross-check (a workunit in `check_state` 4; `None` for any
/// other check): a recount that agrees with the canonical digest marks it done; one that does
/// not overturns the value ([`crate::quarantine::overturn`]): it is reopened, the workers behind
/// it fail a check, and those who had told the truth get their standing back.
fn record_resplit(
    tx: &Connection,
    workunit_id: u64,
    outcome: &CheckOutcome,
    now_ms: i64,
) -> StoreResult<Option<()>> {
    let row: Option<(i64, i64, Option<Vec<u8>>)> = tx
        .query_row(
            "SELECT check_state, state, canonical_digest FROM workunits WHERE id = ?1",
            [u64_to_db(workunit_id)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((4, state, canonical)) = row else {
        return Ok(None);
    };
    exec(
        tx,
        "UPDATE workunits SET check_state = 5 WHERE id = ?1",
        [u64_to_db(workunit_id)],
    )?;
    let CheckOutcome::Verified { digest, nodes } = outcome else {
        bump_setting(tx, "checks_over_budget", 1)?;
        return Ok(Some(()));
    };
    bump_setting(tx, "resplits_run", 1)?;
    bump_setting(tx, "check_nodes", *nodes)?;
    if state == 1 && digest_from(canonical) == Some(*digest) {
        return Ok(Some(()));
    }
    bump_setting(tx, "resplits_overturned", 1)?;
    crate::quarantine::overturn(tx, workunit_id, digest, now_ms)?;
    Ok(Some(()))
}

/// Applies the quarantine rule to each worker that just failed a check.
fn quarantine_all(tx: &Connection, workers: Vec<u64>, now_ms: i64) -> StoreResult<()> {
    for w in workers {
        crate::quarantine::check(tx, w, now_ms)?;
    }
    Ok(())
}

fn expire(tx: &Connection, now_ms: i64) -> StoreResult<u64> {
    let ids: Vec<(i64, i64)> = {
        let mut st = tx.prepare_cached(
            "SELECT id, workunit_id FROM results WHERE state = 0 AND deadline_ms < ?1",
        )?;
        st.query_map([now_ms], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    for (id, wu) in &ids {
        exec(
            tx,
            "UPDATE results SET state = ?2 WHERE id = ?1",
            params![id, ReplicaState::Expired.to_db()],
        )?;
        retransition(tx, db_to_u64(*wu), now_ms)?;
    }
    Ok(ids.len() as u64)
}

/// Loads a lease and checks it is open and held by `worker_id`.
fn open_lease_of(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    now_ms: i64,
) -> StoreResult<(u64, i64)> {
    let (wu, holder, state, deadline): (i64, i64, i64, i64) = tx
        .prepare_cached(
            "SELECT workunit_id, worker_id, state, deadline_ms FROM results WHERE id = ?1",
        )?
        .query_row([u64_to_db(lease_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?
        .ok_or(StoreError::UnknownLease(lease_id))?;
    if db_to_u64(holder) != worker_id {
        return Err(StoreError::LeaseNotYours(lease_id));
    }
    let state = ReplicaState::from_db(state);
    if state == ReplicaState::Expired
        || (state == ReplicaState::InProgress && scheduler::is_expired(deadline, now_ms))
    {
        return Err(StoreError::LeaseExpired(lease_id));
    }
    if state != ReplicaState::InProgress {
        return Err(StoreError::LeaseClosed(lease_id, state.name()));
    }
    Ok((db_to_u64(wu), deadline))
}

/// Stores a verified result of an open lease of `worker_id` and runs the transitioner.
fn store_result_in(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    s: &Submission,
    now_ms: i64,
) -> StoreResult<()> {
    let json = |v: Result<String, serde_json::Error>| v.map_err(|e| StoreError::Db(e.to_string()));
    let (divide, payload) = match &s.result {
        WorkResult::Perft(r) => (Some(json(serde_json::to_string(&r.divide))?), None),
        WorkResult::Analysis(r) => (None, Some(json(serde_json::to_string(r))?)),
    };
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    exec(
        tx,
        "UPDATE results SET state = 1, returned_ms = ?2, digest = ?3, nodes = ?4, divide = ?5, elapsed_ms = ?6, engine = ?7, payload = ?8
         WHERE id = ?1",
        params![
            u64_to_db(lease_id),
            now_ms,
            s.digest.to_vec(),
            u64_to_db(s.result.nodes()),
            divide,
            u64_to_db(s.elapsed_ms),
            s.engine,
            payload
        ],
    )?;
    bump_setting(tx, "results_returned", 1)?;
    pick_secret_check(tx, worker_id, wu)?;
    retransition(tx, wu, now_ms)
}

/// Picks the workunit for a secret check at the rate for the submitter's trust (untrusted
/// workers are checked far more often). Only perft workunits without a public answer are
/// picked (a public answer is checked on receipt anyway, and must not earn trust), and built-in
/// analyses (deterministic at fixed depth, so the coordinator's search has the same digest);
/// UCI analyses are not: the coordinator does not run the volunteers' engines.
fn pick_secret_check(tx: &Connection, worker_id: u64, workunit_id: u64) -> StoreResult<()> {
    let level: i64 = tx
        .prepare_cached("SELECT trusted FROM workers WHERE id = ?1")?
        .query_row([u64_to_db(worker_id)], |r| r.get(0))?;
    let integrity = integrity_in(tx)?;
    let draw = rand::random::<u64>() % 1_000_000;
    if trust::picks_check(TrustLevel::from_db(level), draw, &integrity) {
        exec(
            tx,
            "UPDATE workunits SET check_state = 1 WHERE id = ?1 AND check_state = 0 AND kind IN (0, 1) AND known_nodes IS NULL",
            [u64_to_db(workunit_id)],
        )?;
    }
    Ok(())
}

/// Closes an open lease of `worker_id` whose result was refused, with a strike (or, for a
/// failed check, with the evidence that quarantines it).
fn refuse_in(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    reason: &str,
    failed_check: bool,
    now_ms: i64,
) -> StoreResult<()> {
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    exec(
        tx,
        "UPDATE results SET state = ?2, returned_ms = ?3, error = ?4 WHERE id = ?1",
        params![
            u64_to_db(lease_id),
            ReplicaState::Error.to_db(),
            now_ms,
            reason
        ],
    )?;
    if failed_check {
        fail_check(tx, worker_id)?;
    } else {
        exec(
            tx,
            "UPDATE workers SET refused = refused + 1 WHERE id = ?1",
            [u64_to_db(worker_id)],
        )?;
    }
    retransition(tx, wu, now_ms)?;
    crate::quarantine::check(tx, worker_id, now_ms)
}

/// Leases `worker_id` holds open: issued, not answered, deadline not passed.
fn open_leases_in(conn: &Connection, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    let n: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM results WHERE worker_id = ?1 AND state = 0 AND deadline_ms >= ?2",
        )?
        .query_row(params![u64_to_db(worker_id), now_ms], |r| r.get(0))?;
    Ok(n as u64)
}

/// A worker by id.
fn worker_in(conn: &Connection, id: u64) -> StoreResult<Option<WorkerRecord>> {
    Ok(conn
        .query_row(
            &format!("SELECT {WORKER_COLS} FROM workers WHERE id = ?1"),
            [u64_to_db(id)],
            worker_row,
        )
        .optional()?)
}

/// Up to `limit` open leases `worker_id` holds on workunits of the accepted kinds, as leases
/// again (same ids and deadlines).
fn own_open_leases(
    tx: &Connection,
    worker_id: u64,
    codes: &str,
    now_ms: i64,
    limit: u64,
) -> StoreResult<Vec<Lease>> {
    // `codes` holds integers from accepted_codes only.
    let mut st = tx.prepare_cached(&format!(
        "SELECT r.id, w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib, r.deadline_ms
         FROM results r JOIN workunits w ON w.id = r.workunit_id
         WHERE r.worker_id = ?1 AND r.state = 0 AND r.deadline_ms >= ?2 AND w.kind IN ({codes})
         ORDER BY r.id LIMIT ?3"
    ))?;
    let rows = st.query_map(params![u64_to_db(worker_id), now_ms, limit as i64], |r| {
        Ok(Lease {
            lease_id: db_to_u64(r.get(0)?),
            workunit_id: db_to_u64(r.get(1)?),
            kind: kind_of(r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
            deadline_ms: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A lease with its workunit's kind.
fn lease_in(conn: &Connection, lease_id: u64) -> StoreResult<Option<LeaseInfo>> {
    Ok(conn
        .prepare_cached(
            "SELECT r.id, r.workunit_id, r.worker_id, r.state, r.deadline_ms, w.sp, w.fen, w.depth, w.kind, w.hash_mib,
                    r.issued_ms, w.known_nodes
             FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE r.id = ?1",
        )?
        .query_row([u64_to_db(lease_id)], |r| {
            Ok(LeaseInfo {
                id: db_to_u64(r.get(0)?),
                workunit_id: db_to_u64(r.get(1)?),
                worker_id: db_to_u64(r.get(2)?),
                state: ReplicaState::from_db(r.get(3)?),
                deadline_ms: r.get(4)?,
                kind: kind_of(r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                issued_ms: r.get(10)?,
                known_nodes: r.get::<_, Option<i64>>(11)?.map(db_to_u64),
            })
        })
        .optional()?)
}

/// The campaign `campaign_id`, or [`StoreError::UnknownCampaign`].
fn campaign_by_id(conn: &Connection, campaign_id: u64) -> StoreResult<Campaign> {
    conn.query_row(
        &format!("SELECT {CAMPAIGN_COLS} FROM campaigns WHERE id = ?1"),
        [u64_to_db(campaign_id)],
        campaign_row,
    )
    .optional()?
    .ok_or(StoreError::UnknownCampaign(campaign_id))
}

fn campaign_row(r: &rusqlite::Row) -> rusqlite::Result<Campaign> {
    Ok(Campaign {
        id: db_to_u64(r.get(0)?),
        kind: r.get(1)?,
        depth: r.get::<_, i64>(2)? as u32,
        quorum: r.get::<_, i64>(3)? as u32,
        max_results: r.get::<_, i64>(4)? as u32,
        positions: r.get(5)?,
        engine: r.get(6)?,
        split_ply: r.get::<_, i64>(7)? as u32,
        family: r.get(8)?,
    })
}

const CAMPAIGN_COLS: &str =
    "id, kind, depth, quorum, max_results, positions, engine, split_ply, family";

impl Store for SqliteStore {
    fn create_campaign(&self, c: &NewCampaign, now_ms: i64) -> StoreResult<Campaign> {
        let positions = c.positions_text();
        let family_units = c.family_units().map_err(StoreError::Db)?;
        self.with_tx(|tx| {
            let engine = c.analysis.map(|e| e.name().to_string());
            exec(tx,
                "INSERT INTO campaigns (kind, depth, quorum, max_results, positions, created_ms, engine, split_ply, family) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![c.kind_name(), c.depth, c.quorum, c.max_results, positions, now_ms, engine, c.split_ply, c.family.name()],
            )?;
            let kind = kind_code(c.analysis);
            let hash_mib = c.analysis.map(|_| ANALYSIS_HASH_MIB);
            let id = tx.last_insert_rowid();
            let needed = match scheduler::transition(QuorumPolicy { quorum: c.quorum, max_results: c.max_results }, &[]) {
                Transition::Pending { needed } => needed,
                _ => c.quorum,
            };
            let mut st = tx.prepare_cached(
                "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, known_nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            let mut split_st = tx.prepare_cached(
                "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, origin_sp, multiplicity, first_moves)
                 VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9)",
            )?;
            // All workunits go in this one transaction through prepared statements: a campaign
            // appears whole or not at all, and there is no per-unit commit.
            for &sp in &c.positions {
                let start = c960_common::StartPosition::new(u32::from(sp)).map_err(|e| StoreError::Db(e.to_string()))?;
                if c.split_ply > 0 {
                    let sub_depth = c.depth - c.split_ply;
                    for node in c960_common::split::split(&start.position(), c.split_ply) {
                        let moves: Vec<(&String, &u64)> = node.by_first_move.iter().collect();
                        let moves = serde_json::to_string(&moves).map_err(|e| StoreError::Db(e.to_string()))?;
                        split_st.execute(params![id, node.fen, sub_depth, c.quorum, c.max_results, needed, sp, u64_to_db(node.multiplicity), moves])?;
                    }
                    continue;
                }
                let fen = start.position().to_fen(c960_common::CastlingNotation::Shredder);
                let known = if c.analysis.is_none() { crate::known::perft(sp, c.depth).map(u64_to_db) } else { None };
                st.execute(params![id, sp, fen, c.depth, c.quorum, c.max_results, needed, kind, hash_mib, known])?;
            }
            // Other families: the FEN is all a worker needs; the number is kept for exports.
            let mut family_st = tx.prepare_cached(
                "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, family_number) VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for (number, fen) in &family_units {
                family_st.execute(params![id, fen, c.depth, c.quorum, c.max_results, needed, kind, hash_mib, number])?;
            }
            // The counters the triggers keep from now on start from the units just inserted.
            exec(tx,
                "INSERT INTO campaign_counts (campaign_id, total, queued) SELECT ?1, COUNT(*), COALESCE(SUM(needed), 0) FROM workunits WHERE campaign_id = ?1",
                [id],
            )?;
            Ok(Campaign {
                id: db_to_u64(id),
                kind: c.kind_name().into(),
                engine,
                split_ply: c.split_ply,
                depth: c.depth,
                quorum: c.quorum,
                max_results: c.max_results,
                positions,
                family: c.family.name().to_string(),
            })
        })
    }

    fn find_campaign(&self, c: &NewCampaign) -> StoreResult<Option<Campaign>> {
        let conn = self.lock()?;
        Ok(conn
            .query_row(
                &format!(
                    "SELECT {CAMPAIGN_COLS} FROM campaigns WHERE kind = ?5 AND depth = ?1 AND quorum = ?2
                     AND max_results = ?3 AND positions = ?4 AND engine IS ?6 AND split_ply = ?7 AND family = ?8 ORDER BY id LIMIT 1"
                ),
                params![
                    c.depth,
                    c.quorum,
                    c.max_results,
                    c.positions_text(),
                    c.kind_name(),
                    c.analysis.map(|e| e.name()),
                    c.split_ply,
                    c.family.name()
                ],
                campaign_row,
            )
            .optional()?)
    }

    fn campaigns(&self) -> StoreResult<Vec<Campaign>> {
        let conn = self.read()?;
        let mut st = conn.prepare(&format!(
            "SELECT {CAMPAIGN_COLS} FROM campaigns ORDER BY id"
        ))?;
        Ok(st.query_map([], campaign_row)?.collect::<Result<_, _>>()?)
    }

    fn register_worker_from(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        block: Option<&str>,
        now_ms: i64,
    ) -> StoreResult<u64> {
        self.with_tx(|tx| insert_worker(tx, name, key_hash, engine, block, now_ms))
    }

    fn register_worker_with_token(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        block: Option<&str>,
        token_id: u64,
        token_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<u64> {
        self.with_tx(|tx| {
            enrolment::spend(tx, token_id, token_hash)?;
            let id = insert_worker(tx, name, key_hash, engine, block, now_ms)?;
            enrolment::mark_enrolled(tx, id, token_id)?;
            Ok(id)
        })
    }

    fn mint_enrolment_token(
        &self,
        name: &str,
        cap: u64,
        secret_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<EnrolmentToken> {
        self.with_tx(|tx| enrolment::mint(tx, name, cap, secret_hash, now_ms))
    }

    fn revoke_enrolment_token(&self, id: u64, now_ms: i64) -> StoreResult<EnrolmentToken> {
        self.with_tx(|tx| enrolment::revoke(tx, id, now_ms))
    }

    fn enrolment_tokens(&self) -> StoreResult<Vec<EnrolmentToken>> {
        enrolment::list(&*self.read()?)
    }

    fn set_trust(&self, worker_id: u64, trusted: bool) -> StoreResult<WorkerRecord> {
        self.with_tx(|tx| {
            let level = if trusted {
                TrustLevel::Operator
            } else {
                TrustLevel::Untrusted
            };
            let changed = exec(
                tx,
                "UPDATE workers SET trusted = ?2 WHERE id = ?1",
                params![u64_to_db(worker_id), level as i64],
            )?;
            if changed == 0 {
                return Err(StoreError::UnknownWorker(worker_id));
            }
            worker_in(tx, worker_id)?.ok_or(StoreError::UnknownWorker(worker_id))
        })
    }

    fn set_integrity(&self, integrity: &Integrity) -> StoreResult<()> {
        self.with_tx(|tx| {
            for (k, v) in integrity.to_settings() {
                exec(
                    tx,
                    "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)",
                    params![k, u64_to_db(v)],
                )?;
            }
            Ok(())
        })
    }

    fn checks_wanted(&self, limit: usize) -> StoreResult<Vec<CheckRequest>> {
        let conn = self.lock()?;
        let mut st = conn.prepare_cached(
            "SELECT * FROM (SELECT w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib, 0 FROM workunits w WHERE w.check_state = 1 ORDER BY w.id LIMIT ?1)
             UNION ALL
             SELECT * FROM (SELECT w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib, 1 FROM workunits w WHERE w.check_state = 4 ORDER BY w.id LIMIT ?1)",
        )?;
        let rows = st.query_map([limit as i64], |r| {
            Ok(CheckRequest {
                workunit_id: db_to_u64(r.get(0)?),
                kind: kind_of(r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
                resplit: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn record_check(
        &self,
        workunit_id: u64,
        outcome: &CheckOutcome,
        now_ms: i64,
    ) -> StoreResult<()> {
        self.with_tx(|tx| {
            if let Some(done) = record_resplit(tx, workunit_id, outcome, now_ms)? {
                return Ok(done);
            }
            match outcome {
                CheckOutcome::Verified { digest, nodes } => {
                    exec(
                        tx,
                        "UPDATE workunits SET check_state = 2, verified_digest = ?2 WHERE id = ?1",
                        params![u64_to_db(workunit_id), digest.to_vec()],
                    )?;
                    bump_setting(tx, "checks_run", 1)?;
                    bump_setting(tx, "check_nodes", *nodes)?;
                }
                CheckOutcome::OverBudget => {
                    exec(
                        tx,
                        "UPDATE workunits SET check_state = 3 WHERE id = ?1",
                        [u64_to_db(workunit_id)],
                    )?;
                    bump_setting(tx, "checks_over_budget", 1)?;
                }
            }
            retransition(tx, workunit_id, now_ms)
        })
    }

    fn overturn_check(&self, workunit_id: u64, truth: &Digest, now_ms: i64) -> StoreResult<()> {
        self.with_tx(|tx| crate::quarantine::overturn(tx, workunit_id, truth, now_ms))
    }

    fn check_cost(&self) -> StoreResult<CheckCost> {
        let conn = self.lock()?;
        let get = |key: &str| -> StoreResult<u64> {
            Ok(conn
                .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
                .query_row([key], |r| r.get::<_, i64>(0))
                .optional()?
                .map_or(0, db_to_u64))
        };
        let waiting: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM workunits WHERE check_state = 1")?
            .query_row([], |r| r.get(0))?;
        let valid: i64 = conn
            .prepare_cached("SELECT COALESCE(SUM(valid), 0) FROM campaign_counts")?
            .query_row([], |r| r.get(0))?;
        let returned = get("results_returned")?;
        Ok(CheckCost {
            checks_run: get("checks_run")?,
            check_nodes: get("check_nodes")?,
            checks_over_budget: get("checks_over_budget")?,
            checks_waiting: db_to_u64(waiting),
            resplits_run: get("resplits_run")?,
            resplits_overturned: get("resplits_overturned")?,
            replicas_per_valid_workunit: if valid > 0 {
                returned as f64 / valid as f64
            } else {
                0.0
            },
        })
    }

    fn worker(&self, id: u64) -> StoreResult<Option<WorkerRecord>> {
        let conn = self.lock()?;
        worker_in(&conn, id)
    }

    fn assign_from(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        now_ms: i64,
        lease_ms: i64,
        max_units: u32,
        lease_cap: u64,
        block: Option<&str>,
    ) -> StoreResult<Vec<Lease>> {
        let codes = accepted_codes(accepts);
        if codes.is_empty() || max_units == 0 {
            return Ok(Vec::new());
        }
        self.with_tx(|tx| {
            expire(tx, now_ms)?;
            // Standing inside the transaction: a quarantine committed a moment ago is seen here,
            // so no lease goes to a worker that is being quarantined.
            type Standing = (bool, bool, i64, i64, Option<String>, Option<i64>, i64);
            let (banned, quarantined, level, passed, reg_block, token, registered): Standing = tx
                .prepare_cached(
                    "SELECT banned != 0, quarantined_ms IS NOT NULL, trusted, checks_passed, reg_block, enrolment_token, created_ms FROM workers WHERE id = ?1",
                )?
                .query_row([u64_to_db(worker_id)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
                .optional()?
                .ok_or(StoreError::UnknownWorker(worker_id))?;
            if banned || quarantined {
                return Err(StoreError::NotInGoodStanding { worker: worker_id, banned });
            }
            exec(tx, "UPDATE workers SET last_seen_ms = ?2, last_block = COALESCE(?3, last_block) WHERE id = ?1",
                params![u64_to_db(worker_id), now_ms, block])?;
            let integrity = integrity_in(tx)?;
            let level = TrustLevel::from_db(level);
            let mut want = u64::from(max_units);
            // The worker's own open leases first: it asks again, so it lost them (a crash).
            let mut leases = own_open_leases(tx, worker_id, &codes, now_ms, want)?;
            want -= leases.len() as u64;
            let cap = trust::lease_cap(level, db_to_u64(passed), lease_cap, &integrity);
            let open = open_leases_in(tx, worker_id, now_ms)?;
            if cap > 0 {
                if open >= cap && leases.is_empty() {
                    return Err(StoreError::LeaseLimit { worker: worker_id, open, cap });
                }
                want = want.min(cap.saturating_sub(open));
            }
            if let Some(b) = block.filter(|_| integrity.block_lease_cap > 0) {
                let in_block: i64 = tx
                    .prepare_cached(
                        "SELECT COUNT(*) FROM results r JOIN workers o ON o.id = r.worker_id
                         WHERE o.last_block = ?1 AND r.state = 0 AND r.deadline_ms >= ?2",
                    )?
                    .query_row(params![b, now_ms], |r| r.get(0))?;
                want = want.min(integrity.block_lease_cap.saturating_sub(db_to_u64(in_block)));
            }
            if want == 0 {
                return Ok(leases);
            }
            // The NOT EXISTS mirror scheduler::may_receive so the index does the filtering;
            // may_receive is checked again below on the loaded replicas. Each workunit appears
            // once, so a batch never holds two replicas of one workunit. Replicas reserved for
            // trusted workers are skipped by untrusted ones; and so are workunits a worker of the
            // same party holds or answered (trust::same_party: either of this worker's address
            // blocks when separation is on, its enrolment token, its registration burst).
            // `codes` holds integers from accepted_codes only, so formatting it in is safe.
            let (b1, b2) = if integrity.separate_address_blocks {
                let now = block.map(str::to_string);
                (reg_block.clone().or(now.clone()), now.or(reg_block.clone()))
            } else {
                (None, None)
            };
            let burst_block = reg_block.as_deref().filter(|_| integrity.registration_burst_ms > 0);
            let found: Vec<WorkunitRow> = tx
                .prepare_cached(
                    &format!("SELECT w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib FROM workunits w
                     WHERE w.state = 0 AND w.needed > 0 AND w.kind IN ({codes}) AND (w.trusted_only = 0 OR ?3)
                     AND NOT EXISTS (
                        SELECT 1 FROM results r WHERE r.workunit_id = w.id AND r.worker_id = ?1 AND r.state IN (0, 1, 4))
                     AND ((?4 IS NULL AND ?6 IS NULL AND ?7 IS NULL) OR NOT EXISTS (
                        SELECT 1 FROM results r JOIN workers o ON o.id = r.worker_id
                        WHERE r.workunit_id = w.id AND r.state IN (0, 1) AND o.id != ?1
                          AND (o.reg_block IN (?4, ?5) OR o.last_block IN (?4, ?5) OR o.enrolment_token = ?6
                               OR (o.reg_block = ?7 AND ABS(o.created_ms - ?8) <= ?9))))
                     ORDER BY w.id LIMIT ?2"),
                )?
                .query_map(
                    params![u64_to_db(worker_id), want as i64, level.is_trusted(), b1, b2, token,
                        burst_block, registered, u64_to_db(integrity.registration_burst_ms)],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
                )?
                .collect::<Result<_, _>>()?;
            let deadline = scheduler::lease_deadline(now_ms, lease_ms);
            for (wu, sp, fen, depth, kind, hash_mib) in found {
                if !scheduler::may_receive(worker_id, &replicas(tx, db_to_u64(wu))?) {
                    return Err(StoreError::Db("scheduler and query disagree".into()));
                }
                if cfg!(debug_assertions) {
                    let me = trust::Party { reg_block: reg_block.as_deref(), last_block: block, token: token.map(db_to_u64), registered_ms: registered };
                    for (rb, lb, t, at) in holders(tx, wu, worker_id)? {
                        let other = trust::Party { reg_block: rb.as_deref(), last_block: lb.as_deref(), token: t.map(db_to_u64), registered_ms: at };
                        if trust::same_party(&me, &other, &integrity) {
                            return Err(StoreError::Db("trust::same_party and the assign query disagree".into()));
                        }
                    }
                }
                exec(tx,
                    "INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms) VALUES (?1, ?2, 0, ?3, ?4)",
                    params![wu, u64_to_db(worker_id), now_ms, deadline],
                )?;
                let lease_id = db_to_u64(tx.last_insert_rowid());
                retransition(tx, db_to_u64(wu), now_ms)?;
                leases.push(Lease { lease_id, workunit_id: db_to_u64(wu), kind: kind_of(sp, fen, depth, kind, hash_mib), deadline_ms: deadline });
            }
            Ok(leases)
        })
    }

    fn leases(&self, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
        let conn = self.lock()?;
        lease_ids.iter().map(|&id| lease_in(&conn, id)).collect()
    }

    fn workunit_exists(&self, workunit_id: u64) -> StoreResult<bool> {
        let conn = self.lock()?;
        Ok(conn
            .query_row(
                "SELECT 1 FROM workunits WHERE id = ?1",
                [u64_to_db(workunit_id)],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    fn settle(
        &self,
        worker_id: u64,
        settlements: &[Settlement],
        now_ms: i64,
    ) -> StoreResult<Vec<StoreResult<()>>> {
        self.with_tx(|tx| {
            // Overdue leases are recorded as expired first, so refusing a late result is durable
            // and its replica is already on its way to another worker.
            expire(tx, now_ms)?;
            let mut outcomes = Vec::with_capacity(settlements.len());
            for s in settlements {
                let outcome = match s {
                    Settlement::Store {
                        lease_id,
                        submission,
                    } => store_result_in(tx, worker_id, *lease_id, submission, now_ms),
                    Settlement::Refuse {
                        lease_id,
                        reason,
                        failed_check,
                    } => refuse_in(tx, worker_id, *lease_id, reason, *failed_check, now_ms),
                };
                match outcome {
                    // Refusals are per settlement; a database failure aborts the transaction,
                    // so nothing of the batch is half-written.
                    Err(StoreError::Db(e)) => return Err(StoreError::Db(e)),
                    other => outcomes.push(other),
                }
            }
            exec(
                tx,
                "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
                params![u64_to_db(worker_id), now_ms],
            )?;
            Ok(outcomes)
        })
    }

    fn fail(&self, worker_id: u64, lease_id: u64, reason: &str, now_ms: i64) -> StoreResult<()> {
        let reason: String = reason.chars().take(500).collect();
        self.with_tx(|tx| {
            let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
            exec(
                tx,
                "UPDATE results SET state = ?2, returned_ms = ?3, error = ?4 WHERE id = ?1",
                params![
                    u64_to_db(lease_id),
                    ReplicaState::Error.to_db(),
                    now_ms,
                    format!("engine failed: {reason}")
                ],
            )?;
            exec(
                tx,
                "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
                params![u64_to_db(worker_id), now_ms],
            )?;
            retransition(tx, wu, now_ms)
        })
    }

    fn abandon(&self, worker_id: u64, lease_id: u64, now_ms: i64) -> StoreResult<()> {
        self.with_tx(|tx| {
            let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
            exec(
                tx,
                "UPDATE results SET state = ?2 WHERE id = ?1",
                params![u64_to_db(lease_id), ReplicaState::Abandoned.to_db()],
            )?;
            retransition(tx, wu, now_ms)
        })
    }

    fn expire_leases(&self, now_ms: i64) -> StoreResult<u64> {
        self.with_tx(|tx| expire(tx, now_ms))
    }

    fn release_all_leases(&self, now_ms: i64) -> StoreResult<u64> {
        self.with_tx(|tx| {
            let ids: Vec<(i64, i64)> = {
                let mut st = tx.prepare("SELECT id, workunit_id FROM results WHERE state = 0")?;
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()?
            };
            for (id, wu) in &ids {
                exec(
                    tx,
                    "UPDATE results SET state = ?2 WHERE id = ?1",
                    params![id, ReplicaState::Abandoned.to_db()],
                )?;
                retransition(tx, db_to_u64(*wu), now_ms)?;
            }
            Ok(ids.len() as u64)
        })
    }

    fn progress(&self) -> StoreResult<Vec<CampaignProgress>> {
        let campaigns = self.campaigns()?;
        let conn = self.lock()?;
        let mut st = conn.prepare_cached(
            "SELECT total, valid, failed, queued, in_flight, nodes_valid_hi, nodes_valid_lo, nodes_computed_hi, nodes_computed_lo
             FROM campaign_counts WHERE campaign_id = ?1",
        )?;
        let split = |hi: i64, lo: i64| (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128;
        let mut out = Vec::with_capacity(campaigns.len());
        for c in campaigns {
            let p = st
                .query_row([u64_to_db(c.id)], |r| {
                    Ok(CampaignProgress {
                        campaign: c.clone(),
                        total: r.get::<_, i64>(0)? as u64,
                        valid: r.get::<_, i64>(1)? as u64,
                        failed: r.get::<_, i64>(2)? as u64,
                        queued_replicas: r.get::<_, i64>(3)? as u64,
                        in_flight: r.get::<_, i64>(4)? as u64,
                        nodes_valid: split(r.get(5)?, r.get(6)?),
                        nodes_computed: split(r.get(7)?, r.get(8)?),
                    })
                })
                .optional()?
                .ok_or_else(|| StoreError::Db(format!("campaign {} has no counters", c.id)))?;
            out.push(p);
        }
        Ok(out)
    }

    fn worker_summary(&self, now_ms: i64) -> StoreResult<WorkerSummary> {
        let conn = self.lock()?;
        let (registered, active): (i64, i64) = conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(last_seen_ms >= ?1), 0) FROM workers",
            [now_ms - 3_600_000],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut st = conn.prepare(&format!(
            "SELECT {WORKER_COLS} FROM workers
             WHERE lost_votes + refused + checks_failed > 0 OR banned != 0 OR quarantined_ms IS NOT NULL
             ORDER BY banned DESC, quarantined_ms IS NOT NULL DESC, checks_failed + refused DESC, lost_votes DESC, id LIMIT 20"
        ))?;
        let marked = st.query_map([], worker_row)?.collect::<Result<_, _>>()?;
        let trusted: i64 =
            conn.query_row("SELECT COUNT(*) FROM workers WHERE trusted != 0", [], |r| {
                r.get(0)
            })?;
        let mut st = conn.prepare(&format!(
            "SELECT {WORKER_COLS} FROM workers ORDER BY id LIMIT 200"
        ))?;
        let list = st.query_map([], worker_row)?.collect::<Result<_, _>>()?;
        Ok(WorkerSummary {
            registered: registered as u64,
            active_last_hour: active as u64,
            marked,
            trusted: trusted as u64,
            list,
        })
    }

    fn table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)> {
        let conn = self.read()?;
        let campaign = campaign_by_id(&conn, campaign_id)?;
        let mut st = conn.prepare(
            "SELECT w.id, w.sp, w.fen, w.depth, w.nodes,
                    CASE WHEN w.state = 0 AND w.reverify != 0 THEN 3 ELSE w.state END, w.canonical_digest,
                    (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = 1),
                    w.family_number
             FROM workunits w WHERE w.campaign_id = ?1 ORDER BY w.sp, w.family_number, w.id",
        )?;
        let rows = st
            .query_map([u64_to_db(campaign_id)], |r| {
                let state: i64 = r.get(5)?;
                let digest: Option<Vec<u8>> = r.get(6)?;
                Ok(TableRow {
                    workunit_id: db_to_u64(r.get(0)?),
                    sp: r.get::<_, Option<i64>>(1)?.map(|n| n as u16),
                    family_number: r.get::<_, Option<i64>>(8)?.map(|n| n as u32),
                    fen: r.get(2)?,
                    depth: r.get::<_, i64>(3)? as u32,
                    nodes: if state == 1 {
                        r.get::<_, Option<i64>>(4)?.map(db_to_u64)
                    } else {
                        None
                    },
                    status: match state {
                        0 => "open",
                        1 => "valid",
                        // Reopened because a worker that helped validate it was caught lying.
                        3 => "reverifying",
                        _ => "failed",
                    }
                    .into(),
                    agreeing_results: r.get::<_, i64>(7)? as u32,
                    digest: digest.map(|d| hex(&d)),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok((campaign, rows))
    }

    fn visit_split_units(
        &self,
        campaign_id: u64,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<Campaign> {
        let conn = self.read()?;
        let campaign = campaign_by_id(&conn, campaign_id)?;
        crate::reads::visit_split_units_of(&conn, campaign_id, 0, u16::MAX, visit)?;
        Ok(campaign)
    }

    fn analysis_table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<AnalysisRow>)> {
        let conn = self.read()?;
        let campaign = campaign_by_id(&conn, campaign_id)?;
        let mut st = conn.prepare(
            "SELECT w.id, w.sp, w.fen, w.depth, w.state,
                    (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = 1),
                    (SELECT payload FROM results r WHERE r.id = w.canonical_result_id),
                    w.family_number
             FROM workunits w WHERE w.campaign_id = ?1 ORDER BY w.sp, w.family_number, w.id",
        )?;
        let rows = st
            .query_map([u64_to_db(campaign_id)], |r| {
                let state: i64 = r.get(4)?;
                let payload: Option<String> = r.get(6)?;
                Ok((
                    AnalysisRow {
                        workunit_id: db_to_u64(r.get(0)?),
                        sp: r.get::<_, Option<i64>>(1)?.map(|n| n as u16),
                        family_number: r.get::<_, Option<i64>>(7)?.map(|n| n as u32),
                        fen: r.get(2)?,
                        depth: r.get::<_, i64>(3)? as u32,
                        status: match state {
                            0 => "open",
                            1 => "valid",
                            _ => "failed",
                        }
                        .into(),
                        agreeing_results: r.get::<_, i64>(5)? as u32,
                        result: None,
                    },
                    if state == 1 { payload } else { None },
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let rows = rows
            .into_iter()
            .map(|(mut row, payload)| {
                if let Some(p) = payload {
                    row.result =
                        Some(serde_json::from_str(&p).map_err(|e| StoreError::Db(e.to_string()))?);
                }
                Ok(row)
            })
            .collect::<StoreResult<_>>()?;
        Ok((campaign, rows))
    }

    fn results(&self, workunit_id: u64) -> StoreResult<Vec<ResultRecord>> {
        let conn = self.lock()?;
        let mut st = conn.prepare(
            "SELECT id, workunit_id, worker_id, state, outcome, nodes, digest FROM results WHERE workunit_id = ?1 ORDER BY id",
        )?;
        Ok(st
            .query_map([u64_to_db(workunit_id)], |r| {
                let digest: Option<Vec<u8>> = r.get(6)?;
                Ok(ResultRecord {
                    id: db_to_u64(r.get(0)?),
                    workunit_id: db_to_u64(r.get(1)?),
                    worker_id: db_to_u64(r.get(2)?),
                    state: ReplicaState::from_db(r.get(3)?).name().into(),
                    outcome: match r.get::<_, i64>(4)? {
                        1 => "valid",
                        2 => "invalid",
                        _ => "pending",
                    }
                    .into(),
                    nodes: r.get::<_, Option<i64>>(5)?.map(db_to_u64),
                    digest: digest.map(|d| hex(&d)),
                })
            })?
            .collect::<Result<_, _>>()?)
    }

    fn set_max_strikes(&self, max_strikes: u64) -> StoreResult<()> {
        self.with_tx(|tx| {
            tx.execute(
                "INSERT OR REPLACE INTO settings (key, value) VALUES ('max_strikes', ?1)",
                [u64_to_db(max_strikes)],
            )?;
            Ok(())
        })
    }

    fn open_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
        let conn = self.lock()?;
        open_leases_in(&conn, worker_id, now_ms)
    }

    fn set_banned(&self, worker_id: u64, banned: bool, now_ms: i64) -> StoreResult<WorkerRecord> {
        self.with_tx(|tx| {
            let changed = if banned {
                tx.execute(
                    "UPDATE workers SET banned = 1 WHERE id = ?1",
                    [u64_to_db(worker_id)],
                )?
            } else {
                tx.execute(
                    "UPDATE workers SET banned = 0, quarantined_ms = NULL, lost_votes = 0, refused = 0 WHERE id = ?1",
                    [u64_to_db(worker_id)],
                )?
            };
            if changed == 0 {
                return Err(StoreError::UnknownWorker(worker_id));
            }
            if banned {
                crate::quarantine::quarantine(tx, worker_id, now_ms)?;
            }
            Ok(tx.query_row(
                &format!("SELECT {WORKER_COLS} FROM workers WHERE id = ?1"),
                [u64_to_db(worker_id)],
                worker_row,
            )?)
        })
    }

    fn standings(
        &self,
        q: &crate::reads::StandingsQuery,
    ) -> StoreResult<Vec<crate::reads::WorkerStanding>> {
        crate::reads::standings(&*self.lock()?, q)
    }

    fn worker_history(
        &self,
        worker_id: u64,
        recent_since_ms: i64,
        limit: u64,
    ) -> StoreResult<Option<crate::reads::WorkerHistory>> {
        crate::reads::worker_history(&*self.lock()?, worker_id, recent_since_ms, limit)
    }

    fn visit_split_units_of(
        &self,
        campaign_id: u64,
        first_sp: u16,
        last_sp: u16,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<()> {
        crate::reads::visit_split_units_of(&*self.lock()?, campaign_id, first_sp, last_sp, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use c960_common::wire::PerftResult;
    use std::collections::BTreeSet;

    const ALL: Capabilities = Capabilities {
        perft: true,
        builtin_analysis: true,
        uci_analysis: true,
    };

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        (dir, s)
    }

    fn sub(nodes: u64, tag: u8) -> Submission {
        Submission {
            result: WorkResult::Perft(PerftResult {
                nodes,
                divide: vec![],
            }),
            digest: [tag; 32],
            elapsed_ms: 1,
            engine: "test 0".into(),
        }
    }

    #[test]
    fn disagreement_up_to_the_cap_fails_the_workunit() {
        let (_d, s) = store();
        let c = s
            .create_campaign(&NewCampaign::new(2, 2, Some(3), vec![518]).unwrap(), 0)
            .unwrap();
        let w: Vec<u64> = (0..4)
            .map(|i| s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
            .collect();
        let l0 = s.assign(w[0], &ALL, 1, 1000).unwrap().unwrap();
        assert_eq!(
            s.assign(w[0], &ALL, 1, 1000).unwrap().unwrap(),
            l0,
            "fetching again hands back the open lease, never a second replica"
        );
        let l1 = s.assign(w[1], &ALL, 1, 1000).unwrap().unwrap();
        assert!(
            s.assign(w[2], &ALL, 1, 1000).unwrap().is_none(),
            "more replicas than the quorum"
        );
        s.submit(w[0], l0.lease_id, &sub(400, 1), 2).unwrap();
        s.submit(w[1], l1.lease_id, &sub(401, 2), 2).unwrap();
        let l2 = s
            .assign(w[2], &ALL, 3, 1000)
            .unwrap()
            .expect("disagreement sends one more");
        s.submit(w[2], l2.lease_id, &sub(402, 3), 4).unwrap();
        assert!(
            s.assign(w[3], &ALL, 5, 1000).unwrap().is_none(),
            "cap reached"
        );
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!((rows[0].status.as_str(), rows[0].nodes), ("failed", None));
        assert!(matches!(
            s.submit(w[0], l0.lease_id, &sub(400, 1), 6),
            Err(StoreError::LeaseClosed(..))
        ));
    }

    #[test]
    fn expired_lease_is_reissued_and_late_result_refused() {
        let (_d, s) = store();
        let c = s
            .create_campaign(&NewCampaign::new(2, 2, None, vec![0]).unwrap(), 0)
            .unwrap();
        let w: Vec<u64> = (0..3)
            .map(|i| s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
            .collect();
        let l0 = s.assign(w[0], &ALL, 0, 100).unwrap().unwrap();
        let l1 = s.assign(w[1], &ALL, 0, 100).unwrap().unwrap();
        assert!(s.assign(w[2], &ALL, 50, 100).unwrap().is_none());
        let l2 = s
            .assign(w[2], &ALL, 101, 100)
            .unwrap()
            .expect("expired replicas are reissued");
        assert!(matches!(
            s.submit(w[0], l0.lease_id, &sub(400, 1), 102),
            Err(StoreError::LeaseExpired(_))
        ));
        // The expired holder may take it up again (it never returned a result).
        let again = s.assign(w[0], &ALL, 103, 100).unwrap().unwrap();
        assert_eq!(again.workunit_id, l0.workunit_id);
        s.submit(w[2], l2.lease_id, &sub(400, 1), 104).unwrap();
        s.submit(w[0], again.lease_id, &sub(400, 1), 105).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (
                rows[0].status.as_str(),
                rows[0].nodes,
                rows[0].agreeing_results
            ),
            ("valid", Some(400), 2)
        );
        assert!(
            s.results(l1.workunit_id)
                .unwrap()
                .iter()
                .any(|r| r.id == l1.lease_id && r.state == "expired")
        );
        assert_eq!(s.worker(w[0]).unwrap().unwrap().valid, 1);
    }

    #[test]
    fn reopening_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let s = SqliteStore::open(&path).unwrap();
        let spec = NewCampaign::new(1, 1, None, vec![1, 2]).unwrap();
        let c = s.create_campaign(&spec, 0).unwrap();
        let w = s.register_worker("w", b"h", "e", 0).unwrap();
        let l = s.assign(w, &ALL, 0, 100).unwrap().unwrap();
        s.submit(w, l.lease_id, &sub(20, 9), 1).unwrap();
        drop(s);
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.find_campaign(&spec).unwrap(), Some(c.clone()));
        let p = &s.progress().unwrap()[0];
        assert_eq!((p.total, p.valid, p.nodes_valid), (2, 1, 20));
    }

    /// The progress of every campaign by scanning the tables: what the counters must equal.
    fn recount(s: &SqliteStore) -> Vec<(u64, u64, u64, u64, u64, u128, u128)> {
        let conn = s.lock().unwrap();
        let ids: Vec<i64> = conn
            .prepare("SELECT id FROM campaigns ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        ids.into_iter()
            .map(|id| {
                let q = |sql: &str| -> i64 { conn.query_row(sql, [id], |r| r.get(0)).unwrap() };
                let nodes = |sql: &str| -> u128 {
                    conn.prepare(sql)
                        .unwrap()
                        .query_map([id], |r| r.get::<_, i64>(0))
                        .unwrap()
                        .map(|n| u128::from(db_to_u64(n.unwrap())))
                        .sum()
                };
                (
                    q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1") as u64,
                    q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1 AND state = 1") as u64,
                    q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1 AND state = 2") as u64,
                    q("SELECT COALESCE(SUM(needed), 0) FROM workunits WHERE campaign_id = ?1 AND state = 0") as u64,
                    q("SELECT COUNT(*) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = ?1 AND r.state = 0") as u64,
                    nodes("SELECT nodes FROM workunits WHERE campaign_id = ?1 AND state = 1"),
                    nodes("SELECT r.nodes FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = ?1 AND r.state = 1"),
                )
            })
            .collect()
    }

    fn counters(s: &SqliteStore) -> Vec<(u64, u64, u64, u64, u64, u128, u128)> {
        s.progress()
            .unwrap()
            .into_iter()
            .map(|p| {
                (
                    p.total,
                    p.valid,
                    p.failed,
                    p.queued_replicas,
                    p.in_flight,
                    p.nodes_valid,
                    p.nodes_computed,
                )
            })
            .collect()
    }

    #[test]
    fn progress_counters_equal_a_full_recount_through_every_transition() {
        let (_d, s) = store();
        s.create_campaign(
            &NewCampaign::new(2, 2, Some(3), vec![0, 1, 2, 518]).unwrap(),
            0,
        )
        .unwrap();
        s.create_campaign(&NewCampaign::new(3, 1, None, vec![5]).unwrap(), 0)
            .unwrap();
        assert_eq!(counters(&s), recount(&s));
        let w: Vec<u64> = (0..4)
            .map(|i| s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
            .collect();
        // Node counts above 2^32 and 2^40 exercise the split of the sums.
        let big = (1u64 << 40) + 12_345;
        let a = s.assign_batch(w[0], &ALL, 1, 1000, 8, 0).unwrap();
        let b = s.assign_batch(w[1], &ALL, 1, 1000, 8, 0).unwrap();
        assert_eq!(counters(&s), recount(&s));
        for (i, l) in a.iter().enumerate() {
            s.submit(w[0], l.lease_id, &sub(big + i as u64, i as u8), 2)
                .unwrap();
        }
        assert_eq!(counters(&s), recount(&s));
        // Worker 1 agrees on some, disagrees on one, refuses one and abandons one.
        for (i, l) in b.iter().enumerate() {
            match i {
                0 => s.submit(w[1], l.lease_id, &sub(big, 0), 3).unwrap(),
                1 => s.submit(w[1], l.lease_id, &sub(7, 99), 3).unwrap(),
                2 => s.refuse(w[1], l.lease_id, "digest mismatch", 3).unwrap(),
                _ => s.abandon(w[1], l.lease_id, 3).unwrap(),
            }
        }
        assert_eq!(counters(&s), recount(&s));
        // A lease that expires, and a ban that reopens what the banned worker validated.
        let c = s.assign_batch(w[2], &ALL, 4, 10, 8, 0).unwrap();
        assert!(!c.is_empty());
        s.expire_leases(100).unwrap();
        assert_eq!(counters(&s), recount(&s));
        s.set_banned(w[1], true, 101).unwrap();
        assert_eq!(counters(&s), recount(&s));
        let p = s.progress().unwrap();
        assert!(
            p.iter()
                .any(|p| p.valid > 0 || p.nodes_computed > u128::from(big))
        );
        // Reopening keeps the counters too.
        drop(p);
        let path = _d.path().join("t.db");
        drop(s);
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(counters(&s), recount(&s));
        // A database from before the counters (schema 4) gets them filled in by the migration.
        s.lock()
            .unwrap()
            .execute_batch(
                "DROP TRIGGER workunit_counts; DROP TRIGGER result_issued; DROP TRIGGER result_counts;
                 DROP TABLE campaign_counts;
                 DROP INDEX workers_last_block; DROP INDEX workunits_checks; DROP INDEX workunits_resplits;
                 ALTER TABLE workers DROP COLUMN trusted; ALTER TABLE workers DROP COLUMN checks_passed;
                 ALTER TABLE workers DROP COLUMN checks_failed; ALTER TABLE workers DROP COLUMN reg_block;
                 ALTER TABLE workers DROP COLUMN last_block; ALTER TABLE workunits DROP COLUMN known_nodes;
                 ALTER TABLE workunits DROP COLUMN check_state; ALTER TABLE workunits DROP COLUMN verified_digest;
                 ALTER TABLE workunits DROP COLUMN trusted_only; ALTER TABLE workunits DROP COLUMN reverify;
                 ALTER TABLE results DROP COLUMN checked;
                 ALTER TABLE campaigns DROP COLUMN family; ALTER TABLE workunits DROP COLUMN family_number;
                 DROP INDEX workers_enrolment_token; ALTER TABLE workers DROP COLUMN enrolment_token;
                 DROP TABLE enrolment_tokens;
                 PRAGMA user_version = 4;",
            )
            .unwrap();
        let before = recount(&s);
        drop(s);
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(counters(&s), before);
    }

    #[test]
    fn progress_counters_are_exact_for_node_counts_of_2_to_the_63_and_more() {
        let (d, s) = store();
        let c = s
            .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1, 2]).unwrap(), 0)
            .unwrap();
        let w = s.register_worker("w", b"h", "e", 0).unwrap();
        let leases = s.assign_batch(w, &ALL, 1, 1000, 8, 0).unwrap();
        let counts = [u64::MAX, 1 << 63, (1 << 63) - 1];
        for (l, n) in leases.iter().zip(counts) {
            s.submit(w, l.lease_id, &sub(n, 1), 2).unwrap();
        }
        let want: u128 = counts.iter().map(|&n| u128::from(n)).sum();
        let p = s
            .progress()
            .unwrap()
            .into_iter()
            .find(|p| p.campaign.id == c.id);
        let p = p.unwrap();
        assert_eq!((p.valid, p.nodes_valid, p.nodes_computed), (3, want, want));
        assert_eq!(counters(&s), recount(&s));
        // Voiding them (a ban reopens what the worker validated) subtracts them exactly.
        s.set_banned(w, true, 3).unwrap();
        assert_eq!(counters(&s), recount(&s));
        assert_eq!(s.progress().unwrap()[0].nodes_valid, 0);
        // A database counted by the old triggers (schema 6, before migration 7 masked them) is
        // recounted by the migration (the family columns go too, so migration 8 runs again).
        s.lock()
            .unwrap()
            .execute_batch(
                "UPDATE campaign_counts SET nodes_valid_hi = -7, nodes_computed_hi = -7;
                 ALTER TABLE campaigns DROP COLUMN family; ALTER TABLE workunits DROP COLUMN family_number;
                 DROP INDEX workers_enrolment_token; ALTER TABLE workers DROP COLUMN enrolment_token;
                 DROP TABLE enrolment_tokens; DROP INDEX workunits_resplits;
                 PRAGMA user_version = 6;",
            )
            .unwrap();
        drop(s);
        let s = SqliteStore::open(&d.path().join("t.db")).unwrap();
        assert_eq!(counters(&s), recount(&s));
    }

    #[test]
    fn exports_read_beside_a_writer_holding_its_lock() {
        let (_d, s) = store();
        let c = s
            .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1]).unwrap(), 0)
            .unwrap();
        let w = s.register_worker("w", b"h", "e", 0).unwrap();
        let l = s.assign_batch(w, &ALL, 1, 1000, 1, 0).unwrap();
        s.submit(w, l[0].lease_id, &sub(400, 1), 2).unwrap();
        // The writer is busy (its lock held, a write transaction open): an export still reads,
        // from the last committed snapshot.
        let writer = s.lock().unwrap();
        writer
            .execute_batch(&format!(
                "BEGIN IMMEDIATE; UPDATE workunits SET nodes = 7 WHERE campaign_id = {}",
                c.id
            ))
            .unwrap();
        let (done, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let table = s.table(c.id).map(|(_, rows)| rows);
                let _ = s.campaigns().unwrap();
                let units = s.split_units(c.id).map(|(_, u)| u.len());
                done.send((table, units)).unwrap();
            });
            let got = rx.recv_timeout(std::time::Duration::from_secs(20));
            // Let go of the writer before judging, so a failure cannot hang the scope.
            writer.execute_batch("ROLLBACK").unwrap();
            drop(writer);
            let (rows, units) = got.expect("the export waited for the writer's lock");
            let rows = rows.unwrap();
            assert_eq!(units.unwrap(), 0);
            assert_eq!(rows.len(), 2);
            assert_eq!(rows.iter().filter(|r| r.nodes == Some(400)).count(), 1);
        });
    }

    #[test]
    fn an_export_beside_another_opens_its_own_read_connection() {
        let (_d, s) = store();
        let c = s
            .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1]).unwrap(), 0)
            .unwrap();
        let busy = s.reader.lock().unwrap();
        assert_eq!(s.table(c.id).unwrap().1.len(), 2);
        drop(busy);
        assert_eq!(s.table(c.id).unwrap().1.len(), 2);
    }

    #[test]
    fn a_batch_assign_respects_the_lease_cap_in_its_transaction() {
        let (_d, s) = store();
        s.create_campaign(&NewCampaign::new(2, 1, None, (0..10).collect()).unwrap(), 0)
            .unwrap();
        let w = s.register_worker("w", b"h", "e", 0).unwrap();
        s.set_trust(w, true).unwrap();
        let first = s.assign_batch(w, &ALL, 1, 1000, 8, 5).unwrap();
        assert_eq!(first.len(), 5, "capped at 5 open leases");
        let ids: std::collections::BTreeSet<u64> = first.iter().map(|l| l.workunit_id).collect();
        assert_eq!(ids.len(), 5, "distinct workunits");
        // Fetching again at the cap hands back the open leases (a crashed worker recovers
        // them), never more.
        assert_eq!(s.assign_batch(w, &ALL, 2, 1000, 8, 5).unwrap(), first);
        s.submit(w, first[0].lease_id, &sub(400, 1), 3).unwrap();
        let again = s.assign_batch(w, &ALL, 4, 1000, 8, 5).unwrap();
        assert_eq!(again.len(), 5);
        assert_eq!(again[..4], first[1..]);
        assert!(!ids.contains(&again[4].workunit_id));
        // Only kinds the worker accepts come back; with none open of those, the cap refuses.
        let analysis_only = Capabilities {
            perft: false,
            builtin_analysis: true,
            uci_analysis: false,
        };
        assert!(matches!(
            s.assign_batch(w, &analysis_only, 5, 1000, 8, 5),
            Err(StoreError::LeaseLimit {
                open: 5,
                cap: 5,
                ..
            })
        ));
    }

    /// Depth 9 has no public answer, so only trust or a check can anchor a value.
    fn unknown_campaign(s: &SqliteStore, positions: Vec<u16>) -> Campaign {
        s.create_campaign(&NewCampaign::new(9, 2, None, positions).unwrap(), 0)
            .unwrap()
    }

    #[test]
    fn unanchored_agreement_waits_for_a_trusted_worker_or_a_check() {
        let (_d, s) = store();
        s.set_integrity(&Integrity {
            check_rate_untrusted_ppm: 0,
            check_rate_trusted_ppm: 0,
            ..Integrity::default()
        })
        .unwrap();
        let c = unknown_campaign(&s, vec![0, 1]);
        let [a, b, u, t] =
            ["a", "b", "u", "t"].map(|n| s.register_worker(n, b"h", "e", 0).unwrap());
        s.set_trust(t, true).unwrap();
        // Two untrusted workers agree on workunit 1: not valid, reserved for trusted workers,
        // and queued for the coordinator's check.
        let la = s.assign(a, &ALL, 1, 1000).unwrap().unwrap();
        let lb = s.assign(b, &ALL, 1, 1000).unwrap().unwrap();
        assert_eq!(la.workunit_id, lb.workunit_id);
        s.submit(a, la.lease_id, &sub(7, 7), 2).unwrap();
        s.submit(b, lb.lease_id, &sub(7, 7), 2).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(rows[0].status, "open");
        assert_eq!(s.checks_wanted(10).unwrap()[0].workunit_id, la.workunit_id);
        let lu = s.assign(u, &ALL, 3, 1000).unwrap().unwrap();
        assert_ne!(lu.workunit_id, la.workunit_id, "untrusted U skips it");
        // A trusted worker that agrees anchors it.
        let lt = s.assign(t, &ALL, 3, 1000).unwrap().unwrap();
        assert_eq!(lt.workunit_id, la.workunit_id);
        s.submit(t, lt.lease_id, &sub(7, 7), 4).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!((rows[0].status.as_str(), rows[0].nodes), ("valid", Some(7)));
        // Workunit 2: the coordinator's check anchors an untrusted agreement, and the check is
        // graded: both pass.
        let lb2 = s.assign(b, &ALL, 5, 1000).unwrap().unwrap();
        s.submit(u, lu.lease_id, &sub(9, 9), 5).unwrap();
        s.submit(b, lb2.lease_id, &sub(9, 9), 5).unwrap();
        s.record_check(
            lu.workunit_id,
            &CheckOutcome::Verified {
                digest: [9; 32],
                nodes: 9,
            },
            6,
        )
        .unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(rows[1].status, "valid");
        assert_eq!(s.worker(u).unwrap().unwrap().checks_passed, 1);
        let cost = s.check_cost().unwrap();
        // Workunit 1's check still waits: valid through T, it is still evidence about A and B.
        assert_eq!(
            (cost.checks_run, cost.check_nodes, cost.checks_waiting),
            (1, 9, 1)
        );
        assert!((cost.replicas_per_valid_workunit - 2.5).abs() < 1e-9);
    }

    #[test]
    fn trust_is_earned_by_checks_and_lost_with_the_standing_on_a_failed_one() {
        let (_d, s) = store();
        s.set_max_strikes(3).unwrap();
        s.set_integrity(&Integrity {
            trust_after_checks: 2,
            check_rate_untrusted_ppm: 0,
            check_rate_trusted_ppm: 0,
            ..Integrity::default()
        })
        .unwrap();
        let c = unknown_campaign(&s, vec![0, 1, 2]);
        let w = s.register_worker("w", b"h", "e", 0).unwrap();
        let v = s.register_worker("v", b"h", "e", 0).unwrap();
        let ls = s.assign_batch(w, &ALL, 1, 1000, 3, 0).unwrap();
        assert_eq!(ls.len(), 3);
        for (i, l) in ls.iter().enumerate() {
            s.submit(w, l.lease_id, &sub(i as u64, i as u8), 2).unwrap();
        }
        let check = |wu: u64, d: u8| {
            s.record_check(
                wu,
                &CheckOutcome::Verified {
                    digest: [d; 32],
                    nodes: 1,
                },
                3,
            )
            .unwrap()
        };
        check(ls[0].workunit_id, 0);
        assert_eq!(s.worker(w).unwrap().unwrap().trust, "untrusted");
        check(ls[1].workunit_id, 1);
        let rec = s.worker(w).unwrap().unwrap();
        assert_eq!((rec.trust.as_str(), rec.checks_passed), ("earned", 2));
        // Trusted now, until it fails a check: trust and standing go at once.
        check(ls[2].workunit_id, 99);
        let rec = s.worker(w).unwrap().unwrap();
        assert_eq!(
            (rec.trust.as_str(), rec.checks_failed, rec.quarantined),
            ("untrusted", 1, true)
        );
        assert!(matches!(
            s.assign(w, &ALL, 4, 1000),
            Err(StoreError::NotInGoodStanding { banned: false, .. })
        ));
        // With quorum 2 nothing was valid on W's results alone; V still works.
        assert!(s.assign(v, &ALL, 5, 1000).unwrap().is_some());
        let (_, rows) = s.table(c.id).unwrap();
        assert!(rows.iter().all(|r| r.status != "valid"), "{rows:?}");
    }

    #[test]
    fn untrusted_lease_cap_block_separation_and_block_cap() {
        let (_d, s) = store();
        s.set_integrity(&Integrity {
            block_lease_cap: 6,
            ..Integrity::default()
        })
        .unwrap();
        unknown_campaign(&s, (0..20).collect());
        let reg = |n: &str, b: &str| s.register_worker_from(n, b"h", "e", Some(b), 0).unwrap();
        let [a1, a2, a3] = ["a1", "a2", "a3"].map(|n| reg(n, "10.0.0.0/24"));
        let b1 = reg("b1", "10.0.1.0/24");
        let fetch = |w: u64, block: &str| {
            s.assign_from(w, &ALL, 1, 1000, 16, 64, Some(block))
                .unwrap()
        };
        let la1 = fetch(a1, "10.0.0.0/24");
        assert_eq!(la1.len(), 4, "an untrusted worker holds 4 leases");
        let la2 = fetch(a2, "10.0.0.0/24");
        assert_eq!(la2.len(), 2, "the block holds 6 at most");
        let ids1: BTreeSet<u64> = la1.iter().map(|l| l.workunit_id).collect();
        assert!(
            la2.iter().all(|l| !ids1.contains(&l.workunit_id)),
            "no two workers of one block on one workunit"
        );
        assert!(fetch(a3, "10.0.0.0/24").is_empty());
        // Another block gets the replicas the first block holds.
        let lb = fetch(b1, "10.0.1.0/24");
        assert_eq!(lb.len(), 4);
        assert!(lb.iter().all(|l| ids1.contains(&l.workunit_id)));
        // Moving to another address does not escape the block it registered from.
        let la3 = fetch(a3, "10.0.9.0/24");
        assert!(la3.iter().all(|l| !ids1.contains(&l.workunit_id)));
    }

    /// Behind a proxy (blocks do not separate) workers registered in one burst from one block
    /// are one party; one that registered later pairs with them.
    #[test]
    fn one_registration_burst_is_one_party() {
        let (_d, s) = store();
        s.set_integrity(&Integrity {
            separate_address_blocks: false,
            registration_burst_ms: 5_000,
            ..Integrity::default()
        })
        .unwrap();
        unknown_campaign(&s, (0..3).collect());
        let b = Some("10.0.0.0/24");
        let reg = |n: &str, at| s.register_worker_from(n, b"h", "e", b, at).unwrap();
        let (w1, w2, w3) = (reg("w1", 0), reg("w2", 1_000), reg("w3", 100_000));
        let fetch = |w| s.assign_from(w, &ALL, 200_000, 1000, 16, 64, b).unwrap();
        assert_eq!(fetch(w1).len(), 3);
        assert!(fetch(w2).is_empty(), "registered in w1's burst");
        assert_eq!(fetch(w3).len(), 3, "registered later: pairs with w1");
    }
}
