//! Throughput and ETA from a small in-memory ring of progress samples.
//!
//! Every few seconds (a background task, and any page or poll that finds the newest sample
//! stale) the trigger-kept counters of every campaign ([`crate::store::Store::progress`], O(campaigns)) are
//! sampled with the coordinator's own request and result counters. Rates are the difference
//! between the newest sample and the oldest one inside the window, so they cost nothing to
//! compute and a restart only empties the ring (rates show "—" until two samples exist).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use crate::model::CampaignProgress;

/// How far back rates look.
pub const WINDOW_MS: i64 = 10 * 60_000;
/// How far back the ETA looks: recent enough to follow a campaign whose pace changes (the first
/// replicas of a quorum validate nothing; the second ones validate at once).
pub const ETA_WINDOW_MS: i64 = 2 * 60_000;
/// The background sampling period.
pub const SAMPLE_EVERY_MS: i64 = 5_000;
/// A page or poll takes a new sample when the newest is older than this.
const STALE_MS: i64 = 2_000;

/// The counters of one campaign at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CampaignSample {
    /// Valid + failed workunits.
    pub done: u64,
    /// Nodes of all returned results.
    pub nodes_computed: u128,
    /// Canonical nodes of valid workunits.
    pub nodes_valid: u128,
    /// Replicas still to come: queued or in flight (falls by one with each result returned,
    /// rises with each replica reissued).
    pub pending: u64,
}

/// Every counter at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// When (ms since the epoch).
    pub at_ms: i64,
    /// By campaign id.
    pub campaigns: BTreeMap<u64, CampaignSample>,
    /// Requests answered by this process so far.
    pub requests: u64,
    /// Results accepted by this process so far.
    pub results: u64,
}

impl Sample {
    /// A sample of these counters.
    pub fn of(at_ms: i64, progress: &[CampaignProgress], requests: u64, results: u64) -> Sample {
        Sample {
            at_ms,
            campaigns: progress
                .iter()
                .map(|p| {
                    (
                        p.campaign.id,
                        CampaignSample {
                            done: p.valid + p.failed,
                            nodes_computed: p.nodes_computed,
                            nodes_valid: p.nodes_valid,
                            pending: p.queued_replicas + p.in_flight,
                        },
                    )
                })
                .collect(),
            requests,
            results,
        }
    }
}

/// Rates of one campaign over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CampaignRates {
    /// Nodes computed per second (replicas included: the work the volunteers do).
    pub nodes_per_s: Option<f64>,
    /// Workunits completed per second.
    pub units_per_s: Option<f64>,
    /// Seconds until every replica still to come is returned, at the pace of the last
    /// [`ETA_WINDOW_MS`]; 0 once the campaign is done.
    pub eta_s: Option<f64>,
}

/// The coordinator's own rates over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OwnRates {
    /// Requests per second.
    pub requests_per_s: Option<f64>,
    /// Results accepted per second.
    pub results_per_s: Option<f64>,
    /// Seconds the rates cover.
    pub window_s: Option<f64>,
}

/// `(new - old) / seconds`, when at least a second separates the samples and the counter did
/// not go back (a restart or a quarantine can lower it).
pub fn rate(old: u128, new: u128, seconds: f64) -> Option<f64> {
    (seconds >= 1.0 && new >= old).then(|| (new - old) as f64 / seconds)
}

/// Seconds to finish `remaining` units at `units_per_s`; `Some(0)` when none remain.
pub fn eta(remaining: u64, units_per_s: Option<f64>) -> Option<f64> {
    if remaining == 0 {
        return Some(0.0);
    }
    units_per_s
        .filter(|r| *r > 0.0)
        .map(|r| remaining as f64 / r)
}

/// The ring of samples, and the final rates of the campaigns seen finished.
#[derive(Default)]
pub struct Ring {
    samples: Mutex<VecDeque<Sample>>,
    finished: Mutex<BTreeMap<u64, CampaignRates>>,
}

impl Ring {
    /// Whether the newest sample is older than a page should accept (or there is none).
    pub fn stale(&self, now_ms: i64) -> bool {
        self.lock()
            .back()
            .is_none_or(|s| now_ms - s.at_ms >= STALE_MS)
    }

