//! Persistence: the [`Store`] trait (the contract) and its backends.
//!
//! Every state change is one transaction that also runs the transitioner
//! ([`crate::work::transitioner::transition`]) on the workunits it touches, so the stored state is always
//! consistent: a coordinator killed at any moment restarts from the database alone. The trait is
//! synchronous on purpose — SQLite is a blocking library and the HTTP layer calls the store from
//! `spawn_blocking`.
//!
//! The records, states and error type it speaks are [`crate::model`]'s, one floor below.
//!
//! - [`codes`]: the integers the schema stores for kinds and states, shared by every backend.
//! - [`migrations`]: the numbered schema migrations, one `.sql` file per dialect each.
//! - [`db`]: the small database interface the logic is written against ([`db::Conn`],
//!   [`db::Backend`]).
//! - `sql/`: the logic of every [`Store`] method, written once; `Store` is implemented there
//!   for every [`db::Backend`].
//! - [`sqlite`]: [`SqliteStore`], the embedded default.
//! - [`postgres`]: [`PgStore`], for several coordinators on one database.
//! - [`backup`]: checked copies of a live SQLite store, and their restore.
//! - [`copy`]: moving a whole store to another backend (`migrate`).
//! - [`disk`]: a full disk, said once, and the leases it let lapse extended.

pub mod backup;
pub mod codes;
#[cfg(test)]
pub(crate) mod conformance;
pub mod copy;
pub mod db;
pub mod disk;
pub mod migrations;
pub mod postgres;
mod sql;
pub mod sqlite;

use c960_common::wire::{Capabilities, SelfPlayResult};

use crate::model::*;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// Opens the database `--db` names, creating it if missing: a `postgres://` URL is a
/// PostgreSQL database (its schema migrated on open), anything else a SQLite file. Errors name
/// the database, without a URL's password.
pub fn open(db: &std::path::Path) -> anyhow::Result<Box<dyn Store>> {
    use anyhow::Context;
    let text = db.to_string_lossy();
    if postgres::is_postgres_url(&text) {
        return Ok(Box::new(
            PgStore::open(&text).with_context(|| format!("cannot open database {}", shown(db)))?,
        ));
    }
    Ok(Box::new(SqliteStore::open(db).with_context(|| {
        format!("cannot open database {}", shown(db))
    })?))
}

/// The database `--db` names as logs and messages show it: a SQLite file's path, a PostgreSQL
/// URL without its password (logs are shipped and read by more people than the database's
/// owner).
pub fn shown(db: &std::path::Path) -> String {
    postgres::redact_url(&db.to_string_lossy())
}

use crate::integrity::trust::Integrity;
use crate::work::assembly::SplitUnit;
use crate::work::campaign::NewCampaign;

