//! The coordinator's own checks: it computes workunits itself, within a node budget, on one
//! background thread (never on the async threads, never inside a store transaction). The store
//! asks for a check when a workunit is contested (digests disagree), when a quorum agrees on a
//! value nothing anchors, and at random for a share of results (secret checks, far more often
//! for untrusted workers). The checked workunits are real workunits of the campaign, so a worker
//! cannot tell them from the others.
//!
//! It also runs the **re-split cross-check**: a share of validated values (whoever validated
//! them, trusted workers too) is split one ply deeper and each child counted on its own with the
//! plain perft (no hash table: another path than the workers' and the checks' hashed engine).
//! The children's counts are the divide and their sum the total, so the recount has a digest
//! like any result; a mismatch overturns the value (`quarantine::overturn`).
//!
//! And it plays the **referee** of disputes ([`referee_move`], [`crate::integrity::referee`]):
//! where two results disagree and the workunit is over the budget, it descends the tree by the
//! sides' answers and counts the first differing subtree that fits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use c960_common::digest::result_digest;
use c960_common::perft::{PerftEngine, PerftOptions};
use c960_common::wire::{AnalysisEngine, PerftResult, PositionSpec, WorkResult, WorkUnitKind};
use c960_common::{Position, StartPosition};
use c960_compute::compute::UciSlot;
use c960_compute::uci_engine::UciCommand;

use crate::clock::now_ms;
use crate::integrity::referee;
use crate::model::disputes::{Advance, DisputeView};
use crate::model::{CheckOutcome, CheckPurpose, CheckRequest};
use crate::store::Store;
use crate::work::sizing::perft_estimate as estimate;

/// The operator's budget for checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckBudget {
    /// The largest workunit (estimated perft nodes) the coordinator computes itself; larger
    /// ones are left to trusted workers. 0 turns checking off.
    pub max_nodes: u64,
    /// Hash table of the checker's perft engine, MiB.
    pub hash_mib: usize,
    /// The deepest built-in analysis the coordinator searches itself (0: none).
    pub max_analysis_depth: u32,
    /// The largest self-play workunit the coordinator plays itself, in engine nodes (games ×
    /// move cap × nodes per move; 0: none).
    pub max_self_play_nodes: u64,
}

impl Default for CheckBudget {
    fn default() -> Self {
        CheckBudget {
            max_nodes: 500_000_000,
            hash_mib: 64,
            max_analysis_depth: 8,
            max_self_play_nodes: 200_000_000,
        }
    }
}

/// A running checker thread; dropping it stops the thread after its current check.
pub struct Checker {
    stop: Arc<AtomicBool>,
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How often the checker looks for audit replicas nobody at work can take any more.
const STRANDED_SWEEP: Duration = Duration::from_secs(5);

/// How often lapsed leases are expired when no fetch or heartbeat has done it (the counts that
/// the status and the pages read, which only read, stay this fresh while no worker asks), and
/// agreements waiting for trust are swept ([`crate::integrity::anchoring`]).
const LEASE_SWEEP: Duration = Duration::from_secs(2);

/// At most this many sweeps of waiting agreements in a row, while each settles some.
const WAITING_SWEEPS: usize = 64;

/// How long one search of the coordinator's UCI engine may take before it is killed.
const UCI_TIMEOUT: Duration = Duration::from_secs(600);

/// The checker's Zobrist seed: not the workers' default, so a hash collision in a worker's table
/// and one in the checker's are independent.
const CHECK_SEED: u64 = 0x6339_3630_6368_6b31;

fn position(kind: &WorkUnitKind) -> Option<(Position, u32)> {
    let WorkUnitKind::Perft { position, depth } = kind else {
        return None;
    };
    let pos = match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n)).ok()?.position(),
        PositionSpec::Fen(fen) => Position::from_fen(fen).ok()?,
    };
    Some((pos, *depth))
}

/// The re-split recount of `pos` at `depth`: each child one ply deeper counted on its own with
/// the plain perft; the children's counts in move order are the divide, their sum the total.
pub fn resplit(pos: &Position, depth: u32) -> PerftResult {
    if depth == 0 {
        return PerftResult {
            nodes: 1,
            divide: Vec::new(),
        };
    }
    let moves = pos.legal_moves();
    let divide: Vec<(String, u64)> = moves
        .as_slice()
        .iter()
        .map(|&m| (m.to_string(), c960_common::perft(&pos.play(m), depth - 1)))
        .collect();
    PerftResult {
        nodes: divide.iter().map(|(_, n)| n).sum(),
        divide,
    }
}