    /// Adds a sample and forgets those outside the window (keeping the newest one before it,
    /// so a window is always covered once the ring is old enough).
    pub fn push(&self, s: Sample) {
        let mut ring = self.lock();
        if ring.back().is_some_and(|b| b.at_ms >= s.at_ms) {
            return;
        }
        let horizon = s.at_ms - WINDOW_MS;
        ring.push_back(s);
        while ring.len() > 2 && ring[1].at_ms <= horizon {
            ring.pop_front();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Sample>> {
        self.samples.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The oldest and newest samples, when two exist.
    fn ends(&self) -> Option<(Sample, Sample)> {
        let ring = self.lock();
        Some((ring.front()?.clone(), ring.back()?.clone())).filter(|(a, b)| a.at_ms < b.at_ms)
    }

    /// Rates of a campaign with `remaining` workunits left. A finished campaign keeps the rates
    /// it had when its counters last moved, frozen from then on.
    pub fn campaign(&self, id: u64, remaining: u64) -> CampaignRates {
        if remaining == 0 {
            let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
            let frozen = *finished
                .entry(id)
                .or_insert_with(|| self.rates(id, 0, true));
            return CampaignRates {
                eta_s: Some(0.0),
                ..frozen
            };
        }
        // Reopened (a re-verification): its rates move again.
        self.finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        self.rates(id, remaining, false)
    }

    /// The rates over the window ending at the newest sample (or, `at_last_change`, at the
    /// newest one in which the campaign's counters moved).
    fn rates(&self, id: u64, remaining: u64, at_last_change: bool) -> CampaignRates {
        let ring = self.lock();
        let mut end = ring.len().saturating_sub(1);
        if at_last_change {
            while end > 0 && ring[end].campaigns.get(&id) == ring[end - 1].campaigns.get(&id) {
                end -= 1;
            }
        }
        let (Some(new), Some(old)) = (ring.get(end), ring.front()) else {
            return CampaignRates {
                eta_s: eta(remaining, None),
                ..CampaignRates::default()
            };
        };
        // A campaign created inside the window started from zero.
        let Some(b) = new.campaigns.get(&id) else {
            return CampaignRates::default();
        };
        let since = |o: &Sample| o.campaigns.get(&id).copied().unwrap_or_default();
        let secs = (new.at_ms - old.at_ms) as f64 / 1000.0;
        let a = since(old);
        let units_per_s = rate(u128::from(a.done), u128::from(b.done), secs);
        // The ETA from the recent past only: the oldest sample inside its window.
        let recent = ring
            .iter()
            .take(end + 1)
            .find(|s| s.at_ms >= new.at_ms - ETA_WINDOW_MS)
            .unwrap_or(new);
        let r = since(recent);
        let recent_secs = (new.at_ms - recent.at_ms) as f64 / 1000.0;
        let replicas_per_s = rate(u128::from(b.pending), u128::from(r.pending), recent_secs);
        CampaignRates {
            nodes_per_s: rate(a.nodes_computed, b.nodes_computed, secs),
            units_per_s,
            eta_s: if remaining == 0 {
                Some(0.0)
            } else {
                eta(b.pending, replicas_per_s).filter(|_| b.pending > 0)
            },
        }
    }

    /// The coordinator's own rates.
    pub fn own(&self) -> OwnRates {
        let Some((old, new)) = self.ends() else {
            return OwnRates::default();
        };
        let secs = (new.at_ms - old.at_ms) as f64 / 1000.0;
        OwnRates {
            requests_per_s: rate(u128::from(old.requests), u128::from(new.requests), secs),
            results_per_s: rate(u128::from(old.results), u128::from(new.results), secs),
            window_s: Some(secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: i64, done: u64, nodes: u128, results: u64) -> Sample {
        Sample {
            at_ms,
            campaigns: [(
                1,
                CampaignSample {
                    done,
                    nodes_computed: nodes,
                    nodes_valid: nodes / 2,
                    // Two replicas a workunit, 15 workunits: what is not done is to come.
                    pending: 2 * 15u64.saturating_sub(done),
                },
            )]
            .into(),
            requests: results * 2,
            results,
        }
    }

    #[test]
    fn rates_and_eta_come_from_the_ends_of_the_window() {
        let ring = Ring::default();
        assert_eq!(ring.campaign(1, 10).nodes_per_s, None);
        assert!(ring.stale(0));
        ring.push(sample(0, 0, 0, 0));
        assert!(!ring.stale(1_000));
        ring.push(sample(10_000, 5, 1_000, 20));
        let r = ring.campaign(1, 10);
        assert_eq!(r.nodes_per_s, Some(100.0));
        assert_eq!(r.units_per_s, Some(0.5));
        // 10 replicas returned in 10 s, 20 to come.
        assert_eq!(r.eta_s, Some(20.0));
        let own = ring.own();
        assert_eq!(own.results_per_s, Some(2.0));
        assert_eq!(own.requests_per_s, Some(4.0));
        // An unknown campaign has no rates; a finished one needs no time.
        assert_eq!(ring.campaign(2, 3), CampaignRates::default());
        // One created inside the window counts from zero.
        let mut late = sample(20_000, 6, 1_200, 20);
        late.campaigns.insert(
            2,
            CampaignSample {
                done: 4,
                nodes_computed: 400,
                nodes_valid: 200,
                pending: 4,
            },
        );
        ring.push(late);
        assert_eq!(ring.campaign(2, 4).nodes_per_s, Some(20.0));
        // Nothing of campaign 2's pending replicas has come back in its window yet.
        assert_eq!(ring.campaign(2, 4).eta_s, None);
        assert_eq!(ring.campaign(1, 0).eta_s, Some(0.0));
    }

    #[test]
    fn the_eta_follows_the_recent_pace_and_a_finished_campaigns_rate_stays() {
        let ring = Ring::default();
        let at = |ms: i64, done: u64, pending: u64, nodes: u128| Sample {
            at_ms: ms,
            campaigns: [(
                1,
                CampaignSample {
                    done,
                    nodes_computed: nodes,
                    nodes_valid: 0,
                    pending,
                },
            )]
            .into(),
            requests: 0,
            results: 0,
        };
        // First replicas for 5 minutes (nothing validates: a units rate would say "never"),
        // then a steady 1 replica a second.
        ring.push(at(0, 0, 1000, 0));
        ring.push(at(300_000, 0, 700, 300));
        ring.push(at(420_000, 60, 580, 420));
        let r = ring.campaign(1, 440);
        assert_eq!(r.eta_s, Some(580.0), "{r:?}");
        // Finished: the rate is the one of its last window and stays when the ring moves on.
        ring.push(at(1_000_000, 500, 0, 1000));
        let done = ring.campaign(1, 0);
        assert_eq!(done.eta_s, Some(0.0));
        let nodes = done.nodes_per_s.unwrap();
        for i in 1..=300 {
            ring.push(at(1_000_000 + i * SAMPLE_EVERY_MS, 500, 0, 1000));
        }
        assert_eq!(ring.campaign(1, 0).nodes_per_s, Some(nodes));
    }

    #[test]
    fn old_samples_leave_the_window_and_counters_that_fall_give_no_rate() {
        let ring = Ring::default();
        for i in 0..200 {
            ring.push(sample(i * SAMPLE_EVERY_MS, i as u64, i as u128 * 10, 0));
        }
        let newest = 199 * SAMPLE_EVERY_MS;
        let (old, _) = ring.ends().unwrap();
        assert!(
            old.at_ms <= newest - WINDOW_MS && old.at_ms > newest - WINDOW_MS - SAMPLE_EVERY_MS
        );
        // Out of order samples are ignored.
        ring.push(sample(0, 0, 0, 0));
        assert_eq!(ring.ends().unwrap().1.at_ms, newest);
        assert_eq!(rate(10, 5, 10.0), None);
        assert_eq!(rate(5, 10, 0.5), None);
        assert_eq!(eta(5, Some(0.0)), None);
    }
}
