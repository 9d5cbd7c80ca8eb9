//! Why work waits. When a worker asks and gets nothing, the store looks at the replicas that
//! remain and [`classify`] names the rule that keeps each from this worker (its own earlier
//! result, a party rule of [`crate::integrity::trust`], a missing engine, replicas kept for trusted
//! workers); [`diagnose`] sums them per campaign. The worker is told the first cause
//! ([`c960_common::wait::Waiting`]: the same words everywhere). A campaign is **stalled** when it
//! is not finished, nothing of it is in flight and every connected worker got nothing: only more
//! or other workers (or the operator) can help. A served coordinator records the stall and its
//! cause on the campaign (the store's `campaigns.stall_*`), so the log, `/api/v1/status`,
//! `campaign show` and the campaign page all say the same; `run` stops on it with its own local
//! workers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use c960_common::wait::{WaitCause, Waiting};

use crate::integrity::trust::{self, Integrity, Party, PartyRule};
use crate::model::{CampaignProgress, CampaignStatus};

/// A worker that fetched within this long counts as connected.
pub const CONNECTED: Duration = Duration::from_secs(120);

/// The most ready workunits of one campaign the diagnosis looks at: enough to name the cause,
/// and a bound that keeps an idle worker's fetch from reading a whole campaign.
pub const DIAGNOSIS_UNITS: u64 = 256;

/// The most campaigns one diagnosis looks at, in serving order.
pub const DIAGNOSIS_CAMPAIGNS: usize = 8;

/// `run`'s rule: a campaign not finished with no lease in flight is waiting for a worker that
/// may take its replicas.
pub fn waits_for_other_workers(p: &CampaignProgress) -> bool {
    p.valid + p.failed < p.total && p.in_flight == 0
}

/// The worker asking, as the diagnosis sees it.
#[derive(Clone, Copy, Debug)]
pub struct Asker<'a> {
    /// Its id.
    pub id: u64,
    /// Its party keys.
    pub party: Party<'a>,
    /// Whether it is trusted (replicas kept for trusted workers may go to it).
    pub trusted: bool,
}

/// A replica of a ready workunit held or answered by some worker.
#[derive(Clone, Debug)]
pub struct Holder<'a> {
    /// Who.
    pub worker_id: u64,
    /// Its party keys.
    pub party: Party<'a>,
    /// Whether it keeps the workunit from the asker: in progress or returned (and, the asker's
    /// own, refused); an expired or abandoned replica keeps nobody away.
    pub live: bool,
}

/// A workunit with replicas still to hand out.
#[derive(Clone, Debug)]
pub struct ReadyUnit<'a> {
    /// The worker can compute its kind.
    pub accepted: bool,
    /// Its remaining replicas are kept for trusted workers.
    pub trusted_only: bool,
    /// Replicas still to hand out.
    pub needed: u64,
    /// Replicas held or answered, with their workers.
    pub holders: Vec<Holder<'a>>,
}

/// The rule that keeps `unit` from `asker`, or `None` if it may take it (the assignment will
/// give it on the next fetch). The same order of rules as the assignment.
pub fn classify(asker: &Asker, unit: &ReadyUnit, integrity: &Integrity) -> Option<WaitCause> {
    if !unit.accepted {
        return Some(WaitCause::EngineMissing);
    }
    if unit
        .holders
        .iter()
        .any(|h| h.worker_id == asker.id && h.live)
    {
        return Some(WaitCause::AlreadyComputed);
    }
    if unit.trusted_only && !asker.trusted {
        return Some(WaitCause::TrustAnchor);
    }
    let rule = unit
        .holders
        .iter()
        .filter(|h| h.live && h.worker_id != asker.id)
        .find_map(|h| trust::party_rule(&asker.party, &h.party, integrity))?;
    Some(match rule {
        PartyRule::AddressBlock => WaitCause::AddressBlock,
        PartyRule::EnrolmentToken => WaitCause::EnrolmentToken,
        PartyRule::RegistrationBurst => WaitCause::RegistrationBurst,
    })
}

