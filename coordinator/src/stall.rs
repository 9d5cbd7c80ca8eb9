//! Campaigns that no connected worker may take: every remaining replica must come from a worker
//! that has not computed that workunit yet (or can run its engine), and every worker asking for
//! work gets none. `run` stops on this with its own local workers; a served coordinator says so
//! in its log and on `/api/v1/status`, since only more workers can help.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::scheduler::CampaignStatus;
use crate::store::CampaignProgress;

/// A worker that fetched within this long counts as connected.
pub const CONNECTED: Duration = Duration::from_secs(120);

/// What the status page and the log say about a stalled campaign.
pub const STALLED_REASON: &str = "no connected worker may take its remaining replicas (each \
     connected worker has computed them already or lacks the engine): more workers are needed";

/// `run`'s rule: a campaign not finished with no lease in flight is waiting for a worker that
/// may take its replicas.
pub fn waits_for_other_workers(p: &CampaignProgress) -> bool {
    p.valid + p.failed < p.total && p.in_flight == 0
}

/// The campaigns stalled for want of workers, given whether every connected worker got no work
/// at its last fetch. A paused or cancelled campaign waits for the operator, not for workers.
pub fn stalled(progress: &[CampaignProgress], every_connected_worker_idle: bool) -> Vec<u64> {
    if !every_connected_worker_idle {
        return Vec::new();
    }
    progress
        .iter()
        .filter(|p| p.campaign.status == CampaignStatus::Active && waits_for_other_workers(p))
        .map(|p| p.campaign.id)
        .collect()
}

/// A stalled campaign on the status page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StalledCampaign {
    /// Campaign id.
    pub campaign: u64,
    /// Why it does not progress.
    pub reason: &'static str,
}

/// The outcome of each connected worker's last fetch (in memory: a diagnosis, rebuilt within
/// a minute of a restart from the workers' next fetches).
#[derive(Debug, Default)]
pub struct StallWatch {
    last_fetch: Mutex<HashMap<u64, (Instant, bool)>>,
    reported: Mutex<BTreeSet<u64>>,
}

impl StallWatch {
    /// Records that `worker` fetched and whether it got work.
    pub fn record(&self, worker: u64, got_work: bool, now: Instant) {
        if let Ok(mut last) = self.last_fetch.lock() {
            last.insert(worker, (now, got_work));
            last.retain(|_, (at, _)| now.duration_since(*at) < CONNECTED);
        }
    }

    /// Whether at least one worker is connected and none got work at its last fetch.
    pub fn every_connected_worker_idle(&self, now: Instant) -> bool {
        let Ok(last) = self.last_fetch.lock() else {
            return false;
        };
        let mut connected = last
            .values()
            .filter(|(at, _)| now.duration_since(*at) < CONNECTED)
            .peekable();
        connected.peek().is_some() && connected.all(|(_, got_work)| !got_work)
    }

    /// The campaigns newly stalled since the last call (to log once each); campaigns no longer
    /// stalled are forgotten, so a later stall is logged again.
    pub fn newly_stalled(&self, stalled: &[u64]) -> Vec<u64> {
        let Ok(mut reported) = self.reported.lock() else {
            return Vec::new();
        };
        reported.retain(|id| stalled.contains(id));
        stalled
            .iter()
            .copied()
            .filter(|id| reported.insert(*id))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connected_workers_and_nothing_in_flight_is_a_stall() {
        let w = StallWatch::default();
        let t0 = Instant::now();
        assert!(!w.every_connected_worker_idle(t0), "nobody connected");
        w.record(1, false, t0);
        w.record(2, true, t0);
        assert!(!w.every_connected_worker_idle(t0), "worker 2 got work");
        w.record(2, false, t0 + Duration::from_secs(1));
        assert!(w.every_connected_worker_idle(t0 + Duration::from_secs(1)));
        // Gone quiet for longer than CONNECTED: nobody connected any more.
        assert!(!w.every_connected_worker_idle(t0 + CONNECTED + Duration::from_secs(2)));
        assert_eq!(w.newly_stalled(&[3, 4]), vec![3, 4]);
        assert_eq!(w.newly_stalled(&[3, 4]), Vec::<u64>::new());
        assert_eq!(w.newly_stalled(&[4]), Vec::<u64>::new());
        assert_eq!(w.newly_stalled(&[3, 4]), vec![3]);
    }
}
