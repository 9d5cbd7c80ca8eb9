//! Scheduling decisions in BOINC's model, as pure functions over a workunit's replicas:
//! how many replicas to send out, when a workunit is valid or failed (the transitioner),
//! who may receive a replica, lease deadlines, and when a worker is excluded; and over the
//! campaigns, which campaigns are served first (priority, pause) and how the operator's
//! actions change a campaign's status.

use serde::Serialize;

use crate::model::{CampaignAction, CampaignProgress, CampaignStatus, Digest, ReplicaState};
use crate::work::validator::{self, Vote};

/// What a campaign is doing, in the one vocabulary of the pages, the command line, the status
/// JSON and the exports: `complete` (or `failed`, some workunit failed) once every workunit is
/// done, whatever the operator's status; otherwise `cancelled` or `paused` as the operator set
/// it; `stalled` when no connected worker may take what remains ([`crate::work::stall`]); `running`,
/// or `waiting` until anything was done or leased.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CampaignState {
    /// Nothing done or leased yet.
    Waiting,
    /// Work is leased or done, and more remains.
    Running,
    /// No connected worker may take its remaining replicas.
    Stalled,
    /// Paused by the operator, work remaining.
    Paused,
    /// Cancelled by the operator, work remaining.
    Cancelled,
    /// Every workunit valid.
    Complete,
    /// Every workunit done, some failed.
    Failed,
}

impl CampaignState {
    /// The state of a campaign with this status and these counts.
    pub fn of(
        status: CampaignStatus,
        total: u64,
        valid: u64,
        failed: u64,
        in_flight: u64,
        stalled: bool,
    ) -> CampaignState {
        let remaining = total.saturating_sub(valid + failed);
        match status {
            _ if remaining == 0 && failed > 0 => CampaignState::Failed,
            _ if remaining == 0 => CampaignState::Complete,
            CampaignStatus::Cancelled => CampaignState::Cancelled,
            CampaignStatus::Paused => CampaignState::Paused,
            CampaignStatus::Active if stalled => CampaignState::Stalled,
            CampaignStatus::Active if in_flight == 0 && valid + failed == 0 => {
                CampaignState::Waiting
            }
            CampaignStatus::Active => CampaignState::Running,
        }
    }

    /// The name everywhere.
    pub fn name(self) -> &'static str {
        match self {
            CampaignState::Waiting => "waiting",
            CampaignState::Running => "running",
            CampaignState::Stalled => "stalled",
            CampaignState::Paused => "paused",
            CampaignState::Cancelled => "cancelled",
            CampaignState::Complete => "complete",
            CampaignState::Failed => "failed",
        }
    }
}

impl CampaignProgress {
    /// What the campaign is doing ([`CampaignState`]).
    pub fn state(&self) -> CampaignState {
        CampaignState::of(
            self.campaign.status,
            self.total,
            self.valid,
            self.failed,
            self.in_flight,
            self.campaign.stall.is_some(),
        )
    }
}

/// The status after `action`, or why the action is refused: a cancelled campaign stays
/// cancelled (pausing or resuming it is refused; cancelling it again changes nothing). Pausing
/// a paused campaign and resuming an active one change nothing either.
pub fn apply_action(
    status: CampaignStatus,
    action: CampaignAction,
) -> Result<CampaignStatus, &'static str> {
    match (status, action) {
        (_, CampaignAction::Cancel) => Ok(CampaignStatus::Cancelled),
        (CampaignStatus::Cancelled, _) => Err("the campaign is cancelled for good"),
        (_, CampaignAction::Pause) => Ok(CampaignStatus::Paused),
        (_, CampaignAction::Resume) => Ok(CampaignStatus::Active),
    }
}

/// A campaign as the assignment order sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CampaignSlot {
    /// Id (older campaigns first among equal priorities).
    pub id: u64,
    /// Higher first.
    pub priority: i64,
    /// Only active campaigns are served.
    pub status: CampaignStatus,
}

