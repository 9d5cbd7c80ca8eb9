//! The records the store reads and writes, shared by every backend.

use c960_common::wire::{AnalysisResult, WorkResult, WorkUnitKind};
use serde::Serialize;

use super::states::{CampaignAction, CampaignStatus, Digest, ReplicaState, TrustLevel};

/// What a campaign computes: the `kind` of its JSON, CSV and pages, and of a campaign request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CampaignKind {
    /// Perft of each start (or split sub-position).
    Perft,
    /// A fixed-depth search of each start.
    Analysis,
    /// Self-play games from each start.
    #[serde(rename = "selfplay")]
    SelfPlay,
}

impl CampaignKind {
    /// The kind of this name ([`CampaignKind::as_str`]), if it is one.
    pub fn parse(name: &str) -> Option<CampaignKind> {
        [
            CampaignKind::Perft,
            CampaignKind::Analysis,
            CampaignKind::SelfPlay,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }

    /// The name in exports and on the pages.
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignKind::Perft => "perft",
            CampaignKind::Analysis => "analysis",
            CampaignKind::SelfPlay => "selfplay",
        }
    }
}

impl std::fmt::Display for CampaignKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a row of a table (a workunit) stands: the `status` of the exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowStatus {
    /// Waiting for its quorum.
    Open,
    /// A canonical result.
    Valid,
    /// Failed without a quorum at the result cap.
    Failed,
    /// Validated once, reopened because a worker that helped validate it was caught lying; no
    /// value until it is validated again.
    Reverifying,
}

impl RowStatus {
    /// The name in exports and on the pages.
    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Open => "open",
            RowStatus::Valid => "valid",
            RowStatus::Failed => "failed",
            RowStatus::Reverifying => "reverifying",
        }
    }
}

impl std::fmt::Display for RowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a returned result was graded: the `outcome` of a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResultOutcome {
    /// Not graded yet.
    Pending,
    /// It agreed with the canonical result.
    Valid,
    /// It disagreed, or was voided.
    Invalid,
}

impl ResultOutcome {
    /// The name in JSON and on the pages.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultOutcome::Pending => "pending",
            ResultOutcome::Valid => "valid",
            ResultOutcome::Invalid => "invalid",
        }
    }
}

impl std::fmt::Display for ResultOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A campaign as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Campaign {
    /// Id.
    pub id: u64,
    /// Perft, analysis or self-play.
    pub kind: CampaignKind,
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
    /// The operator's name for it, if any.
    pub name: Option<String>,
    /// Scheduling priority: campaigns of higher priority are served first.
    pub priority: i64,
    /// Active, paused or cancelled.
    pub status: CampaignStatus,
    /// Self-play campaigns: games per start.
    pub games: Option<u32>,
    /// Self-play campaigns: nodes per engine move.
    pub move_nodes: Option<u64>,
    /// Why no connected worker may take its remaining replicas, while that lasts (a served
    /// coordinator records it: [`crate::work::stall`]).
    pub stall: Option<Stall>,
}

/// A campaign that no connected worker may take, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Stall {
    /// The rule that keeps the remaining replicas waiting.
    pub cause: c960_common::wait::WaitCause,
    /// How many replicas wait on it (of the workunits looked at).
    pub replicas: u64,
    /// Since when (the coordinator's clock, ms).
    pub since_ms: i64,
}

impl Stall {
    /// What waits, why, and what to do: the words every place prints.
    pub fn waiting(&self, campaign: u64) -> c960_common::wait::Waiting {
        c960_common::wait::Waiting {
            cause: self.cause,
            campaign: Some(campaign),
            replicas: self.replicas,
        }
    }
}

