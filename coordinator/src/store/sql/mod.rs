//! The store's logic, written once against [`crate::store::db`] and run by every backend: the
//! [`Store`] trait is implemented here for every [`Backend`].
//!
//! - [`campaigns`]: campaigns, their workunits, progress and tables.
//! - [`roster`]: the workers' rows: registration, trust, integrity settings, checks, bans.
//! - [`boinc_hosts`]: BOINC hosts (the protocol: [`crate::net::boinc`]).
//! - [`enrolment_tokens`]: enrolment tokens (the rule: [`crate::integrity::enrolment`]).
//! - [`leases`]: assignment, results, refusals, expiry.
//! - [`transition`]: the transitioner and check grading inside a transaction.
//! - [`cascade`]: the transitioner and the quarantine rule together, until nothing follows.
//! - [`reopen`]: reopening a settled workunit for re-verification or an audit.
//! - [`probation_holdings`]: what workers on probation hold, for the probation rules.
//! - [`quarantine`]: voiding a caught worker's results and re-verifying what it validated (the quarantine's one home).
//! - [`reads`]: the public pages' read-only queries (see [`crate::model::standings`]).
//!
//! Where several coordinators share one PostgreSQL database the decisions lock the rows they
//! decide on ([`crate::store::db::Dialect`]): the worker's row when it is assigned work, the
//! workunits picked (`FOR UPDATE SKIP LOCKED`), a workunit's row before the transitioner
//! runs, a lease's row before it is answered.

mod assign;
mod at_work;
mod bisection;
mod boinc_hosts;
mod campaigns;
mod cascade;
mod enrolment_tokens;
mod leases;
mod probation_holdings;
mod quarantine;
mod reads;
mod reopen;
mod roster;
mod spare;
mod transition;
mod unanchored;
mod waiting;

pub(crate) use campaigns::SUMMED_COUNTS;
pub(super) use leases::extend_leases_lapsed_since;

use c960_common::wait::{WaitCause, Waiting};
use c960_common::wire::{Capabilities, SelfPlayResult};

use super::codes::{campaign_kind, campaign_status, trust_level, u64_to_db};
use super::db::{Backend, Conn, Dialect, Param, Row, params};
use super::{
    AnalysisRow, Campaign, CampaignChange, CampaignProgress, CampaignTally, CheckCost,
    CheckOutcome, CheckRequest, Lease, LeaseInfo, NewWorker, ResultRecord, Settlement, Store,
    StoreError, StoreResult, TableRow, WorkerRecord, WorkerSummary,
};
use crate::integrity::trust::Integrity;
use crate::work::assembly::SplitUnit;
use crate::work::campaign::NewCampaign;

/// The connection a piece of logic runs on (inside its transaction where it writes).
pub(crate) type Tx<'a> = &'a dyn Conn;

/// The columns [`worker_row`] reads.
const WORKER_COLS: &str = "id, name, key_hash, lost_votes, refused, valid, banned, quarantined_ms IS NOT NULL, trusted, checks_passed, checks_failed, build";

/// A [`WorkerRecord`] from a row of [`WORKER_COLS`].
fn worker_row(r: &Row) -> StoreResult<WorkerRecord> {
    Ok(WorkerRecord {
        id: r.u64(0)?,
        name: r.text(1)?,
        key_hash: r.blob(2)?,
        lost_votes: r.u64(3)?,
        refused: r.u64(4)?,
        valid: r.u64(5)?,
        banned: r.bool(6)?,
        quarantined: r.bool(7)?,
        trust: trust_level(r.i64(8)?),
        checks_passed: r.u64(9)?,
        checks_failed: r.u64(10)?,
        build: r.opt_text(11)?,
    })
}

/// A worker by id.
fn worker_in(tx: Tx, id: u64) -> StoreResult<Option<WorkerRecord>> {
    tx.query_opt(
        &format!("SELECT {WORKER_COLS} FROM workers WHERE id = ?1"),
        params![u64_to_db(id)],
    )?
    .as_ref()
    .map(worker_row)
    .transpose()
}

/// The columns [`campaign_row`] reads.
const CAMPAIGN_COLS: &str = "id, kind, depth, quorum, max_results, positions, engine, split_ply, family, name, priority, status, games, move_nodes, stall_cause, stall_replicas, stall_ms";