/// The campaigns whose workunits are handed out, in the order they are served: active ones
/// only, highest priority first, then oldest first. A worker gets the workunits it may take
/// in this order (within a campaign, drawn at random from its lowest ready ids:
/// [`draw_replicas`]).
pub fn serving_order(campaigns: &[CampaignSlot]) -> Vec<u64> {
    let mut active: Vec<&CampaignSlot> = campaigns
        .iter()
        .filter(|c| c.status == CampaignStatus::Active)
        .collect();
    active.sort_by_key(|c| (std::cmp::Reverse(c.priority), c.id));
    active.into_iter().map(|c| c.id).collect()
}

/// One replica as the transitioner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaView {
    /// Result/lease id.
    pub id: u64,
    /// The worker holding or having returned it.
    pub worker_id: u64,
    /// Where it stands.
    pub state: ReplicaState,
    /// Digest when returned.
    pub digest: Option<Digest>,
    /// Whether its worker is trusted (see [`crate::integrity::trust`]).
    pub trusted: bool,
    /// Whether the operator trusts its worker (its own machines: [`crate::integrity::audit`]).
    pub operator: bool,
}

/// What anchors a perft value besides a trusted replica (see [`crate::integrity::trust`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anchor {
    /// Whether a value needs an anchor at all (perft: yes; analysis: quorum only).
    pub required: bool,
    /// The digest the coordinator computed itself, if it checked the workunit.
    pub verified: Option<Digest>,
    /// The total is a public known answer; results that contradict it were refused on
    /// receipt, so every returned total is right.
    pub known_total: bool,
}

impl Anchor {
    /// No anchor needed: quorum alone decides (analysis workunits).
    pub const NONE: Anchor = Anchor {
        required: false,
        verified: None,
        known_total: false,
    };
}

/// How a workunit is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuorumPolicy {
    /// Agreeing results from distinct workers needed.
    pub quorum: u32,
    /// Most results that may come back before the workunit is declared failed.
    pub max_results: u32,
}

/// The transitioner's verdict on a workunit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Not decided; `needed` more replicas should be leased now.
    Pending {
        /// Replicas to issue now (beyond those in progress).
        needed: u32,
    },
    /// A quorum agrees on this digest.
    Valid {
        /// The canonical digest.
        canonical: Digest,
    },
    /// The result cap is reached without a quorum.
    Failed,
    /// A quorum agrees, but on a value nothing anchors (no trusted worker among them, no
    /// check), or two anchored values compete: `needed` more replicas, for trusted workers only.
    /// The store also asks the coordinator to check the workunit itself.
    NeedsTrust {
        /// Replicas to issue now to trusted workers.
        needed: u32,
    },
}

/// The transitioner without anchors: quorum alone decides (analysis workunits).
pub fn transition(policy: QuorumPolicy, replicas: &[ReplicaView]) -> Transition {
    transition_anchored(policy, &Anchor::NONE, replicas)
}