/// Whether the coordinator can compute an analysis or self-play workunit within its budget:
/// a built-in analysis up to [`CheckBudget::max_analysis_depth`], games up to
/// [`CheckBudget::max_self_play_nodes`], a UCI engine's only when it runs one itself.
fn affordable(kind: &WorkUnitKind, budget: &CheckBudget, has_uci: bool) -> bool {
    match kind {
        WorkUnitKind::Perft { .. } => false,
        WorkUnitKind::Analysis { depth, engine, .. } => {
            *depth <= budget.max_analysis_depth && (*engine == AnalysisEngine::Builtin || has_uci)
        }
        WorkUnitKind::SelfPlay {
            games,
            nodes,
            max_plies,
            engine,
            ..
        } => {
            let cost = u128::from(*games) * u128::from(*max_plies) * u128::from(*nodes);
            cost <= u128::from(budget.max_self_play_nodes)
                && (*engine == AnalysisEngine::Builtin || has_uci)
        }
    }
}

/// An analysis or self-play workunit computed by the coordinator, as a worker would (the
/// built-in searcher with a fresh table, or the coordinator's own UCI engine: `serve --uci`).
/// A UCI engine's result is compared only when the coordinator's engine is the very build of the
/// value's (`req.engine_id`): any other build answers differently, so that is no audit.
fn check_other(
    engine: &PerftEngine,
    uci: Option<&mut UciSlot>,
    req: &CheckRequest,
    budget: &CheckBudget,
) -> CheckOutcome {
    if !affordable(&req.kind, budget, uci.is_some()) {
        return CheckOutcome::OverBudget;
    }
    let cancel = AtomicBool::new(false);
    let r = match c960_compute::compute::compute_any(&req.kind, &cancel, engine, uci, |_, _, _| {})
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(workunit = req.workunit_id, "checker: {e}");
            return CheckOutcome::OverBudget;
        }
    };
    let id = match &r {
        WorkResult::Analysis(a) => Some(&a.engine_id),
        WorkResult::SelfPlay(g) => Some(&g.engine_id),
        WorkResult::Perft(_) => None,
    };
    let uci_kind = matches!(
        req.kind,
        WorkUnitKind::Analysis {
            engine: AnalysisEngine::Uci,
            ..
        } | WorkUnitKind::SelfPlay {
            engine: AnalysisEngine::Uci,
            ..
        }
    );
    if uci_kind && req.engine_id.as_ref() != id {
        return CheckOutcome::OverBudget;
    }
    CheckOutcome::Verified {
        digest: result_digest(req.workunit_id, &req.kind, &r),
        nodes: r.nodes(),
    }
}

/// Decides one check: computes the workunit (or re-splits it) if it fits the budget. `uci` is
/// the coordinator's own UCI engine, if it runs one (`serve --uci`).
pub fn run_check(
    engine: &PerftEngine,
    uci: Option<&mut UciSlot>,
    req: &CheckRequest,
    budget: &CheckBudget,
) -> CheckOutcome {
    if !matches!(req.kind, WorkUnitKind::Perft { .. }) {
        return check_other(engine, uci, req, budget);
    }
    let Some((pos, depth)) = position(&req.kind) else {
        return CheckOutcome::OverBudget;
    };
    if budget.max_nodes == 0 || estimate(&pos, depth) > u128::from(budget.max_nodes) {
        return CheckOutcome::OverBudget;
    }
    if req.purpose == CheckPurpose::Resplit {
        let r = resplit(&pos, depth);
        let nodes = r.nodes;
        return CheckOutcome::Verified {
            digest: result_digest(req.workunit_id, &req.kind, &WorkResult::Perft(r)),
            nodes,
        };
    }
    let cancel = AtomicBool::new(false);
    match c960_compute::compute::compute_with(engine, &req.kind, &cancel, |_, _, _| {}) {
        Ok(r) => {
            let nodes = r.nodes;
            CheckOutcome::Verified {
                digest: result_digest(req.workunit_id, &req.kind, &WorkResult::Perft(r)),
                nodes,
            }
        }
        Err(_) => CheckOutcome::OverBudget,
    }
}

/// The leaf the referee counts itself with checking off (`--check-max-nodes 0`): a million
/// nodes (milliseconds), so that a dispute ends all the same.
const LEAF_FLOOR: u64 = 1_000_000;

/// The referee's move on a dispute within the coordinator's budget
/// ([`referee::next_move`]).
pub fn referee_move(
    engine: &PerftEngine,
    d: &DisputeView,
    budget: &CheckBudget,
) -> Option<Advance> {
    let leaf = if budget.max_nodes == 0 {
        LEAF_FLOOR
    } else {
        budget.max_nodes
    };
    referee::next_move(engine, d, leaf)
}

/// How long the checker waits when its counts cannot be recorded for a full disk.
const DISK_FULL_PAUSE: Duration = Duration::from_secs(5);

/// Logs a store error of the checker's thread at ERROR, except a full disk, which the store
/// says once ([`crate::store::disk`]); returns whether it was a full disk.
fn logged(what: &str, e: &crate::model::StoreError) -> bool {
    if e.is_storage_full() {
        tracing::debug!("{what}: {e}");
        true
    } else {
        tracing::error!("{what}: {e}");
        false
    }
}