/// An operator's change to a campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CampaignChange {
    /// Set (or with `None` clear) its name.
    Name(Option<String>),
    /// Set its priority.
    Priority(i64),
    /// Pause, resume or cancel it.
    Status(CampaignAction),
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
    pub trust: TrustLevel,
    /// Secret checks passed (results the coordinator recomputed and found right).
    pub checks_passed: u64,
    /// Checks failed: a wrong answer to a known or secret check, or an implausibly fast one.
    pub checks_failed: u64,
    /// The build it runs (`0.2.0 (1a2b3c4d5e6f)`, [`c960_common::wire::WorkerBuild::label`]),
    /// as named by its latest registration or fetch; `None`: unknown (a worker before 0.2).
    pub build: Option<String>,
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
    /// Faster than [`crate::integrity::trust::plausible`] allows (an answer from the worker's own table, or
    /// made up): no evidence against the worker, but its workunit is checked by the coordinator.
    pub implausible: bool,
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
    /// Open, valid, failed or reverifying.
    pub status: RowStatus,
    /// Results that agree with the canonical one.
    pub agreeing_results: u32,
    /// Results returned so far, whatever the vote (an open row with one returned waits for a
    /// second replica). Shown on the page; not exported (the tables stay as they were).
    #[serde(skip)]
    pub returned: u32,
    /// Canonical digest (hex) once valid.
    pub digest: Option<String>,
    /// How a valid value was audited ([`crate::integrity::audit`]): `coordinator` (the coordinator
    /// computed it), `replica` (one more hidden replica for another worker agreed), `pending`
    /// (an audit waits), `unaudited` (drawn for an audit nobody could do), `none` (not drawn:
    /// the operator's own workers vouch for it, or audits are off); empty for a row not valid.
    pub audit: String,
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
    pub state: ReplicaState,
    /// `pending`, `valid` or `invalid`.
    pub outcome: ResultOutcome,
    /// Node count when returned.
    pub nodes: Option<u64>,
    /// Digest (hex) when returned.
    pub digest: Option<String>,
    /// The engine that computed it, as its worker named it (`c960-worker 0.2.0 zobrist …`:
    /// with the perft table's Zobrist seed since 0.2), when returned.
    pub engine: Option<String>,
    /// When its lease was issued (Unix ms, the coordinator's clock).
    pub issued_ms: i64,
    /// When it was returned (Unix ms, the coordinator's clock).
    pub returned_ms: Option<i64>,
    /// The wall time of the count as its worker reported it (milliseconds), when returned.
    pub elapsed_ms: Option<u64>,
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
    /// Workers that are BOINC hosts (`serve --boinc`).
    pub boinc_hosts: u64,
    /// Valid results of BOINC hosts.
    pub boinc_valid: u64,
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
    /// Why the coordinator computes it.
    pub purpose: CheckPurpose,
    /// For the audit of an analysis or self-play value: the engine id of its canonical result
    /// (a UCI engine's results compare only with the same build's).
    pub engine_id: Option<String>,
}

/// Why the coordinator computes a workunit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckPurpose {
    /// A check of an open workunit: contested, unanchored, secret, or an implausibly fast
    /// result. Its digest grades the results.
    Check,
    /// A validated value drawn for the re-split cross-check ([`crate::integrity::trust::picks_resplit`]):
    /// count its children one ply deeper, each on its own ([`crate::integrity::checker::resplit`]).
    Resplit,
    /// A validated value drawn for an audit ([`crate::integrity::audit`]): computed like a check; a
    /// digest that differs overturns the value.
    Audit,
}

impl CheckPurpose {
    /// As `checks_wanted`'s query codes it.
    pub fn from_code(code: i64) -> CheckPurpose {
        match code {
            1 => CheckPurpose::Resplit,
            2 => CheckPurpose::Audit,
            _ => CheckPurpose::Check,
        }
    }
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
    /// Validated values the coordinator audited ([`crate::integrity::audit`]).
    pub audits_run: u64,
    /// Of those, valid values the audit contradicted (reopened; their workers failed a check).
    /// An audit that lands on a value reopened meanwhile (a quarantine re-verifies it) is not
    /// one.
    pub audits_overturned: u64,
    /// Audits given to one more hidden replica for another worker (over the budget).
    pub audit_replicas: u64,
    /// Audits and re-splits waiting for the checker.
    pub audits_waiting: u64,
    /// Values drawn for an audit that nobody could do (exported as `unaudited`).
    pub unaudited: u64,
    /// Results returned for workunits that are valid now, per valid workunit (quorum plus the
    /// extra replicas that disagreement and trust cost).
    pub replicas_per_valid_workunit: f64,
    /// The nodes the coordinator counted itself (checks, audits, re-splits, dispute leaves)
    /// per node of the valid values (issue 54's target: at most 0.05).
    pub coordinator_node_share: f64,
    /// Spare-capacity re-verification replicas handed out (`--idle-reverify-upto`).
    pub spare_replicas: u64,
}