/// The transitioner: decides a workunit's state from its replicas.
///
/// Enough replicas are kept in flight that, if they all agree with the current best group, the
/// quorum is reached; on disagreement this sends one more replica at a time, up to
/// `max_results` returned results, after which the workunit fails rather than burn work forever.
/// With `anchor.required`, a quorum validates only if it is anchored: its digest is the one the
/// coordinator verified, or the total is known, or one of its workers is trusted.
pub fn transition_anchored(
    policy: QuorumPolicy,
    anchor: &Anchor,
    replicas: &[ReplicaView],
) -> Transition {
    let returned: Vec<&ReplicaView> = replicas
        .iter()
        .filter(|r| r.state == ReplicaState::Returned && r.digest.is_some())
        .collect();
    let votes: Vec<Vote> = returned
        .iter()
        .filter_map(|r| {
            r.digest.map(|digest| Vote {
                worker_id: r.worker_id,
                digest,
            })
        })
        .collect();
    let quorum = policy.quorum.max(1);
    if !anchor.required
        && let Some(canonical) = validator::find_quorum(quorum, &votes)
    {
        return Transition::Valid { canonical };
    }
    let anchored = |d: &Digest| {
        !anchor.required
            || match anchor.verified {
                Some(v) => v == *d,
                None => {
                    anchor.known_total
                        || returned
                            .iter()
                            .any(|r| r.trusted && r.digest.as_ref() == Some(d))
                }
            }
    };
    let groups = validator::quorum_groups(quorum, &votes);
    let winners: Vec<Digest> = groups.iter().copied().filter(|d| anchored(d)).collect();
    let in_progress: Vec<&ReplicaView> = replicas
        .iter()
        .filter(|r| r.state == ReplicaState::InProgress)
        .collect();
    let cap = policy.max_results.max(quorum);
    let returned = votes.len() as u32;
    // The cap fails a workunit only on trusted workers' results: results of untrusted ones
    // (griefers sending a different fabrication each) beyond it hand the workunit to trusted
    // workers and the coordinator's check instead.
    let trusted_returned = returned_views(replicas).filter(|r| r.trusted).count() as u32;
    let trusted_busy = in_progress.iter().any(|r| r.trusted);
    let at_cap = || {
        if trusted_returned >= cap {
            Transition::Failed
        } else {
            Transition::NeedsTrust {
                needed: u32::from(!trusted_busy),
            }
        }
    };
    let room = cap
        .saturating_sub(returned)
        .saturating_sub((in_progress.len() as u32).min(cap.saturating_sub(returned)));
    match winners.as_slice() {
        [one] => return Transition::Valid { canonical: *one },
        // A checked workunit needs no trusted worker: any right answer matches the check.
        [] if groups.is_empty() || anchor.verified.is_some() => {}
        _ => {
            // An unanchored agreement (or competing anchored ones): only a trusted worker or the
            // coordinator's own check may settle it.
            if returned >= cap {
                return at_cap();
            }
            let needed = if trusted_busy { 0 } else { 1u32.min(room) };
            return Transition::NeedsTrust { needed };
        }
    }
    if returned >= cap {
        return at_cap();
    }
    let in_progress = in_progress.len() as u32;
    let best = match anchor.verified {
        Some(v) => votes
            .iter()
            .filter(|x| x.digest == v)
            .map(|x| x.worker_id)
            .collect::<std::collections::BTreeSet<u64>>()
            .len() as u32,
        None => validator::best_agreement(&votes),
    };
    let missing = quorum - best.min(quorum);
    let needed = missing.saturating_sub(in_progress).min(room);
    if needed == 0 && in_progress == 0 {
        // Cannot happen with cap ≥ quorum, but never leave a workunit stuck open.
        return Transition::Failed;
    }
    Transition::Pending { needed }
}

/// The returned replicas with a digest (the votes).
fn returned_views(replicas: &[ReplicaView]) -> impl Iterator<Item = &ReplicaView> {
    replicas
        .iter()
        .filter(|r| r.state == ReplicaState::Returned && r.digest.is_some())
}

/// BOINC's one-result-per-user rule: a worker may not receive a replica of a workunit for
/// which it holds a lease or has already returned (or botched) a result. Expired and abandoned
/// replicas do not count, so a worker that crashed may pick the workunit up again.
pub fn may_receive(worker_id: u64, replicas: &[ReplicaView]) -> bool {
    !replicas.iter().any(|r| {
        r.worker_id == worker_id
            && matches!(
                r.state,
                ReplicaState::InProgress | ReplicaState::Returned | ReplicaState::Error
            )
    })
}

/// How many ready workunits of a campaign the assignment reads to draw a batch of `want` from
/// ([`draw_replicas`]): at least `min_pool` ([`crate::integrity::trust::Integrity::draw_pool`]), and
/// eight times the batch; just `want` when `min_pool` is 0 (in order, no draw).
pub fn draw_pool(want: u64, min_pool: u64) -> u64 {
    if min_pool == 0 {
        want
    } else {
        want.saturating_mul(8).max(min_pool)
    }
}

