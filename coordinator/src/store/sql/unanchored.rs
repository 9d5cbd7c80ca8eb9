//! Agreements nothing anchors ([`crate::integrity::anchoring`]) in the store: whether the
//! transitioner has one checked at once, and the sweep of those waiting for their workers'
//! trust, which anchors them once one of their workers is trusted, asks for the checks that grow
//! an untrusted worker's trust while it has nothing to submit, and hands them to the
//! coordinator's check when no other worker is at work any more.

use std::collections::{BTreeMap, BTreeSet};

use super::Tx;
use super::at_work::workers_at_work;
use super::integrity_in;
use crate::integrity::anchoring::{self, Swept};
use crate::integrity::trust::Integrity;
use crate::model::ReplicaState;
use crate::model::StoreResult;
use crate::store::codes::{
    CHECK_NONE, CHECK_WANTED, KIND_PERFT, REPLICA_RETURNED, TRUST_UNTRUSTED, WORKUNIT_OPEN,
    trust_level,
};
use crate::store::db::Batch;
use crate::work::transitioner::ReplicaView;

/// Waiting workunits one sweep looks at, oldest first.
const SWEEP_ROWS: u64 = 256;

/// One sweep: at most [`SWEEP_ROWS`] waiting workunits anchored (`retransition`: the
/// transitioner with what follows, [`super::cascade::sweep_unanchored`]), and as many looked at
/// for the checks to ask.
pub(super) fn sweep(
    tx: Tx,
    now_ms: i64,
    retransition: impl Fn(Tx, &[u64]) -> StoreResult<()>,
) -> StoreResult<Swept> {
    let integrity = integrity_in(tx)?;
    if !anchoring::waits_for_trust(&integrity) {
        return Ok(Swept::default());
    }
    // Anchored now: a trusted worker's result agrees with another's (the transitioner decides
    // the quorum; a trusted worker alone against the others is a contest, not an anchor).
    let anchored: Vec<u64> = tx
        .query(
            &format!(
                "SELECT DISTINCT u.id FROM workunits u
                 JOIN results r ON r.workunit_id = u.id AND r.state = {REPLICA_RETURNED}
                 JOIN workers o ON o.id = r.worker_id AND o.trusted != {TRUST_UNTRUSTED}
                 WHERE u.state = {WORKUNIT_OPEN} AND u.trusted_only = 1 AND u.kind = {KIND_PERFT}
                   AND EXISTS (SELECT 1 FROM results a WHERE a.workunit_id = u.id AND a.worker_id != r.worker_id
                               AND a.state = {REPLICA_RETURNED} AND a.digest = r.digest)
                 ORDER BY u.id LIMIT {SWEEP_ROWS}"
            ),
            &[],
        )?
        .iter()
        .map(|r| r.u64(0))
        .collect::<StoreResult<_>>()?;
    let mut settled = 0;
    if !anchored.is_empty() {
        retransition(tx, &anchored)?;
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&anchored);
        let waiting = tx
            .query_one(
                &format!(
                    "SELECT COUNT(*) FROM workunits WHERE id {in_ids} AND state = {WORKUNIT_OPEN} AND trusted_only = 1"
                ),
                &b.params(),
            )?
            .u64(0)?;
        settled = anchored.len() as u64 - waiting;
    }
    // The untrusted workers of the oldest waiting agreements nothing of the coordinator's is
    // coming for.
    let rows = tx.query(
        &format!(
            "SELECT u.id, r.worker_id, o.trust_check_asked_ms, o.trusted FROM workunits u
             JOIN results r ON r.workunit_id = u.id AND r.state = {REPLICA_RETURNED}
             JOIN workers o ON o.id = r.worker_id
             WHERE u.state = {WORKUNIT_OPEN} AND u.trusted_only = 1 AND u.kind = {KIND_PERFT}
               AND u.check_state = {CHECK_NONE} AND u.verified_digest IS NULL
             ORDER BY u.id LIMIT {}",
            SWEEP_ROWS * 4
        ),
        &[],
    )?;
    let mut agreeing: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut standing: BTreeMap<u64, (Option<i64>, bool)> = BTreeMap::new();
    for r in &rows {
        let (wu, worker) = (r.u64(0)?, r.u64(1)?);
        agreeing.entry(wu).or_default().insert(worker);
        let trusted = trust_level(r.i64(3)?).is_trusted();
        standing.insert(worker, (r.opt_i64(2)?, trusted));
    }
    let at_work = if agreeing.is_empty() {
        0
    } else {
        workers_at_work(tx, now_ms)?
    };
    let mut ask = BTreeSet::new();
    let mut due_workers = Vec::new();
    for (&wu, workers) in &agreeing {
        // No other worker at work: nobody but the coordinator can settle it.
        if at_work <= workers.len() as u64 {
            ask.insert(wu);
            continue;
        }
        for w in workers {
            let (asked, trusted) = standing.get(w).copied().unwrap_or((None, false));
            if !due_workers.contains(w)
                && anchoring::trust_check_due(trusted, asked, now_ms, &integrity)
            {
                due_workers.push(*w);
                ask.insert(wu);
            }
        }
    }
    let ask: Vec<u64> = ask.into_iter().collect();
    let mut asked = 0;
    if !ask.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&ask);
        asked = tx.exec(
            &format!(
                "UPDATE workunits SET check_state = {CHECK_WANTED} WHERE id {in_ids} AND check_state = {CHECK_NONE}"
            ),
            &b.params(),
        )?;
    }
    if !due_workers.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let now = b.param(now_ms);
        let in_ids = b.in_ids(&due_workers);
        tx.exec(
            &format!("UPDATE workers SET trust_check_asked_ms = {now} WHERE id {in_ids}"),
            &b.params(),
        )?;
    }
    Ok(Swept {
        anchored: settled,
        asked,
    })
}

/// Whether the coordinator checks an agreement nothing anchors at once
/// ([`anchoring::checked_at_once`]: its sample, or no other worker at work than the agreeing
/// ones), reading the settings and the workers at work once per batch.
pub(super) fn checked_at_once(
    tx: Tx,
    reps: &[ReplicaView],
    integrity: &mut Option<Integrity>,
    at_work: &mut Option<u64>,
    now_ms: i64,
) -> StoreResult<bool> {
    if integrity.is_none() {
        *integrity = Some(integrity_in(tx)?);
    }
    let integrity = integrity.as_ref().expect("just read");
    if !anchoring::waits_for_trust(integrity) {
        return Ok(true);
    }
    if at_work.is_none() {
        *at_work = Some(workers_at_work(tx, now_ms)?);
    }
    let agreeing = reps
        .iter()
        .filter(|r| r.state == ReplicaState::Returned && r.digest.is_some())
        .map(|r| r.worker_id)
        .collect::<std::collections::BTreeSet<u64>>()
        .len() as u64;
    let crowd = at_work.expect("just read") > agreeing;
    let draw = rand::random::<u64>() % 1_000_000;
    Ok(anchoring::checked_at_once(crowd, draw, integrity))
}