/// How much of one campaign's table rests on how many agreeing workers, and how much of it the
/// coordinator counted itself (issue 54, per campaign on `/api/v1/status` and its page).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CampaignTally {
    /// The campaign.
    pub campaign: u64,
    /// (agreeing workers, valid values with that many), ascending.
    pub values_by_agreeing: Vec<(u64, u64)>,
    /// Nodes the coordinator counted for its workunits (checks, audits, re-splits, dispute
    /// leaves).
    pub check_nodes: u64,
    /// Those per node of its valid values (issue 54's target: at most 0.05).
    pub coordinator_node_share: f64,
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

impl Settlement {
    /// The lease it answers.
    pub fn lease_id(&self) -> u64 {
        match self {
            Settlement::Store { lease_id, .. } | Settlement::Refuse { lease_id, .. } => *lease_id,
        }
    }
}

/// One row of an analysis campaign table (or, with `R` = [`c960_common::wire::SelfPlayResult`], of a self-play
/// campaign's, whose depth is 0).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AnalysisRow<R = AnalysisResult> {
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
    /// Open, valid or failed.
    pub status: RowStatus,
    /// Results that agree with the canonical one.
    pub agreeing_results: u32,
    /// The canonical result once valid.
    pub result: Option<R>,
}

/// A worker to register, as either front door describes it: the registration rules decide it
/// whole (`net/api/session.rs`), and the store writes it in one transaction — the enrolment
/// token spent, the row inserted with its trust, build and BOINC identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewWorker {
    /// The worker's name (a label; a BOINC host's domain name).
    pub name: String,
    /// SHA-256 of its key (a BOINC host's key is told to nobody: it authenticates by its
    /// account).
    pub key_hash: Vec<u8>,
    /// The engine label.
    pub engine: String,
    /// The build label shown in `worker list` and `/workers` (`c960-worker 0.2.0 …`,
    /// `BOINC 7.20.5`), when known.
    pub build: Option<String>,
    /// The address block it came from.
    pub block: Option<String>,
    /// The per-volunteer enrolment token it presented (id, SHA-256 of the secret), spent by the
    /// registration; `None` where enrolment is open or by the shared secret.
    pub token: Option<(u64, Vec<u8>)>,
    /// Its trust from the start: the operator's for the operator's own enrolled workers
    /// (`--trust-enrolled`), else none.
    pub trust: TrustLevel,
    /// A BOINC host's account and client installation.
    pub boinc: Option<BoincIdentity>,
}

impl NewWorker {
    /// An untrusted worker of this name, key and engine, of unknown address, with no token,
    /// build or BOINC identity.
    pub fn new(name: &str, key_hash: &[u8], engine: &str) -> NewWorker {
        NewWorker {
            name: name.into(),
            key_hash: key_hash.to_vec(),
            engine: engine.into(),
            build: None,
            block: None,
            token: None,
            trust: TrustLevel::Untrusted,
            boinc: None,
        }
    }
}

/// Who a BOINC host is ([`crate::net::boinc`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoincIdentity {
    /// SHA-256 of the account key.
    pub account_hash: [u8; 32],
    /// The client installation's id (BOINC's host CPID).
    pub host_cpid: String,
}

/// What a BOINC scheduler reply says of credit: valid nodes of the host and of its account.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BoincCredit {
    /// Valid nodes credited to the host.
    pub host_nodes: u128,
    /// When the host was registered.
    pub host_created_ms: i64,
    /// Valid nodes credited to every host of the account.
    pub account_nodes: u128,
    /// When the account's first host was registered.
    pub account_created_ms: i64,
}
