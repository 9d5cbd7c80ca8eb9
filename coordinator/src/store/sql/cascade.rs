//! Settling inside a transaction: the transitioner, then the quarantine rule for every worker
//! that failed a check, then the transitioner again on what a quarantine reopened, until nothing
//! follows. The transitioner ([`super::transition`]) and the quarantine ([`super::quarantine`])
//! each return what must follow instead of calling each other; this module, above both, runs
//! the follow-ups depth first, in the order each step produced them (as the nested calls did
//! before they were separated). Writers outside the two modules call these functions.

use std::collections::BTreeMap;

use super::Tx;
use super::quarantine::{self, Followup};
use super::transition::{self, Decided, Failed};
use crate::model::StoreResult;
use crate::work::transitioner::ReplicaView;

/// Runs `steps` and everything that follows from them, depth first.
fn run(tx: Tx, steps: Vec<Followup>, now_ms: i64) -> StoreResult<()> {
    let mut stack: Vec<Followup> = steps.into_iter().rev().collect();
    while let Some(step) = stack.pop() {
        let then = match step {
            Followup::Retransition(wu) => checks(transition::retransition(tx, wu, now_ms)?),
            Followup::Restore(worker) => quarantine::restore(tx, worker)?,
            Followup::Check(worker) => quarantine::check(tx, worker, now_ms)?,
        };
        stack.extend(then.into_iter().rev());
    }
    Ok(())
}

/// The quarantine rule for each worker that failed a check.
fn checks(failed: Failed) -> Vec<Followup> {
    failed.into_iter().map(Followup::Check).collect()
}

/// The transitioner on one workunit, and what follows.
pub(super) fn retransition(tx: Tx, workunit_id: u64, now_ms: i64) -> StoreResult<()> {
    run(tx, vec![Followup::Retransition(workunit_id)], now_ms)
}

/// The transitioner on a batch ([`transition::retransition_many`]), and what follows.
pub(super) fn retransition_many(tx: Tx, workunits: &[u64], now_ms: i64) -> StoreResult<()> {
    let failed = transition::retransition_many(tx, workunits, now_ms)?;
    run(tx, checks(failed), now_ms)
}

/// [`transition::retransition_known`], and what follows.
pub(super) fn retransition_known(
    tx: Tx,
    workunits: &[u64],
    known: Option<BTreeMap<u64, Vec<ReplicaView>>>,
    now_ms: i64,
) -> StoreResult<()> {
    let failed = transition::retransition_known(tx, workunits, known, now_ms)?;
    run(tx, checks(failed), now_ms)
}

/// Writes what [`transition::decide_many`] decided, and what follows.
pub(super) fn write_decided(tx: Tx, decided: Decided, now_ms: i64) -> StoreResult<()> {
    let failed = transition::write_decided(tx, decided, now_ms)?;
    run(tx, checks(failed), now_ms)
}

/// Expires the leases past their deadline ([`transition::expire`]); returns how many.
pub(super) fn expire(tx: Tx, now_ms: i64) -> StoreResult<u64> {
    let (n, failed) = transition::expire(tx, now_ms)?;
    run(tx, checks(failed), now_ms)?;
    Ok(n)
}

/// The quarantine rule for a worker that just failed a check or had a result refused.
pub(super) fn check(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    run(tx, vec![Followup::Check(worker_id)], now_ms)
}

/// Quarantines a worker now ([`quarantine::quarantine`]), and what follows.
pub(super) fn quarantine(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let then = quarantine::quarantine(tx, worker_id, now_ms)?;
    run(tx, then, now_ms)
}

/// An independent recomputation's truth for a workunit ([`quarantine::overturn`]), and what
/// follows.
pub(super) fn overturn(tx: Tx, workunit_id: u64, truth: &[u8; 32], now_ms: i64) -> StoreResult<()> {
    let then = quarantine::overturn(tx, workunit_id, truth)?;
    run(tx, then, now_ms)
}

/// A check of `workunit_id` came back over the coordinator's budget: if its start's values miss
/// their published total, what nothing will prove is recounted now
/// ([`transition::check_split_totals`], which left it alone while the check was queued).
pub(super) fn recount_if_total_missed(tx: Tx, workunit_id: u64, now_ms: i64) -> StoreResult<()> {
    let failed = transition::check_split_totals(tx, &[workunit_id], now_ms)?;
    run(tx, checks(failed), now_ms)
}

/// The workers a dispute proved wrong ([`super::bisection::advance`]) fail a check, exactly as
/// a failed audit: trust gone, the quarantine rule applied; then the transitioner on the
/// disputed workunit.
pub(super) fn convict(tx: Tx, workunit_id: u64, losers: &[u64], now_ms: i64) -> StoreResult<()> {
    let mut steps = Vec::new();
    for &worker in losers {
        transition::fail_check(tx, worker)?;
        steps.push(Followup::Check(worker));
    }
    steps.push(Followup::Retransition(workunit_id));
    run(tx, steps, now_ms)
}

/// [`super::unanchored::sweep`], each anchored agreement's verdict followed through.
pub(super) fn sweep_unanchored(
    tx: Tx,
    now_ms: i64,
) -> StoreResult<crate::integrity::anchoring::Swept> {
    super::unanchored::sweep(tx, now_ms, |tx, workunits| {
        retransition_many(tx, workunits, now_ms)
    })
}

/// [`transition::release_stranded_audits`], and what follows.
pub(super) fn release_stranded_audits(tx: Tx, now_ms: i64) -> StoreResult<()> {
    let failed = transition::release_stranded_audits(tx, now_ms)?;
    run(tx, checks(failed), now_ms)
}