/// A [`Campaign`] from a row of [`CAMPAIGN_COLS`].
fn campaign_row(r: &Row) -> StoreResult<Campaign> {
    Ok(Campaign {
        id: r.u64(0)?,
        kind: campaign_kind(&r.text(1)?).map_err(StoreError::Db)?,
        depth: r.i64(2)? as u32,
        quorum: r.i64(3)? as u32,
        max_results: r.i64(4)? as u32,
        positions: r.text(5)?,
        engine: r.opt_text(6)?,
        split_ply: r.i64(7)? as u32,
        family: r.text(8)?,
        name: r.opt_text(9)?,
        priority: r.i64(10)?,
        status: campaign_status(r.i64(11)?),
        games: r.opt_i64(12)?.map(|n| n as u32),
        move_nodes: r.opt_i64(13)?.map(|n| n as u64),
        stall: match (
            r.opt_i64(14)?.and_then(WaitCause::from_code),
            r.opt_i64(15)?,
            r.opt_i64(16)?,
        ) {
            (Some(cause), Some(replicas), Some(since_ms)) => Some(super::Stall {
                cause,
                replicas: replicas.max(0) as u64,
                since_ms,
            }),
            _ => None,
        },
    })
}

/// The campaign `campaign_id`, or [`StoreError::UnknownCampaign`].
fn campaign_by_id(tx: Tx, campaign_id: u64) -> StoreResult<Campaign> {
    tx.query_opt(
        &format!("SELECT {CAMPAIGN_COLS} FROM campaigns WHERE id = ?1"),
        params![u64_to_db(campaign_id)],
    )?
    .as_ref()
    .map(campaign_row)
    .transpose()?
    .ok_or(StoreError::UnknownCampaign(campaign_id))
}

impl<B: Backend> Store for B {
    fn create_campaign(&self, c: &NewCampaign, now_ms: i64) -> StoreResult<Campaign> {
        campaigns::create_campaign(self, c, now_ms)
    }

    fn find_campaign(&self, c: &NewCampaign) -> StoreResult<Option<Campaign>> {
        campaigns::find_campaign(self, c)
    }

    fn campaign(&self, campaign_id: u64) -> StoreResult<Campaign> {
        self.with_conn(&mut |tx| campaign_by_id(tx, campaign_id))
    }

    fn update_campaign(&self, campaign_id: u64, change: &CampaignChange) -> StoreResult<Campaign> {
        campaigns::update_campaign(self, campaign_id, change)
    }

    fn campaigns(&self) -> StoreResult<Vec<Campaign>> {
        campaigns::campaigns(self)
    }

    fn register(&self, worker: &NewWorker, now_ms: i64) -> StoreResult<u64> {
        self.with_tx(&mut |tx| roster::register(tx, worker, now_ms))
    }

    fn set_trust(&self, worker_id: u64, trusted: bool) -> StoreResult<WorkerRecord> {
        roster::set_trust(self, worker_id, trusted)
    }

    fn set_worker_build(&self, worker_id: u64, build: Option<&str>) -> StoreResult<()> {
        roster::set_worker_build(self, worker_id, build)
    }

    fn set_integrity(&self, integrity: &Integrity) -> StoreResult<()> {
        roster::set_integrity(self, integrity)
    }

    fn checks_wanted(&self, limit: usize) -> StoreResult<Vec<CheckRequest>> {
        roster::checks_wanted(self, limit)
    }

    fn record_check(
        &self,
        workunit_id: u64,
        outcome: &CheckOutcome,
        now_ms: i64,
    ) -> StoreResult<()> {
        roster::record_check(self, workunit_id, outcome, now_ms)
    }

    fn check_cost(&self) -> StoreResult<CheckCost> {
        roster::check_cost(self)
    }

    fn disputes_due(
        &self,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<crate::model::disputes::DisputeView>> {
        self.with_tx(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            bisection::due(tx, limit, now_ms)
        })
    }

