//! The scripted liars: their strategies, their lies and the loop that tells them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use c960_common::digest::result_digest;
use c960_common::wire::{
    Assignment, BatchedResult, PerftResult, PositionSpec, WorkResult, WorkUnitKind, WorkerAuth,
};
use c960_common::{Position, StartPosition};

use super::client::*;

/// How a scripted liar behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Strategy {
    /// Lies on every workunit at once, without computing anything (a fake, self-consistent
    /// divide that all liars agree on).
    Instant,
    /// Lies on this share of workunits (chosen by workunit id, so all liars lie on the same
    /// ones), honest on the rest.
    Fraction(f64),
    /// Honest on start positions (public answers), lies on split sub-positions.
    PrivateOnly,
    /// Honest until it has returned this many results, then lies on everything.
    BehaveThenLie(u64),
    /// Lies on everything, but waits this long before answering, to look plausible.
    Delayed(Duration),
    /// One of a pair of patient colluders: honest until trusted, then lies (+1 on one root
    /// move, both members alike) only on workunits the pair holds whole, `lies` times at most
    /// for the pair; everything else honest. The pair shares what each member holds.
    PatientPair { pair: usize, lies: u64 },
    /// A fresh identity that answers the right total with a wrong divide (+1 and -1 on two root
    /// moves): the public total cannot tell.
    SwapDivide,
}

/// What the members of one patient pair share.
#[derive(Default)]
pub(super) struct PairState {
    /// Workunit → the pair's members holding a replica of it.
    pub(super) held: BTreeMap<u64, BTreeSet<u64>>,
    /// The workunits the pair lies on.
    pub(super) lied_on: BTreeSet<u64>,
}

/// The shared state of every pair, and who is trusted (as a colluder would infer from its
/// lease cap growing).
#[derive(Clone)]
pub(super) struct Collusion {
    pub(super) pairs: Arc<std::sync::Mutex<BTreeMap<usize, PairState>>>,
    pub(super) trusted: Arc<dyn Fn(u64) -> bool + Send + Sync>,
}

pub(super) fn root(kind: &WorkUnitKind) -> (Position, u32) {
    let WorkUnitKind::Perft { position, depth } = kind else {
        panic!("perft only")
    };
    let pos = match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n)).unwrap().position(),
        PositionSpec::Fen(f) => Position::from_fen(f).unwrap(),
    };
    (pos, *depth)
}

pub(super) fn truth(kind: &WorkUnitKind) -> PerftResult {
    c960_compute::compute::compute(kind, &AtomicBool::new(false), |_, _, _| {}).unwrap()
}

/// The colluders' lie: every root move counted 1,000 times. Deterministic, so all liars agree,
/// self-consistent (the divide sums to the total), and free to produce.
pub(super) fn fake(kind: &WorkUnitKind) -> PerftResult {
    fake_scaled(kind, 1000)
}

/// [`fake`] with `per_move` nodes per root move.
pub(super) fn fake_scaled(kind: &WorkUnitKind, per_move: u64) -> PerftResult {
    let (pos, _) = root(kind);
    let divide: Vec<(String, u64)> = pos
        .legal_moves()
        .as_slice()
        .iter()
        .map(|m| (m.to_string(), per_move))
        .collect();
    PerftResult {
        nodes: divide.iter().map(|d| d.1).sum(),
        divide,
    }
}

/// The right total with +1 and -1 on the first two root moves.
pub(super) fn swapped_divide(kind: &WorkUnitKind) -> PerftResult {
    let mut r = truth(kind);
    if r.divide.len() >= 2 && r.divide[1].1 > 0 {
        r.divide[0].1 += 1;
        r.divide[1].1 -= 1;
    }
    r
}

/// The truth plus one on the first root move: a lie that looks like an honest count.
pub(super) fn off_by_one(kind: &WorkUnitKind) -> PerftResult {
    let mut r = truth(kind);
    if let Some(first) = r.divide.first_mut() {
        first.1 += 1;
        r.nodes += 1;
    }
    r
}

