//! What a worker did (its session and lifetime totals, and how its results stand on the
//! coordinator) and how far a stop has gone: the two-stage stop of the work loop.

use std::time::Duration;

use c960_common::wire::StandingResponse;
use tokio::sync::watch;

use crate::report::{self, thousands};

/// What a worker did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Results accepted by the coordinator.
    pub submitted: u64,
    /// Results the coordinator refused (expired lease, …).
    pub refused: u64,
    /// Workunits the engine failed on (reported as failed replicas).
    pub failed: u64,
    /// Nodes computed.
    pub nodes: u128,
    /// Stopped by the shutdown signal.
    pub interrupted: bool,
    /// Leases given back uncomputed because of a stop.
    pub given_back: u64,
    /// Accepted results of this identity over all sessions (this one included), as kept in the
    /// state file; this session's without one.
    pub lifetime_results: u64,
    /// Nodes of those results.
    pub lifetime_nodes: u128,
    /// How long the worker ran.
    pub elapsed: Duration,
    /// How this identity's results stand on the coordinator, as last asked.
    pub standing: Option<StandingResponse>,
}

impl Summary {
    /// The session and lifetime totals in one line.
    pub fn totals(&self) -> String {
        let mut line = format!(
            "session: {} accepted, {} nodes in {}",
            report::count(self.submitted, "result"),
            thousands(self.nodes),
            report::duration(self.elapsed)
        );
        for (n, what) in [
            (self.refused, "refused"),
            (self.failed, "failed"),
            (self.given_back, "given back"),
        ] {
            if n > 0 {
                line.push_str(&format!(", {n} {what}"));
            }
        }
        line.push_str(&format!(
            "; lifetime: {} accepted, {} nodes",
            report::count(self.lifetime_results, "result"),
            thousands(self.lifetime_nodes)
        ));
        if let Some(s) = self.standing {
            line.push_str(&format!(
                "; on the coordinator: returned {}, validated {}, waiting for more replicas on {}",
                s.returned, s.validated, s.awaiting
            ));
        }
        line
    }
}

/// How often the totals are logged while the worker runs.
pub const TOTALS_EVERY: Duration = Duration::from_secs(300);

/// How far a stop has gone: a volunteer's first Ctrl-C (or SIGTERM) asks the worker to finish
/// the workunits in hand, submit them and exit; the second to give them back and exit now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// Keep working.
    #[default]
    Run,
    /// Fetch nothing more; finish and submit what is in hand, then exit.
    Finish,
    /// Give the leases in hand back and exit at once.
    Now,
}

/// Resolves once the stop has reached `level`; never if the sender is gone without it.
pub(crate) async fn stop_reached(rx: &mut watch::Receiver<Stop>, level: Stop) {
    loop {
        if *rx.borrow_and_update() >= level {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sleeps for `d`; returns true if the stop reached `level` first.
pub(crate) async fn sleep_or_stop(
    d: Duration,
    rx: &mut watch::Receiver<Stop>,
    level: Stop,
) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = stop_reached(rx, level) => true,
    }
}