    fn advance_dispute(
        &self,
        dispute_id: u64,
        advance: &crate::model::disputes::Advance,
        now_ms: i64,
    ) -> StoreResult<()> {
        self.with_tx(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            deferring(tx, |tx| {
                match bisection::advance(tx, dispute_id, advance, now_ms)? {
                    Some((workunit, losers)) => cascade::convict(tx, workunit, &losers, now_ms),
                    None => Ok(()),
                }
            })
        })
    }

    fn release_stranded_audits(&self, now_ms: i64) -> StoreResult<()> {
        self.with_tx(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            deferring(tx, |tx| cascade::release_stranded_audits(tx, now_ms))
        })
    }

    fn sweep_waiting_agreements(
        &self,
        now_ms: i64,
    ) -> StoreResult<crate::integrity::anchoring::Swept> {
        self.with_tx(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            deferring(tx, |tx| cascade::sweep_unanchored(tx, now_ms))
        })
    }

    fn challenge_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<Vec<Lease>> {
        self.with_conn(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            bisection::leases_for(tx, worker_id, now_ms)
        })
    }

    fn dispute_cost(&self) -> StoreResult<crate::model::disputes::DisputeCost> {
        bisection::cost(self)
    }

    fn storage_full_since(&self) -> Option<i64> {
        Backend::storage_full_since(self)
    }

    fn campaign_tallies(&self) -> StoreResult<Vec<CampaignTally>> {
        roster::campaign_tallies(self)
    }

    fn overturn_check(&self, workunit_id: u64, truth: &[u8; 32], now_ms: i64) -> StoreResult<()> {
        self.with_tx(&mut |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            cascade::overturn(tx, workunit_id, truth, now_ms)
        })
    }

    fn boinc_host(
        &self,
        account_hash: &[u8],
        hostid: u64,
        host_cpid: &str,
    ) -> StoreResult<Option<u64>> {
        self.with_conn(&mut |tx| boinc_hosts::find(tx, account_hash, hostid, host_cpid))
    }

    fn boinc_credit(&self, worker_id: u64, account_hash: &[u8]) -> StoreResult<super::BoincCredit> {
        self.with_conn(&mut |tx| boinc_hosts::credit(tx, worker_id, account_hash))
    }

    fn mint_enrolment_token(
        &self,
        name: &str,
        cap: u64,
        secret_hash: &[u8],
        now_ms: i64,
    ) -> StoreResult<crate::integrity::enrolment::EnrolmentToken> {
        self.with_tx(&mut |tx| enrolment_tokens::mint(tx, name, cap, secret_hash, now_ms))
    }

    fn revoke_enrolment_token(
        &self,
        id: u64,
        now_ms: i64,
    ) -> StoreResult<crate::integrity::enrolment::EnrolmentToken> {
        self.with_tx(&mut |tx| enrolment_tokens::revoke(tx, id, now_ms))
    }

    fn enrolment_tokens(&self) -> StoreResult<Vec<crate::integrity::enrolment::EnrolmentToken>> {
        self.with_reader(&mut |tx| enrolment_tokens::list(tx))
    }

    fn enrolment_token_refusal(
        &self,
        id: u64,
        secret_hash: &[u8],
    ) -> StoreResult<Option<c960_common::error_code::ErrorCode>> {
        self.with_reader(&mut |tx| enrolment_tokens::refusal_of(tx, id, secret_hash))
    }

    fn worker(&self, id: u64) -> StoreResult<Option<WorkerRecord>> {
        roster::worker(self, id)
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
        assign::assign_from(
            self, worker_id, accepts, now_ms, lease_ms, max_units, lease_cap, block,
        )
    }

    fn leases(&self, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
        leases::leases(self, lease_ids)
    }

    fn workunit_exists(&self, workunit_id: u64) -> StoreResult<bool> {
        campaigns::workunit_exists(self, workunit_id)
    }

    fn settle(
        &self,
        worker_id: u64,
        settlements: &[Settlement],
        now_ms: i64,
    ) -> StoreResult<Vec<StoreResult<()>>> {
        leases::settle(self, worker_id, settlements, now_ms)
    }

    fn fail(&self, worker_id: u64, lease_id: u64, reason: &str, now_ms: i64) -> StoreResult<()> {
        leases::fail(self, worker_id, lease_id, reason, now_ms)
    }

    fn abandon(&self, worker_id: u64, lease_id: u64, now_ms: i64) -> StoreResult<()> {
        leases::abandon(self, worker_id, lease_id, now_ms)
    }

    fn expire_leases(&self, now_ms: i64) -> StoreResult<u64> {
        leases::expire_leases(self, now_ms)
    }

    fn renew_leases(
        &self,
        worker_id: u64,
        lease_ids: &[u64],
        now_ms: i64,
    ) -> StoreResult<Vec<u64>> {
        leases::renew_leases(self, worker_id, lease_ids, now_ms)
    }

    fn waiting_for(
        &self,
        worker_id: u64,
        accepts: &Capabilities,
        block: Option<&str>,
        lease_cap: u64,
        now_ms: i64,
    ) -> StoreResult<Vec<Waiting>> {
        waiting::waiting_for(self, worker_id, accepts, block, lease_cap, now_ms)
    }

    fn worker_tally(&self, worker_id: u64) -> StoreResult<c960_common::wire::StandingResponse> {
        waiting::worker_tally(self, worker_id)
    }

    fn set_stall(&self, campaign_id: u64, stall: Option<super::Stall>) -> StoreResult<()> {
        waiting::set_stall(self, campaign_id, stall)
    }

    fn clear_stalls(&self) -> StoreResult<()> {
        waiting::clear_stalls(self)
    }

    fn release_all_leases(&self, now_ms: i64) -> StoreResult<u64> {
        leases::release_all_leases(self, now_ms)
    }

    fn progress(&self) -> StoreResult<Vec<CampaignProgress>> {
        campaigns::progress(self)
    }

    fn campaign_progress(&self, campaign_id: u64) -> StoreResult<CampaignProgress> {
        self.with_reader(&mut |tx| campaigns::campaign_progress(tx, campaign_id))
    }

    fn worker_summary(&self, now_ms: i64) -> StoreResult<WorkerSummary> {
        roster::worker_summary(self, now_ms)
    }

    fn table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)> {
        campaigns::table(self, campaign_id)
    }

    fn visit_table(
        &self,
        campaign_id: u64,
        visit: &mut dyn FnMut(TableRow) -> bool,
    ) -> StoreResult<Campaign> {
        campaigns::visit_table(self, campaign_id, visit)
    }

    fn table_range(
        &self,
        campaign_id: u64,
        numbers: std::ops::RangeInclusive<u32>,
    ) -> StoreResult<Vec<TableRow>> {
        campaigns::table_range(self, campaign_id, numbers)
    }

    fn visit_split_units(
        &self,
        campaign_id: u64,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<Campaign> {
        campaigns::visit_split_units(self, campaign_id, visit)
    }

    fn analysis_table(&self, campaign_id: u64) -> StoreResult<(Campaign, Vec<AnalysisRow>)> {
        campaigns::payload_table(self, campaign_id)
    }

    fn self_play_table(
        &self,
        campaign_id: u64,
    ) -> StoreResult<(Campaign, Vec<AnalysisRow<SelfPlayResult>>)> {
        campaigns::payload_table(self, campaign_id)
    }

    fn results(&self, workunit_id: u64) -> StoreResult<Vec<ResultRecord>> {
        campaigns::results(self, workunit_id)
    }

    fn set_max_strikes(&self, max_strikes: u64) -> StoreResult<()> {
        roster::set_max_strikes(self, max_strikes)
    }

    fn open_leases(&self, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
        leases::open_leases(self, worker_id, now_ms)
    }

    fn set_banned(&self, worker_id: u64, banned: bool, now_ms: i64) -> StoreResult<WorkerRecord> {
        roster::set_banned(self, worker_id, banned, now_ms)
    }

    fn standings(
        &self,
        q: &crate::model::standings::StandingsQuery,
    ) -> StoreResult<Vec<crate::model::standings::WorkerStanding>> {
        roster::standings(self, q)
    }

    fn worker_history(
        &self,
        worker_id: u64,
        recent_since_ms: i64,
        limit: u64,
    ) -> StoreResult<Option<crate::model::standings::WorkerHistory>> {
        roster::worker_history(self, worker_id, recent_since_ms, limit)
    }

    fn visit_split_units_of(
        &self,
        campaign_id: u64,
        first_sp: u16,
        last_sp: u16,
        visit: &mut dyn FnMut(SplitUnit),
    ) -> StoreResult<()> {
        campaigns::visit_split_units_of(self, campaign_id, first_sp, last_sp, visit)
    }

    fn raw_tx(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<()>) -> StoreResult<()> {
        self.with_tx(f)
    }

    fn raw_read(&self, f: &mut dyn FnMut(&dyn Conn) -> StoreResult<()>) -> StoreResult<()> {
        self.with_reader(f)
    }
}