/// Why `asker` may take none of a campaign's `units`: the cause that keeps the most replicas,
/// with their count. `None` when some unit may be taken, or there is none.
pub fn diagnose(
    campaign: u64,
    asker: &Asker,
    units: &[ReadyUnit],
    integrity: &Integrity,
) -> Option<Waiting> {
    let mut by_cause: BTreeMap<WaitCause, u64> = BTreeMap::new();
    for unit in units {
        *by_cause
            .entry(classify(asker, unit, integrity)?)
            .or_default() += unit.needed;
    }
    let (cause, replicas) = by_cause
        .into_iter()
        .max_by_key(|(c, n)| (*n, std::cmp::Reverse(*c)))?;
    Some(Waiting {
        cause,
        campaign: Some(campaign),
        replicas,
    })
}

/// What a worker that got nothing is told: the first cause its diagnosis named (`waiting`, in
/// serving order), except that its own earlier result ([`WaitCause::AlreadyComputed`]) is no
/// reason to start another worker while `others_busy` (another connected worker got work at its
/// last fetch). At the end of every campaign the last replicas wait for the worker that did not
/// compute their twins, and it takes them at its next fetch: nothing waits on a rule there, so
/// the next campaign's cause is said, or none (`None`). The stall watch still gets the whole
/// diagnosis; if the busy worker may not take them either, it says why when it next gets
/// nothing, and this worker hears its own cause again.
pub fn told(waiting: &[Waiting], others_busy: bool) -> Option<Waiting> {
    waiting
        .iter()
        .find(|w| !(others_busy && w.cause == WaitCause::AlreadyComputed))
        .copied()
}

/// What a worker's last fetch brought.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Work.
    #[default]
    Work,
    /// Nothing; per campaign, the rule that kept it from that campaign's replicas.
    Nothing(Vec<Waiting>),
}

/// The campaigns stalled for want of workers, with the cause most connected workers reported
/// for each (a worker's own earlier result only where nobody names another cause): a campaign not finished, active, with nothing in flight, while every connected
/// worker got nothing. A paused or cancelled campaign waits for the operator, not for workers.
/// Campaigns no worker named a cause for are left out (their replicas will come back, or the
/// next fetch names the cause).
pub fn stalled(progress: &[CampaignProgress], reports: &[&[Waiting]]) -> BTreeMap<u64, Waiting> {
    let mut out = BTreeMap::new();
    for p in progress {
        if p.campaign.status != CampaignStatus::Active || !waits_for_other_workers(p) {
            continue;
        }
        let mut votes: BTreeMap<WaitCause, (usize, u64)> = BTreeMap::new();
        for w in reports.iter().flat_map(|r| r.iter()) {
            if w.campaign == Some(p.campaign.id) && w.cause.is_stall() {
                let v = votes.entry(w.cause).or_default();
                v.0 += 1;
                v.1 = v.1.max(w.replicas);
            }
        }
        // A worker that computed the replicas itself explains only why *it* waits: when any
        // other worker names another rule, that rule is why nobody else takes them.
        let ranked = votes
            .into_iter()
            .max_by_key(|(c, (n, _))| (*c != WaitCause::AlreadyComputed, *n));
        if let Some((cause, (_, replicas))) = ranked {
            out.insert(
                p.campaign.id,
                Waiting {
                    cause,
                    campaign: Some(p.campaign.id),
                    replicas,
                },
            );
        }
    }
    out
}

/// The outcome of each connected worker's last fetch (in memory: a diagnosis, rebuilt within
/// a minute of a restart from the workers' next fetches), and the stalls last recorded.
#[derive(Debug, Default)]
pub struct StallWatch {
    last_fetch: Mutex<HashMap<u64, (Instant, FetchOutcome)>>,
    recorded: Mutex<BTreeMap<u64, Waiting>>,
    /// When each recorded stall began, and whether it was already called lasting.
    began: Mutex<BTreeMap<u64, (Instant, bool)>>,
}