/// The referee's moves on the disputes due; returns how many it made.
fn referee_disputes(store: &dyn Store, engine: &PerftEngine, budget: &CheckBudget) -> usize {
    let due = match store.disputes_due(8, now_ms()) {
        Ok(due) => due,
        Err(e) => {
            logged("referee", &e);
            return 0;
        }
    };
    let mut moved = 0;
    for d in due {
        if let Some(advance) = referee_move(engine, &d, budget) {
            moved += 1;
            if let Err(e) = store.advance_dispute(d.id, &advance, now_ms()) {
                logged(&format!("referee (dispute {})", d.id), &e);
            }
        }
    }
    moved
}

/// Starts the checker thread over `store`, with the coordinator's own UCI engine if it runs one.
pub fn spawn(store: Arc<dyn Store>, budget: CheckBudget, uci: Option<UciCommand>) -> Checker {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let store_for_sweep = store.clone();
    let spawned = std::thread::Builder::new()
        .name("c960-checker".into())
        .spawn(move || {
            let engine = PerftEngine::new(PerftOptions {
                threads: 1,
                hash_mib: budget.hash_mib,
                seed: CHECK_SEED,
            });
            let mut uci = uci.map(|c| UciSlot::new(c, UCI_TIMEOUT));
            let mut swept = std::time::Instant::now();
            while !flag.load(Ordering::Relaxed) {
                if swept.elapsed() >= STRANDED_SWEEP {
                    swept = std::time::Instant::now();
                    if let Err(e) = store.release_stranded_audits(now_ms()) {
                        logged("checker", &e);
                    }
                }
                let wanted = match store.checks_wanted(16) {
                    Ok(w) => w,
                    Err(e) => {
                        logged("checker", &e);
                        Vec::new()
                    }
                };
                let refereed = referee_disputes(store.as_ref(), &engine, &budget);
                if wanted.is_empty() {
                    if refereed == 0 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    continue;
                }
                for req in wanted {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let outcome = run_check(&engine, uci.as_mut(), &req, &budget);
                    if let Err(e) = store.record_check(req.workunit_id, &outcome, now_ms())
                        && logged(&format!("checker (workunit {})", req.workunit_id), &e)
                    {
                        // Nothing it counts can be recorded until the disk has space again.
                        std::thread::sleep(DISK_FULL_PAUSE);
                        break;
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the checker thread: {e}");
    }
    spawn_lease_sweep(store_for_sweep, stop.clone());
    Checker { stop }
}

/// Expires lapsed leases every [`LEASE_SWEEP`] on a thread of its own (the checker's may be in a
/// long count), until `stop`.
fn spawn_lease_sweep(store: Arc<dyn Store>, stop: Arc<AtomicBool>) {
    let spawned = std::thread::Builder::new()
        .name("c960-lease-sweep".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(LEASE_SWEEP);
                if let Err(e) = store.expire_leases(now_ms()) {
                    logged("lease sweep", &e);
                }
                // Agreements waiting for their workers' trust: anchored as soon as one is
                // trusted (a sweep at a time, so that the writer is never held long), the
                // trust checks asked while their workers have nothing more to submit.
                for _ in 0..WAITING_SWEEPS {
                    match store.sweep_waiting_agreements(now_ms()) {
                        Ok(swept) if swept.anchored > 0 && !stop.load(Ordering::Relaxed) => {}
                        Ok(_) => break,
                        Err(e) => {
                            logged("waiting agreements", &e);
                            break;
                        }
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the lease sweep thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_generous_and_checks_respect_the_budget() {
        let pos = StartPosition::new(518).unwrap().position();
        assert_eq!(estimate(&pos, 2), 400);
        let est = estimate(&pos, 5);
        assert!((4_865_609..4_865_609 * 10).contains(&est), "{est}");
        let engine = PerftEngine::new(PerftOptions::default());
        let req = CheckRequest {
            workunit_id: 7,
            kind: WorkUnitKind::Perft {
                position: PositionSpec::StartPosition(518),
                depth: 3,
            },
            purpose: CheckPurpose::Check,
            engine_id: None,
        };
        let small = CheckBudget {
            max_nodes: 1000,
            hash_mib: 0,
            ..CheckBudget::default()
        };
        assert_eq!(
            run_check(&engine, None, &req, &small),
            CheckOutcome::OverBudget
        );
        let CheckOutcome::Verified { nodes, digest } =
            run_check(&engine, None, &req, &CheckBudget::default())
        else {
            panic!("not checked")
        };
        assert_eq!(nodes, 8902);
        let truth =
            c960_compute::compute::compute(&req.kind, &AtomicBool::new(false), |_, _, _| {})
                .unwrap();
        assert_eq!(
            digest,
            result_digest(7, &req.kind, &WorkResult::Perft(truth))
        );
        // The re-split recount (children one ply deeper, no hash table) has the same digest.
        let split = CheckRequest {
            purpose: CheckPurpose::Resplit,
            ..req.clone()
        };
        assert_eq!(
            run_check(&engine, None, &split, &CheckBudget::default()),
            CheckOutcome::Verified { digest, nodes }
        );
    }
}