/// A transaction whose workers' vote counts are written at its end, in worker order
/// ([`Conn::count_vote`]). Settling a batch validates workunits whose other replicas belong to
/// other workers; counting their votes at once locked those workers' rows in the batch's order
/// for the rest of the transaction, so their own requests (which lock their rows first) waited
/// on it, and two such transactions deadlocked. The counts are the same; only when they are
/// written changes.
struct Deferring<'a> {
    inner: Tx<'a>,
    /// Worker → the votes (and the credit of the valid ones) to add.
    votes: std::cell::RefCell<std::collections::BTreeMap<u64, DeferredVotes>>,
}

impl Conn for Deferring<'_> {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    fn exec(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<u64> {
        self.inner.exec(sql, params)
    }

    fn query(&self, sql: &str, params: &[&dyn Param]) -> StoreResult<Vec<Row>> {
        self.inner.query(sql, params)
    }

    fn each(
        &self,
        sql: &str,
        params: &[&dyn Param],
        f: &mut dyn FnMut(Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        self.inner.each(sql, params, f)
    }

    fn now_ms(&self, caller_ms: i64) -> StoreResult<i64> {
        self.inner.now_ms(caller_ms)
    }

    fn count_vote(&self, worker_id: u64, good: bool, nodes: u64) -> StoreResult<()> {
        let mut votes = self.votes.borrow_mut();
        let v = votes.entry(worker_id).or_default();
        if good {
            let (hi, lo) = super::db::credit_halves(nodes);
            v.valid += 1;
            v.credit_hi += hi;
            v.credit_lo += lo;
        } else {
            v.lost += 1
        }
        Ok(())
    }

    fn flush_deferred(&self) -> StoreResult<()> {
        let votes = std::mem::take(&mut *self.votes.borrow_mut());
        for (worker, v) in votes {
            self.inner.exec(
                "UPDATE workers SET valid = valid + ?2, lost_votes = lost_votes + ?3, credit_results = credit_results + ?2,
                   credit_nodes_hi = credit_nodes_hi + ?4, credit_nodes_lo = credit_nodes_lo + ?5 WHERE id = ?1",
                params![u64_to_db(worker), v.valid, v.lost, v.credit_hi, v.credit_lo],
            )?;
        }
        Ok(())
    }
}