/// `serve`'s smallest pool of ready workunits a batch is drawn from (`--draw-pool`).
pub const DRAW_POOL: u64 = 64;

/// Which of `pool` ready workunits (the campaign's lowest ids: half-issued and fresh ones alike)
/// a worker gets, `want` of them drawn uniformly at random (in pool order). Why at random: if
/// the lowest ids were handed out in order, two colluders fetching back to back would hold both
/// replicas of every fresh workunit; drawn from a pool, the second replica of a workunit goes to
/// whichever worker draws it, so a party of `c` among `w` equally fast workers holds a whole
/// quorum of 2 on about `(c / w)²` of the workunits, by chance, not by timing.
pub fn draw_replicas(pool: usize, want: usize, rng: &mut impl rand::Rng) -> Vec<usize> {
    if want >= pool {
        return (0..pool).collect();
    }
    let mut picked = rand::seq::index::sample(rng, pool, want).into_vec();
    picked.sort_unstable();
    picked
}

/// The deadline of a lease issued at `now_ms`.
pub fn lease_deadline(now_ms: i64, lease_ms: i64) -> i64 {
    now_ms.saturating_add(lease_ms.max(1))
}

/// The deadline by which a lease issued or renewed at `now_ms` must be renewed again (or
/// answered): `renewal_ms` from now, never past the lease's whole life `hard_deadline_ms`
/// (`renewal_ms` 0: no renewals, the whole life).
pub fn renewal_deadline(now_ms: i64, renewal_ms: u64, hard_deadline_ms: i64) -> i64 {
    if renewal_ms == 0 {
        return hard_deadline_ms;
    }
    let renewal = i64::try_from(renewal_ms).unwrap_or(i64::MAX);
    now_ms.saturating_add(renewal).min(hard_deadline_ms)
}

/// Whether a lease with this deadline has expired at `now_ms`.
pub fn is_expired(deadline_ms: i64, now_ms: i64) -> bool {
    now_ms > deadline_ms
}

/// The verdict on one returned result once the canonical digest is known.
pub fn agrees(canonical: &Digest, digest: &Digest) -> bool {
    canonical == digest
}

#[cfg(test)]
mod campaign_tests {
    use super::*;

    #[test]
    fn active_campaigns_are_served_by_priority_then_age() {
        let c = |id, priority, status| CampaignSlot {
            id,
            priority,
            status,
        };
        let order = serving_order(&[
            c(1, 0, CampaignStatus::Active),
            c(2, 5, CampaignStatus::Active),
            c(3, 5, CampaignStatus::Paused),
            c(4, -1, CampaignStatus::Active),
            c(5, 5, CampaignStatus::Active),
            c(6, 9, CampaignStatus::Cancelled),
        ]);
        assert_eq!(order, [2, 5, 1, 4]);
        assert!(serving_order(&[]).is_empty());
    }