/// The persistent state of the coordinator. See the module documentation.
pub trait Store: Send + Sync {
    /// Creates a campaign with one workunit per start position.
    fn create_campaign(&self, c: &NewCampaign, now_ms: i64) -> StoreResult<Campaign>;
    /// A campaign, not cancelled, with exactly these parameters (name and priority aside), if
    /// one exists: `run` resumes it, `campaign add` warns of it.
    fn find_campaign(&self, c: &NewCampaign) -> StoreResult<Option<Campaign>>;
    /// All campaigns.
    fn campaigns(&self) -> StoreResult<Vec<Campaign>>;
    /// One campaign (`UnknownCampaign` if there is none).
    fn campaign(&self, campaign_id: u64) -> StoreResult<Campaign>;
    /// Renames, reprioritises, pauses, resumes or cancels a campaign, in one transaction; the
    /// status change follows [`crate::work::transitioner::apply_action`] (`CampaignCancelled` when it
    /// refuses). Returns the campaign as changed.
    fn update_campaign(&self, campaign_id: u64, change: &CampaignChange) -> StoreResult<Campaign>;
    /// Registers a worker as its registration decided it ([`NewWorker`]), in one transaction:
    /// its enrolment token checked and one of its registrations spent, the row inserted with
    /// its trust, build and BOINC identity. Returns its id.
    fn register(&self, worker: &NewWorker, now_ms: i64) -> StoreResult<u64>;
    /// Registers a plain worker (untrusted, address unknown); returns its id.
    fn register_worker(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        now_ms: i64,
    ) -> StoreResult<u64> {
        self.register(&NewWorker::new(name, key_hash, engine), now_ms)
    }
    /// Registers a plain worker that came from this address block (see
    /// [`crate::integrity::trust::address_block`]).
    fn register_worker_from(
        &self,
        name: &str,
        key_hash: &[u8],
        engine: &str,
        block: Option<&str>,
        now_ms: i64,
    ) -> StoreResult<u64> {
        let worker = NewWorker {
            block: block.map(str::to_string),
            ..NewWorker::new(name, key_hash, engine)
        };
        self.register(&worker, now_ms)
    }
    /// Grants (or withdraws) the operator's trust; returns the updated record.
    fn set_trust(&self, worker_id: u64, trusted: bool) -> StoreResult<WorkerRecord>;
    /// Records the build a worker runs ([`WorkerRecord::build`]; `None`: unknown).
    fn set_worker_build(&self, worker_id: u64, build: Option<&str>) -> StoreResult<()>;
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
    /// Up to `limit` disputes where the referee is to move ([`crate::integrity::referee`]),
    /// oldest first; challenges past their deadline are missed first.
    fn disputes_due(
        &self,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<crate::model::disputes::DisputeView>>;
    /// Writes the referee's move on a dispute: challenges to both sides, or the decision (its
    /// losers fail a check, and the quarantine rule and the transitioner follow).
    fn advance_dispute(
        &self,
        dispute_id: u64,
        advance: &crate::model::disputes::Advance,
        now_ms: i64,
    ) -> StoreResult<()>;
    /// Values waiting for an audit replica that no worker at work can take any more go to the
    /// coordinator's audit instead (`transition::release_stranded_audits`).
    fn release_stranded_audits(&self, now_ms: i64) -> StoreResult<()>;
    /// Agreements waiting for their workers' trust ([`crate::integrity::anchoring`]): those one
    /// of whose workers is trusted now are anchored, checks are asked for the untrusted workers
    /// whose trust check is due, and for agreements no other worker at work can audit.
    fn sweep_waiting_agreements(
        &self,
        now_ms: i64,
    ) -> StoreResult<crate::integrity::anchoring::Swept>;
    /// The open challenges of a worker as leases, handed out at every fetch until answered.
    fn challenge_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<Vec<Lease>>;
    /// What disputes have cost and found so far.
    fn dispute_cost(&self) -> StoreResult<crate::model::disputes::DisputeCost>;
    /// Per campaign: how many agreeing workers its valid values rest on, and the coordinator's
    /// share of its nodes (a grouped read over every valid result).
    fn campaign_tallies(&self) -> StoreResult<Vec<CampaignTally>>;
    /// Since when the database's disk has been full (the coordinator's clock, ms), if it was at
    /// the last write ([`disk`]).
    fn storage_full_since(&self) -> Option<i64>;
    /// An independent recomputation (the re-split cross-check) found `truth` for a workunit:
    /// it overturns an earlier check or canonical result that disagrees, withdrawing the
    /// evidence against workers that told the truth (see `store/sql/quarantine.rs`).
    fn overturn_check(&self, workunit_id: u64, truth: &[u8; 32], now_ms: i64) -> StoreResult<()>;
    /// Mints an enrolment token (the SHA-256 of its secret) for up to `cap` workers.
    fn mint_enrolment_token(
        &self,
        name: &str,
        cap: u64,
        secret_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<crate::integrity::enrolment::EnrolmentToken>;
    /// Revokes an enrolment token: it registers nobody more.
    fn revoke_enrolment_token(
        &self,
        id: u64,
        now_ms: i64,
    ) -> StoreResult<crate::integrity::enrolment::EnrolmentToken>;
    /// Every enrolment token.
    fn enrolment_tokens(&self) -> StoreResult<Vec<crate::integrity::enrolment::EnrolmentToken>>;
    /// Why enrolment token `id` with the secret whose SHA-256 this is would register nobody
    /// now (`None`: it would register one), spending nothing (the BOINC Manager's account
    /// lookup asks before it attaches).
    fn enrolment_token_refusal(
        &self,
        id: u64,
        secret_hash: &[u8],
    ) -> StoreResult<Option<c960_common::error_code::ErrorCode>>;
    /// BOINC: the worker that is this account's host, by host id, else by CPID.
    fn boinc_host(
        &self,
        account_hash: &[u8],
        hostid: u64,
        host_cpid: &str,
    ) -> StoreResult<Option<u64>>;
    /// BOINC: the credit a scheduler reply reports to a host of this account.
    fn boinc_credit(&self, worker_id: u64, account_hash: &[u8]) -> StoreResult<BoincCredit>;
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
    /// trust ([`crate::integrity::trust::lease_cap`]) and per address block, never gives an untrusted worker a
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
    /// Renews those of `lease_ids` that `worker_id` holds open (its heartbeat): each one's
    /// deadline moves to [`crate::integrity::trust::Integrity::lease_renewal_ms`] from now, never past the
    /// lease's whole life. Returns the ids renewed, ascending.
    fn renew_leases(&self, worker_id: u64, lease_ids: &[u64], now_ms: i64)
    -> StoreResult<Vec<u64>>;
    /// Why `worker_id` (asking with `accepts`, from `block`, under the coordinator's `lease_cap`)
    /// gets no work: its own lease caps, or per campaign in serving order the rule that keeps
    /// the remaining replicas from it ([`crate::work::stall::diagnose`], a few hundred workunits of a
    /// few campaigns at most). Empty when some replica may go to it or nothing is left.
    fn waiting_for(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        block: Option<&str>,
        lease_cap: u64,
        now_ms: i64,
    ) -> StoreResult<Vec<c960_common::wait::Waiting>>;
    /// How a worker's returned results stand: returned, validated, awaiting a quorum.
    fn worker_tally(&self, worker_id: u64) -> StoreResult<c960_common::wire::StandingResponse>;
    /// Records why a campaign is stalled, or with `None` that it no longer is.
    fn set_stall(&self, campaign_id: u64, stall: Option<Stall>) -> StoreResult<()>;
    /// Forgets every recorded stall (a coordinator starting: its own view is empty).
    fn clear_stalls(&self) -> StoreResult<()>;
    /// Expires leases past their deadline; returns how many.
    fn expire_leases(&self, now_ms: i64) -> StoreResult<u64>;
    /// Abandons every open lease (used by `run` at start: its previous workers are gone).
    fn release_all_leases(&self, now_ms: i64) -> StoreResult<u64>;
    /// Progress of every campaign.
    fn progress(&self) -> StoreResult<Vec<CampaignProgress>>;
    /// Progress of one campaign (`UnknownCampaign` if there is none), from its own counters.
    fn campaign_progress(&self, campaign_id: u64) -> StoreResult<CampaignProgress>;
    /// Worker counts.
    fn worker_summary(&self, now_ms: i64) -> StoreResult<WorkerSummary>;
    /// The table of a campaign, by start position.
    fn table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)>;
    /// The same rows streamed from one read snapshot without collecting them (a family's
    /// campaign has up to millions); `visit` returns false to stop. Returns the campaign.
    fn visit_table(
        &self,
        campaign_id: u64,
        visit: &mut dyn FnMut(TableRow) -> bool,
    ) -> StoreResult<Campaign>;
    /// The rows of a campaign's table whose start numbers (in its family) are in `numbers`, in
    /// table order: one page, at a cost that does not grow with the campaign.
    fn table_range(
        &self,
        campaign_id: u64,
        numbers: std::ops::RangeInclusive<u32>,
    ) -> StoreResult<Vec<TableRow>>;
    /// All results of a workunit.
    fn results(&self, workunit_id: u64) -> StoreResult<Vec<ResultRecord>>;
    /// Sets the quarantine threshold: refused (malformed) results (0: never); a failed check
    /// quarantines at once.
    fn set_max_strikes(&self, max_strikes: u64) -> StoreResult<()>;
    /// Leases this worker holds open (issued, not answered, deadline not passed).
    fn open_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<u64>;
    /// Bans a worker (and quarantines it: see `store/sql/quarantine.rs`) or lifts the ban (which
    /// also lifts the quarantine and forgives its strikes). Returns the updated record.
    fn set_banned(&self, worker_id: u64, banned: bool, now_ms: i64) -> StoreResult<WorkerRecord>;
    /// The table of an analysis campaign with the canonical result of each valid workunit.
    fn analysis_table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<AnalysisRow>)>;
    /// The table of a self-play campaign with the canonical games of each valid workunit.
    fn self_play_table(
        &self,
        campaign_id: u64,
    ) -> StoreResult<(Campaign, Vec<AnalysisRow<SelfPlayResult>>)>;
    /// The workunits of a split campaign, for [`crate::work::assembly::assemble`].
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
    /// The leaderboard (or the connected workers) with credit; see [`crate::model::standings`].
    fn standings(
        &self,
        q: &crate::model::standings::StandingsQuery,
    ) -> StoreResult<Vec<crate::model::standings::WorkerStanding>>;
    /// One worker's standing and its `limit` latest results; `None` for an unknown worker.
    fn worker_history(
        &self,
        worker_id: u64,
        recent_since_ms: i64,
        limit: u64,
    ) -> StoreResult<Option<crate::model::standings::WorkerHistory>>;
    /// Streams the split workunits of start positions `first_sp..=last_sp` only.
    fn visit_split_units_of(
        &self,
        campaign_id: u64,
        first_sp: u16,
        last_sp: u16,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<()>;
    /// Runs `f` in one write transaction of the backend (for [`copy`], which moves rows
    /// between backends it does not know).
    #[doc(hidden)]
    fn raw_tx(&self, f: &mut dyn FnMut(&dyn db::Conn) -> StoreResult<()>) -> StoreResult<()>;
    /// Runs `f` on the backend's export connection (one snapshot).
    #[doc(hidden)]
    fn raw_read(&self, f: &mut dyn FnMut(&dyn db::Conn) -> StoreResult<()>) -> StoreResult<()>;
}
