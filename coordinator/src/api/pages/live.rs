//! Throughput and ETA from a small in-memory ring of progress samples.
//!
//! Every few seconds (a background task, and any page or poll that finds the newest sample
//! stale) the trigger-kept counters of every campaign ([`Store::progress`], O(campaigns)) are
//! sampled with the coordinator's own request and result counters. Rates are the difference
//! between the newest sample and the oldest one inside the window, so they cost nothing to
//! compute and a restart only empties the ring (rates show "—" until two samples exist).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use crate::store::CampaignProgress;

/// How far back rates look.
pub const WINDOW_MS: i64 = 10 * 60_000;
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
    /// Seconds until every workunit is done at that pace.
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

/// The ring of samples.
#[derive(Default)]
pub struct Ring {
    samples: Mutex<VecDeque<Sample>>,
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

    /// Rates of a campaign with `remaining` workunits left.
    pub fn campaign(&self, id: u64, remaining: u64) -> CampaignRates {
        let Some((old, new)) = self.ends() else {
            return CampaignRates {
                eta_s: eta(remaining, None),
                ..CampaignRates::default()
            };
        };
        let secs = (new.at_ms - old.at_ms) as f64 / 1000.0;
        // A campaign created inside the window started from zero.
        let Some(b) = new.campaigns.get(&id) else {
            return CampaignRates::default();
        };
        let a = old.campaigns.get(&id).copied().unwrap_or_default();
        let units_per_s = rate(u128::from(a.done), u128::from(b.done), secs);
        CampaignRates {
            nodes_per_s: rate(a.nodes_computed, b.nodes_computed, secs),
            units_per_s,
            eta_s: eta(remaining, units_per_s),
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
            },
        );
        ring.push(late);
        assert_eq!(ring.campaign(2, 4).nodes_per_s, Some(20.0));
        assert_eq!(ring.campaign(2, 4).eta_s, Some(20.0));
        assert_eq!(ring.campaign(1, 0).eta_s, Some(0.0));
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