    #[test]
    fn a_cancelled_campaign_stays_cancelled() {
        use CampaignAction::*;
        use CampaignStatus::*;
        assert_eq!(apply_action(Active, Pause), Ok(Paused));
        assert_eq!(apply_action(Paused, Pause), Ok(Paused));
        assert_eq!(apply_action(Paused, Resume), Ok(Active));
        assert_eq!(apply_action(Active, Resume), Ok(Active));
        assert_eq!(apply_action(Paused, Cancel), Ok(Cancelled));
        assert_eq!(apply_action(Cancelled, Cancel), Ok(Cancelled));
        assert!(apply_action(Cancelled, Resume).is_err());
        assert!(apply_action(Cancelled, Pause).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: QuorumPolicy = QuorumPolicy {
        quorum: 2,
        max_results: 4,
    };

    fn r(id: u64, worker_id: u64, state: ReplicaState, d: Option<u8>) -> ReplicaView {
        ReplicaView {
            id,
            worker_id,
            state,
            digest: d.map(|d| [d; 32]),
            trusted: false,
            operator: false,
        }
    }
    use ReplicaState::*;

    #[test]
    fn fresh_workunit_wants_quorum_replicas() {
        assert_eq!(transition(P, &[]), Transition::Pending { needed: 2 });
        assert_eq!(
            transition(P, &[r(1, 1, InProgress, None)]),
            Transition::Pending { needed: 1 }
        );
        let both = [r(1, 1, InProgress, None), r(2, 2, InProgress, None)];
        assert_eq!(transition(P, &both), Transition::Pending { needed: 0 });
    }

    #[test]
    fn agreement_validates() {
        let rs = [r(1, 1, Returned, Some(5)), r(2, 2, Returned, Some(5))];
        assert_eq!(transition(P, &rs), Transition::Valid { canonical: [5; 32] });
    }

    #[test]
    fn same_worker_twice_is_not_a_quorum() {
        let rs = [r(1, 1, Returned, Some(5)), r(2, 1, Returned, Some(5))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
    }

    #[test]
    fn disagreement_sends_one_more_then_fails_at_cap() {
        let mut rs = vec![r(1, 1, Returned, Some(1)), r(2, 2, Returned, Some(2))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        rs.push(r(3, 3, Returned, Some(3)));
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        rs.push(r(4, 4, Returned, Some(4)));
        // At the cap on untrusted results (griefers, each with its own fabrication): trusted
        // workers and the coordinator's check decide, one trusted replica at a time.
        assert_eq!(transition(P, &rs), Transition::NeedsTrust { needed: 1 });
        let mut busy = rs.clone();
        busy.push(t(5, 5, InProgress, None));
        assert_eq!(transition(P, &busy), Transition::NeedsTrust { needed: 0 });
        // Trusted workers that cannot agree either: the workunit fails.
        let trusted: Vec<ReplicaView> = rs
            .iter()
            .map(|x| ReplicaView {
                trusted: true,
                ..*x
            })
            .collect();
        assert_eq!(transition(P, &trusted), Transition::Failed);
        // A third agreeing result rescues it before the cap.
        let rs = [
            r(1, 1, Returned, Some(1)),
            r(2, 2, Returned, Some(2)),
            r(3, 3, Returned, Some(2)),
        ];
        assert_eq!(transition(P, &rs), Transition::Valid { canonical: [2; 32] });
    }

    #[test]
    fn expired_and_refused_replicas_are_replaced() {
        let rs = [r(1, 1, Expired, None), r(2, 2, InProgress, None)];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        let rs = [r(1, 1, Error, None), r(2, 2, Returned, Some(1))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        let rs = [r(1, 1, Abandoned, None)];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 2 });
    }

    #[test]
    fn never_issues_past_the_cap() {
        let rs = [
            r(1, 1, Returned, Some(1)),
            r(2, 2, Returned, Some(2)),
            r(3, 3, Returned, Some(3)),
            r(4, 4, InProgress, None),
        ];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 0 });
    }

    #[test]
    fn one_replica_per_worker() {
        let rs = [
            r(1, 1, InProgress, None),
            r(2, 2, Returned, Some(1)),
            r(3, 3, Expired, None),
            r(4, 4, Error, None),
        ];
        assert!(!may_receive(1, &rs));
        assert!(!may_receive(2, &rs));
        assert!(may_receive(3, &rs));
        assert!(!may_receive(4, &rs));
        assert!(may_receive(5, &rs));
    }

    #[test]
    fn replicas_are_drawn_from_a_pool() {
        let mut rng = rand::rng();
        assert_eq!(draw_replicas(3, 8, &mut rng), [0, 1, 2]);
        assert_eq!(draw_pool(1, DRAW_POOL), DRAW_POOL);
        assert_eq!(draw_pool(64, DRAW_POOL), 512);
        assert_eq!(draw_pool(5, 0), 5, "in order");
        // Every workunit of the pool is drawn about equally often (a back-to-back fetch does
        // not get the one the previous fetch half-issued).
        let mut hits = [0u32; 64];
        for _ in 0..20_000 {
            let d = draw_replicas(64, 8, &mut rng);
            assert_eq!(d.len(), 8);
            assert!(d.windows(2).all(|w| w[0] < w[1]));
            for i in d {
                hits[i] += 1;
            }
        }
        // 2,500 expected each; 6 sigma is about 280.
        assert!(
            hits.iter().all(|&h| (2_200..2_800).contains(&h)),
            "{hits:?}"
        );
    }

    #[test]
    fn leases_and_exclusion() {
        assert_eq!(lease_deadline(1000, 500), 1500);
        // Renewals bring the deadline near, never past the whole life.
        assert_eq!(renewal_deadline(1000, 90, 5000), 1090);
        assert_eq!(renewal_deadline(4950, 90, 5000), 5000);
        assert_eq!(renewal_deadline(1000, 0, 5000), 5000);
        assert_eq!(renewal_deadline(i64::MAX - 1, u64::MAX, i64::MAX), i64::MAX);
        assert!(!is_expired(1500, 1500));
        assert!(is_expired(1500, 1501));
    }

    fn t(id: u64, worker_id: u64, state: ReplicaState, d: Option<u8>) -> ReplicaView {
        ReplicaView {
            trusted: true,
            ..r(id, worker_id, state, d)
        }
    }

    const PERFT: Anchor = Anchor {
        required: true,
        verified: None,
        known_total: false,
    };

    #[test]
    fn an_unanchored_quorum_waits_for_trust() {
        let liars = [r(1, 1, Returned, Some(6)), r(2, 2, Returned, Some(6))];
        assert_eq!(
            transition_anchored(P, &PERFT, &liars),
            Transition::NeedsTrust { needed: 1 }
        );
        let mut busy = liars.to_vec();
        busy.push(t(3, 3, InProgress, None));
        assert_eq!(
            transition_anchored(P, &PERFT, &busy),
            Transition::NeedsTrust { needed: 0 }
        );
        // Without an anchor requirement (analysis), quorum alone decides as before.
        assert_eq!(
            transition_anchored(P, &Anchor::NONE, &liars),
            Transition::Valid { canonical: [6; 32] }
        );
        let known = Anchor {
            known_total: true,
            ..PERFT
        };
        assert_eq!(
            transition_anchored(P, &known, &liars),
            Transition::Valid { canonical: [6; 32] }
        );
    }

    #[test]
    fn trust_or_a_check_anchors_and_a_check_overrules() {
        let rs = [r(1, 1, Returned, Some(5)), t(2, 2, Returned, Some(5))];
        assert_eq!(
            transition_anchored(P, &PERFT, &rs),
            Transition::Valid { canonical: [5; 32] }
        );
        // The coordinator's own digest says 7: the trusted agreement on 5 is not enough.
        let checked = Anchor {
            verified: Some([7; 32]),
            ..PERFT
        };
        assert_eq!(
            transition_anchored(P, &checked, &rs),
            Transition::Pending { needed: 2 }
        );
        let untrusted = [r(1, 1, Returned, Some(7)), r(2, 2, Returned, Some(7))];
        assert_eq!(
            transition_anchored(P, &checked, &untrusted),
            Transition::Valid { canonical: [7; 32] }
        );
        // Two anchored values at quorum (a trusted liar): nothing is decided by size.
        let split = [
            t(1, 1, Returned, Some(1)),
            r(2, 2, Returned, Some(1)),
            t(3, 3, Returned, Some(2)),
        ];
        let q2cap5 = QuorumPolicy {
            quorum: 2,
            max_results: 5,
        };
        let mut rs = split.to_vec();
        rs.push(r(4, 4, Returned, Some(2)));
        assert_eq!(
            transition_anchored(q2cap5, &PERFT, &rs),
            Transition::NeedsTrust { needed: 1 }
        );
    }
}
