//! Computing one assignment for the work loop: [`c960_compute`] does the computing; this module
//! keeps the worker's UCI engines across workunits and shows progress (a live line on a terminal,
//! a log line a minute otherwise).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use c960_common::PerftEngine;
use c960_common::digest::result_digest;
use c960_common::wire::{
    Assignment, BatchedResult, PROTOCOL_VERSION, SubmitRequest, WorkResult, WorkUnitKind,
};
use c960_compute::compute::{ComputeError, UciSlot, compute_any, root_position};
use c960_compute::uci_engine::UciCommand;

use crate::report::{self, LiveLine, thousands};

/// The worker's UCI engines, one per analysis workunit running at once, kept across workunits.
#[derive(Clone)]
pub(crate) struct UciPool {
    engine: Option<(UciCommand, Duration)>,
    idle: Arc<Mutex<Vec<UciSlot>>>,
}

impl UciPool {
    /// A pool starting `engine` (with this search timeout) on demand; none without one.
    pub(crate) fn new(engine: Option<UciCommand>, timeout: Duration) -> UciPool {
        UciPool {
            engine: engine.map(|command| (command, timeout)),
            idle: Arc::new(Mutex::new(Vec::new())),
        }
    }
}

/// Computes one assignment on this (blocking) thread, with a live progress line on a terminal
/// and a progress log line a minute otherwise.
pub(crate) fn compute_one(
    a: &Assignment,
    cancel: &AtomicBool,
    perft: &PerftEngine,
    uci: &UciPool,
    show_bar: bool,
    started: Instant,
) -> Result<WorkResult, ComputeError> {
    let what = report::workunit(&a.kind);
    let is_perft = matches!(a.kind, WorkUnitKind::Perft { .. });
    let live = LiveLine::start(
        show_bar && is_perft,
        format!("workunit {}: {what}", a.workunit_id),
    );
    tracing::debug!("workunit {}: {what}", a.workunit_id);
    let mut slot = match (&a.kind, &uci.engine) {
        (
            WorkUnitKind::Analysis { .. } | WorkUnitKind::SelfPlay { .. },
            Some((command, timeout)),
        ) => Some(
            uci.idle
                .lock()
                .ok()
                .and_then(|mut idle| idle.pop())
                .unwrap_or_else(|| UciSlot::new(command.clone(), *timeout)),
        ),
        _ => None,
    };
    if is_perft && let Ok(pos) = root_position(&a.kind) {
        live.set(format!(
            "root move 0/{} · counting",
            pos.legal_moves().as_slice().len()
        ));
    }
    let mut logged = Instant::now();
    let r = compute_any(
        &a.kind,
        cancel,
        perft,
        slot.as_mut(),
        |done, total, nodes| {
            let elapsed = started.elapsed();
            let eta = elapsed.mul_f64((total - done) as f64 / done.max(1) as f64);
            let line = format!(
                "root move {done}/{total} · {} nodes · {} · ETA {}",
                thousands(u128::from(nodes)),
                report::rate(u128::from(nodes), elapsed),
                report::duration(eta)
            );
            if !show_bar && logged.elapsed() >= Duration::from_secs(60) {
                logged = Instant::now();
                tracing::info!("workunit {}: {line}", a.workunit_id);
            }
            live.set(line);
        },
    );
    drop(live);
    if let Some(slot) = slot
        && let Ok(mut idle) = uci.idle.lock()
    {
        idle.push(slot);
    }
    if let Ok(result) = &r {
        let elapsed = started.elapsed();
        let line = format!(
            "workunit {} done: {what}, {} nodes in {} ({})",
            a.workunit_id,
            thousands(u128::from(result.nodes())),
            report::duration(elapsed),
            report::rate(u128::from(result.nodes()), elapsed)
        );
        // Tiny workunits come by the dozen per second: only long ones get a line of their own.
        if elapsed >= Duration::from_secs(1) {
            tracing::info!("{line}");
        } else {
            tracing::debug!("{line}");
        }
    }
    r
}

/// What the work loop submits for `a`, computed as `result` in `elapsed`: the result with its
/// digest over the canonical encoding.
pub fn batched_result(a: &Assignment, result: WorkResult, elapsed: Duration) -> BatchedResult {
    BatchedResult {
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: result_digest(a.workunit_id, &a.kind, &result),
        result,
        elapsed_ms: elapsed.as_millis() as u64,
    }
}

/// The same as one [`SubmitRequest`] (what `boinc-app` hands the coordinator through BOINC).
pub fn submit_request(
    a: &Assignment,
    result: WorkResult,
    elapsed: Duration,
    engine: c960_common::wire::EngineInfo,
) -> SubmitRequest {
    let b = batched_result(a, result, elapsed);
    SubmitRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: b.lease_id,
        workunit_id: b.workunit_id,
        result: b.result,
        elapsed_ms: b.elapsed_ms,
        engine,
        digest: b.digest,
    }
}