/// How long a stall lasts before the log calls it a warning: a replica that expired waits a
/// few seconds for the next worker's fetch, which is no trouble.
pub const LASTING: Duration = Duration::from_secs(60);

impl StallWatch {
    /// Records what `worker` got.
    pub fn record(&self, worker: u64, outcome: FetchOutcome, now: Instant) {
        if let Ok(mut last) = self.last_fetch.lock() {
            last.insert(worker, (now, outcome));
            last.retain(|_, (at, _)| now.duration_since(*at) < CONNECTED);
        }
    }

    /// When at least one worker is connected and none got work at its last fetch, what each
    /// was told; `None` otherwise (some worker is busy: nothing is stalled).
    pub fn idle_reports(&self, now: Instant) -> Option<Vec<Vec<Waiting>>> {
        let last = self.last_fetch.lock().ok()?;
        let mut reports = Vec::new();
        for (at, outcome) in last.values() {
            if now.duration_since(*at) >= CONNECTED {
                continue;
            }
            match outcome {
                FetchOutcome::Work => return None,
                FetchOutcome::Nothing(w) => reports.push(w.clone()),
            }
        }
        (!reports.is_empty()).then_some(reports)
    }

    /// Whether a connected worker other than `worker` got work at its last fetch.
    pub fn others_busy(&self, worker: u64, now: Instant) -> bool {
        self.last_fetch.lock().is_ok_and(|last| {
            last.iter().any(|(id, (at, outcome))| {
                *id != worker
                    && now.duration_since(*at) < CONNECTED
                    && *outcome == FetchOutcome::Work
            })
        })
    }

    /// The recorded stalls that have now lasted [`LASTING`], each returned once (to warn of).
    pub fn newly_lasting(&self, now: Instant) -> Vec<u64> {
        let (Ok(recorded), Ok(mut began)) = (self.recorded.lock(), self.began.lock()) else {
            return Vec::new();
        };
        began.retain(|id, _| recorded.contains_key(id));
        for id in recorded.keys() {
            began.entry(*id).or_insert((now, false));
        }
        began
            .iter_mut()
            .filter(|(_, (since, said))| !*said && now.duration_since(*since) >= LASTING)
            .map(|(id, (_, said))| {
                *said = true;
                *id
            })
            .collect()
    }

    /// Whether any stall is recorded (so a fetch that got work must look whether it ended).
    pub fn has_recorded(&self) -> bool {
        self.recorded.lock().is_ok_and(|r| !r.is_empty())
    }

    /// The stalls now (`stalled`'s answer) against those recorded before: the changes to
    /// record, each campaign with its new stall or `None` where one ended. Remembers `now`.
    pub fn changes(&self, now: &BTreeMap<u64, Waiting>) -> Vec<(u64, Option<Waiting>)> {
        let Ok(mut recorded) = self.recorded.lock() else {
            return Vec::new();
        };
        let mut changes: Vec<(u64, Option<Waiting>)> = recorded
            .keys()
            .filter(|id| !now.contains_key(id))
            .map(|id| (*id, None))
            .collect();
        for (id, w) in now {
            if recorded.get(id).map(|r| r.cause) != Some(w.cause) {
                changes.push((*id, Some(*w)));
            }
        }
        *recorded = now.clone();
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::trust::AddressSeparation;

    fn party(block: &str) -> Party<'_> {
        Party {
            reg_block: Some(block),
            last_block: Some(block),
            token: None,
            registered_ms: 0,
        }
    }