pub(super) fn batched(a: &Assignment, r: PerftResult) -> BatchedResult {
    let result = WorkResult::Perft(r);
    BatchedResult {
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: result_digest(a.workunit_id, &a.kind, &result),
        result,
        elapsed_ms: 1,
    }
}

/// What one scripted liar did.
#[derive(Default)]
pub(super) struct LiarLog {
    /// The workunits it lied on (for the report of a liar that got away).
    pub(super) lied_on: std::sync::Mutex<Vec<u64>>,
    pub(super) lies: AtomicU64,
    pub(super) honest: AtomicU64,
}

/// Runs a scripted liar until `stop` or until it is shut out (quarantined).
pub(super) async fn liar(
    client: RawClient,
    auth: WorkerAuth,
    strategy: Strategy,
    stop: Arc<AtomicBool>,
    log: Arc<LiarLog>,
    collusion: Collusion,
) {
    let mut returned = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let got = match client.fetch(&auth, 8).await {
            Ok(g) => g,
            Err((403, _)) => return,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if got.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        // A patient pair: record what this member holds, give the partner a moment to fetch,
        // then lie on what the pair holds whole (once trusted, up to its budget of lies).
        let mut pair_lies = BTreeSet::new();
        if let Strategy::PatientPair { pair, lies } = strategy {
            {
                let mut pairs = collusion.pairs.lock().unwrap();
                let state = pairs.entry(pair).or_default();
                for a in &got {
                    state
                        .held
                        .entry(a.workunit_id)
                        .or_default()
                        .insert(auth.worker_id);
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let trusted = (collusion.trusted)(auth.worker_id);
            let mut pairs = collusion.pairs.lock().unwrap();
            let state = pairs.entry(pair).or_default();
            for a in &got {
                let whole = state.held.get(&a.workunit_id).is_some_and(|h| h.len() >= 2);
                if state.lied_on.contains(&a.workunit_id)
                    || (trusted && whole && (state.lied_on.len() as u64) < lies)
                {
                    state.lied_on.insert(a.workunit_id);
                    pair_lies.insert(a.workunit_id);
                }
            }
        }
        let mut results = Vec::new();
        for a in &got {
            // A challenge of a dispute (issue 54): a liar that lied keeps its story, one ply
            // deeper (its lies put the extra node under the first move, so the same lie of
            // the challenged node is consistent with its earlier claim).
            if c960_coordinator::model::disputes::challenge_of(a.lease_id).is_some() {
                let lied = log.lies.load(Ordering::Relaxed) > 0;
                let r = if lied {
                    off_by_one(&a.kind)
                } else {
                    truth(&a.kind)
                };
                results.push(batched(a, r));
                continue;
            }
            let split = matches!(
                &a.kind,
                WorkUnitKind::Perft {
                    position: PositionSpec::Fen(_),
                    ..
                }
            );
            let lie = match strategy {
                Strategy::Instant | Strategy::Delayed(_) => Some(fake(&a.kind)),
                Strategy::Fraction(p) => ((a.workunit_id.wrapping_mul(2_654_435_761) % 1000)
                    < (p * 1000.0) as u64)
                    .then(|| off_by_one(&a.kind)),
                Strategy::PrivateOnly => split.then(|| off_by_one(&a.kind)),
                Strategy::BehaveThenLie(n) => (returned >= n).then(|| off_by_one(&a.kind)),
                Strategy::PatientPair { .. } => pair_lies
                    .contains(&a.workunit_id)
                    .then(|| off_by_one(&a.kind)),
                Strategy::SwapDivide => Some(swapped_divide(&a.kind)),
            };
            let r = match lie {
                Some(l) => {
                    log.lied_on.lock().unwrap().push(a.workunit_id);
                    log.lies.fetch_add(1, Ordering::Relaxed);
                    l
                }
                None => {
                    log.honest.fetch_add(1, Ordering::Relaxed);
                    truth(&a.kind)
                }
            };
            results.push(batched(a, r));
            returned += 1;
        }
        if let Strategy::Delayed(d) = strategy {
            tokio::time::sleep(d).await;
        }
        if let Err((403, _)) = client.submit(&auth, results).await {
            return;
        }
    }
}