/// A worker's votes deferred to the end of a transaction.
#[derive(Default)]
struct DeferredVotes {
    valid: i64,
    lost: i64,
    /// The credit the valid votes add (node counts in 32-bit halves).
    credit_hi: i64,
    credit_lo: i64,
}

/// The integrity settings stored by [`crate::store::Store::set_integrity`] (defaults where
/// unset).
pub(super) fn integrity_in(tx: Tx) -> StoreResult<Integrity> {
    let pairs = tx
        .query("SELECT key, value FROM settings", params![])?
        .iter()
        .map(|r| Ok((r.text(0)?, r.u64(1)?)))
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(Integrity::from_settings(
        pairs.iter().map(|(k, v)| (k.as_str(), *v)),
    ))
}

/// Adds `by` to a counter in the settings table (the cost of checking, for the status page).
pub(super) fn bump_setting(tx: Tx, key: &str, by: u64) -> StoreResult<()> {
    tx.exec(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = settings.value + excluded.value",
        params![key, u64_to_db(by)],
    )?;
    Ok(())
}

/// The settings key of a campaign's own count of the coordinator's nodes.
pub(super) fn campaign_check_nodes_key(campaign: u64) -> String {
    format!("check_nodes.campaign.{campaign}")
}

/// Adds the nodes the coordinator counted for a workunit to its total and its campaign's.
pub(super) fn bump_check_nodes(tx: Tx, workunit_id: u64, nodes: u64) -> StoreResult<()> {
    bump_setting(tx, "check_nodes", nodes)?;
    if let Some(r) = tx.query_opt(
        "SELECT campaign_id FROM workunits WHERE id = ?1",
        params![u64_to_db(workunit_id)],
    )? {
        bump_setting(tx, &campaign_check_nodes_key(r.u64(0)?), nodes)?;
    }
    Ok(())
}

/// Runs `f` in `tx` with the workers' vote counts deferred to its end ([`Deferring`]).
pub(super) fn deferring<T>(tx: Tx, f: impl FnOnce(Tx) -> StoreResult<T>) -> StoreResult<T> {
    let d = Deferring {
        inner: tx,
        votes: Default::default(),
    };
    let out = f(&d)?;
    d.flush_deferred()?;
    Ok(out)
}