    fn unit<'a>(holders: Vec<Holder<'a>>) -> ReadyUnit<'a> {
        ReadyUnit {
            accepted: true,
            trusted_only: false,
            needed: 1,
            holders,
        }
    }

    fn held_by(worker_id: u64, block: &str) -> Holder<'_> {
        Holder {
            worker_id,
            party: party(block),
            live: true,
        }
    }

    #[test]
    fn each_rule_is_named_in_the_assignments_order() {
        let everywhere = Integrity {
            address_separation: AddressSeparation::Everywhere,
            ..Integrity::default()
        };
        let me = Asker {
            id: 1,
            party: party("127.0.0.0/24"),
            trusted: false,
        };
        let c = |u: &ReadyUnit, i: &Integrity| classify(&me, u, i);
        let free = unit(vec![held_by(2, "127.0.0.0/24")]);
        assert_eq!(
            c(&free, &Integrity::default()),
            None,
            "loopback pairs by default"
        );
        assert_eq!(c(&free, &everywhere), Some(WaitCause::AddressBlock));
        let mine = unit(vec![held_by(1, "127.0.0.0/24")]);
        assert_eq!(c(&mine, &everywhere), Some(WaitCause::AlreadyComputed));
        let engine = ReadyUnit {
            accepted: false,
            ..mine.clone()
        };
        assert_eq!(c(&engine, &everywhere), Some(WaitCause::EngineMissing));
        let anchor = ReadyUnit {
            trusted_only: true,
            ..free.clone()
        };
        assert_eq!(c(&anchor, &everywhere), Some(WaitCause::TrustAnchor));
        let token = Holder {
            party: Party {
                token: Some(9),
                ..party("198.51.100.0/24")
            },
            ..held_by(3, "")
        };
        let me_token = Asker {
            party: Party {
                token: Some(9),
                ..me.party
            },
            ..me
        };
        let t = unit(vec![token]);
        assert_eq!(
            classify(&me_token, &t, &Integrity::default()),
            Some(WaitCause::EnrolmentToken)
        );
        let burst = Integrity {
            registration_burst_ms: 1000,
            ..Integrity::default()
        };
        assert_eq!(c(&free, &burst), Some(WaitCause::RegistrationBurst));
        // A holder whose replica is gone (expired, abandoned) keeps nobody away.
        let gone = unit(vec![Holder {
            live: false,
            ..held_by(2, "127.0.0.0/24")
        }]);
        assert_eq!(c(&gone, &everywhere), None);
    }

    #[test]
    fn the_diagnosis_names_the_cause_of_most_replicas_or_none() {
        let i = Integrity {
            address_separation: AddressSeparation::Everywhere,
            ..Integrity::default()
        };
        let me = Asker {
            id: 1,
            party: party("127.0.0.0/24"),
            trusted: false,
        };
        let block = unit(vec![held_by(2, "127.0.0.0/24")]);
        let mine = unit(vec![held_by(1, "127.0.0.0/24")]);
        let units = [block.clone(), block.clone(), mine.clone()];
        let w = diagnose(5, &me, &units, &i).unwrap();
        assert_eq!(
            (w.cause, w.campaign, w.replicas),
            (WaitCause::AddressBlock, Some(5), 2)
        );
        // One unit it may take: no cause, the next fetch gets it.
        let free = unit(vec![held_by(2, "198.51.100.0/24")]);
        assert_eq!(diagnose(5, &me, &[block, free], &i), None);
        assert_eq!(diagnose(5, &me, &[], &i), None);
    }

    #[test]
    fn a_worker_hears_its_own_result_only_while_no_other_computes() {
        let w = StallWatch::default();
        let t0 = Instant::now();
        let own = Waiting {
            cause: WaitCause::AlreadyComputed,
            campaign: Some(3),
            replicas: 2,
        };
        let nothing = || FetchOutcome::Nothing(vec![own]);
        w.record(1, nothing(), t0);
        assert!(!w.others_busy(1, t0), "alone");
        assert_eq!(told(&[own], w.others_busy(1, t0)), Some(own));
        // Worker 2 computing: it takes the last replicas at its next fetch.
        w.record(2, FetchOutcome::Work, t0);
        assert!(w.others_busy(1, t0) && !w.others_busy(2, t0));
        assert_eq!(told(&[own], w.others_busy(1, t0)), None);
        // A rule that keeps replicas from everyone is still said, also after its own result.
        let block = Waiting {
            cause: WaitCause::AddressBlock,
            campaign: Some(4),
            ..own
        };
        assert_eq!(told(&[block], true), Some(block));
        assert_eq!(told(&[own, block], true), Some(block));
        assert_eq!(told(&[own, block], false), Some(own));
        assert_eq!(told(&[], true), None);
        // Worker 2 idle, or gone (not connected), and worker 1 is told again.
        let later = t0 + CONNECTED;
        assert!(!w.others_busy(1, later));
        w.record(2, nothing(), t0);
        assert!(!w.others_busy(1, t0));
    }

    #[test]
    fn a_stall_needs_every_connected_worker_idle_and_is_recorded_once() {
        let w = StallWatch::default();
        let t0 = Instant::now();
        assert_eq!(w.idle_reports(t0), None, "nobody connected");
        let waiting = |cause| Waiting {
            cause,
            campaign: Some(3),
            replicas: 4,
        };
        w.record(
            1,
            FetchOutcome::Nothing(vec![waiting(WaitCause::AddressBlock)]),
            t0,
        );
        w.record(2, FetchOutcome::Work, t0);
        assert_eq!(w.idle_reports(t0), None, "worker 2 got work");
        w.record(
            2,
            FetchOutcome::Nothing(vec![waiting(WaitCause::AddressBlock)]),
            t0,
        );
        assert_eq!(w.idle_reports(t0).map(|r| r.len()), Some(2));
        // Gone quiet for longer than CONNECTED: nobody connected any more.
        assert_eq!(
            w.idle_reports(t0 + CONNECTED + Duration::from_secs(2)),
            None
        );
        let now = BTreeMap::from([(3, waiting(WaitCause::AddressBlock))]);
        assert_eq!(
            w.changes(&now),
            vec![(3, Some(waiting(WaitCause::AddressBlock)))]
        );
        assert_eq!(w.changes(&now), vec![]);
        assert_eq!(
            w.newly_lasting(t0),
            Vec::<u64>::new(),
            "a fresh stall is no warning"
        );
        assert_eq!(w.newly_lasting(t0 + LASTING), vec![3]);
        assert_eq!(
            w.newly_lasting(t0 + LASTING * 2),
            Vec::<u64>::new(),
            "said once"
        );
        assert_eq!(w.changes(&BTreeMap::new()), vec![(3, None)]);
    }

    #[test]
    fn another_workers_rule_explains_a_stall_before_a_workers_own_result() {
        let w = |cause, replicas| Waiting {
            cause,
            campaign: Some(1),
            replicas,
        };
        let p = CampaignProgress {
            campaign: crate::model::Campaign {
                id: 1,
                kind: crate::model::CampaignKind::Perft,
                engine: None,
                split_ply: 0,
                depth: 2,
                quorum: 2,
                max_results: 4,
                positions: "0-1".into(),
                family: "chess960".into(),
                name: None,
                priority: 0,
                status: CampaignStatus::Active,
                games: None,
                move_nodes: None,
                stall: None,
            },
            total: 2,
            valid: 0,
            failed: 0,
            queued_replicas: 2,
            in_flight: 0,
            nodes_valid: 0,
            nodes_computed: 0,
        };
        let own = [w(WaitCause::AlreadyComputed, 2)];
        let block = [w(WaitCause::AddressBlock, 2)];
        let both = stalled(std::slice::from_ref(&p), &[&own, &own, &block]);
        assert_eq!(both[&1].cause, WaitCause::AddressBlock);
        let alone = stalled(std::slice::from_ref(&p), &[&own]);
        assert_eq!(alone[&1].cause, WaitCause::AlreadyComputed);
        // Something in flight: not stalled.
        let busy = CampaignProgress { in_flight: 1, ..p };
        assert!(stalled(&[busy], &[&block]).is_empty());
    }
}
