//! Audits of validated values: the pure rules. A quorum of agreeing workers makes a value valid;
//! an audit is an independent computation of the same workunit afterwards, which the workers
//! cannot tell from any other: the coordinator's own (its checker thread, within its budget) or,
//! where the coordinator cannot compute it, one more hidden replica for another randomly drawn
//! worker (the workunit then needs its quorum plus that replica, all agreeing). A coordinator
//! audit that disagrees overturns the value: it reopens, the workers behind it fail a check
//! (quarantine), and everything they ever validated is re-verified.
//!
//! Why audit what a quorum already agreed on: the quorum's workers may be one party that earned
//! trust patiently and lies once it holds a whole quorum (replicas are drawn at random,
//! [`crate::work::transitioner::draw_replicas`], so that happens by chance, on about (colluders /
//! workers)² of the workunits). Against such a party only an independent computation of the
//! very workunit it lied on helps: the expected number of lies left in a table is the number of
//! lies times the chance that none of them is audited, which is 0 where every value is audited
//! and at most `(1 - a)` per lie where a share `a` is. The derivation and the figures are in
//! docs/security-results.md ("Issue 30").

use crate::integrity::trust::Integrity;

/// What anchors a value that just became valid, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditBasis {
    /// The coordinator computed it and agrees.
    Verified,
    /// A worker the operator trusts is among the agreeing ones (the operator's own machines).
    Operator,
    /// A worker that earned its trust is among them.
    Earned,
    /// Nothing but the quorum: untrusted workers, whose total may be a public answer (which
    /// anchors the total, not the divide) or whose kind needs no anchor (analyses, games).
    Quorum,
}

impl AuditBasis {
    /// The basis of a value from what is known of it: whether the coordinator's own digest is
    /// the value, and the trust of the agreeing workers (`operator`, `trusted`: any of them).
    pub fn of(verified: bool, operator: bool, trusted: bool) -> AuditBasis {
        if verified {
            AuditBasis::Verified
        } else if operator {
            AuditBasis::Operator
        } else if trusted {
            AuditBasis::Earned
        } else {
            AuditBasis::Quorum
        }
    }
}

/// What follows a value's validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditPick {
    /// Nothing.
    None,
    /// The re-split cross-check: perft children one ply deeper, counted by the coordinator on
    /// another code path ([`crate::integrity::checker::resplit`]).
    Resplit,
    /// An audit: the coordinator computes the workunit, or hands it to another worker.
    Audit,
}

/// Whether a value just validated on `basis` is audited, given a uniform draw in
/// `0..1_000_000`. Values the coordinator computed itself or the operator's machines vouch for
/// are only cross-checked at the re-split rate (perft without a public total: `resplittable`);
/// everything else is audited at [`Integrity::audit_rate_ppm`] (every value, by default).
pub fn pick(
    basis: AuditBasis,
    resplittable: bool,
    draw_ppm: u64,
    integrity: &Integrity,
) -> AuditPick {
    match basis {
        AuditBasis::Verified | AuditBasis::Operator => {
            if resplittable && crate::integrity::trust::picks_resplit(draw_ppm, integrity) {
                AuditPick::Resplit
            } else {
                AuditPick::None
            }
        }
        AuditBasis::Earned | AuditBasis::Quorum if draw_ppm < integrity.audit_rate_ppm => {
            AuditPick::Audit
        }
        AuditBasis::Earned | AuditBasis::Quorum => AuditPick::None,
    }
}

/// Who computes an audit ([`AuditPick::Audit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditRoute {
    /// The coordinator, on its checker thread (within its budget; over it, see
    /// [`unaffordable`]).
    Coordinator,
    /// One more hidden replica for another randomly drawn worker, issued once the quorum has
    /// agreed: the value reopens until its quorum and that replica agree, and a replica that
    /// disagrees starts a dispute ([`crate::integrity::referee`]) that convicts whoever is wrong.
    Replica,
}

/// Who audits a value, given whether another worker is at work to take a replica (`crowd`:
/// with two workers on one machine there is none, and the value would wait for nobody) and a
/// uniform draw in `0..1_000_000`: the crowd, except for the coordinator's own random sample
/// ([`Integrity::audit_sample_ppm`]).
pub fn route(crowd: bool, draw_ppm: u64, integrity: &Integrity) -> AuditRoute {
    if crowd && draw_ppm >= integrity.audit_sample_ppm {
        AuditRoute::Replica
    } else {
        AuditRoute::Coordinator
    }
}

/// Where a valid value stands with the coordinator's own computations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckStanding {
    /// The coordinator computed it: its digest is the truth.
    Proven,
    /// A computation of the coordinator's is queued (a check, a re-split or an audit): it will
    /// prove the value or overturn it, and an overturn quarantines the workers behind a lie.
    Pending,
    /// Nothing of the coordinator's is coming (never asked, over its budget, or done by a
    /// replica).
    Unproven,
}

/// Whether a sub-unit of a split start whose values miss the start's published total is
/// recounted by one more hidden replica ([`crate::store`]'s `check_split_totals`). A proven
/// value is right; a value with a computation of the coordinator's queued keeps it, since only
/// that computation is evidence against the workers behind a lie (a replica that disagrees
/// outvotes them, which is no evidence: [`crate::integrity::trust::is_excluded`]), and one that comes back
/// over budget is recounted then ([`recounted_on_missed_total`] again); a value a replica
/// audited already is not recounted twice.
pub fn recounted_on_missed_total(standing: CheckStanding, audited_by_replica: bool) -> bool {
    standing == CheckStanding::Unproven && !audited_by_replica
}

/// What an audit becomes when the coordinator cannot compute it (over its budget, or of an
/// engine it does not run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditPath {
    /// One more hidden replica, for another randomly drawn worker; the value reopens until its
    /// quorum and that replica agree.
    Replica,
    /// Left as it is, and said so: the exports and pages call it `unaudited`.
    Unaudited,
}

/// The path of an audit the coordinator cannot compute (over its budget, or of an engine it
/// does not run): one more hidden replica when someone other than the value's workers is at work
/// to take it (`crowd`), otherwise left `unaudited` and said so (a replica nobody can take would
/// keep the campaign open for nobody).
pub fn unaffordable(crowd: bool) -> AuditPath {
    if crowd {
        AuditPath::Replica
    } else {
        AuditPath::Unaudited
    }
}

/// The expected number of wrong values a party leaves in a table when it lies on `lies`
/// workunits it holds whole and each is audited with probability `audit` (an audit that
/// catches one lie re-verifies them all): `lies · (1 - audit)^lies`. Largest at
/// `lies = -1 / ln(1 - audit)`; at most `1 - audit` for a single lie.
pub fn expected_wrong(lies: f64, audit: f64) -> f64 {
    lies * (1.0 - audit).powf(lies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missed_total_recounts_only_what_nothing_will_prove() {
        use CheckStanding::*;
        assert!(recounted_on_missed_total(Unproven, false));
        assert!(!recounted_on_missed_total(Unproven, true));
        assert!(!recounted_on_missed_total(Pending, false));
        assert!(!recounted_on_missed_total(Proven, false));
    }

    #[test]
    fn what_is_audited() {
        let i = Integrity {
            resplit_rate_ppm: 10_000,
            audit_rate_ppm: 1_000_000,
            ..Integrity::default()
        };
        assert_eq!(AuditBasis::of(true, true, true), AuditBasis::Verified);
        assert_eq!(AuditBasis::of(false, true, true), AuditBasis::Operator);
        assert_eq!(AuditBasis::of(false, false, true), AuditBasis::Earned);
        assert_eq!(AuditBasis::of(false, false, false), AuditBasis::Quorum);
        // By default every value of earned trust or a bare quorum is audited, whatever the draw.
        for draw in [0, 500_000, 999_999] {
            assert_eq!(pick(AuditBasis::Earned, true, draw, &i), AuditPick::Audit);
            assert_eq!(pick(AuditBasis::Quorum, false, draw, &i), AuditPick::Audit);
        }
        // The operator's machines and the coordinator's own values: the re-split rate.
        assert_eq!(
            pick(AuditBasis::Operator, true, 9_999, &i),
            AuditPick::Resplit
        );
        assert_eq!(
            pick(AuditBasis::Operator, true, 10_000, &i),
            AuditPick::None
        );
        assert_eq!(pick(AuditBasis::Verified, false, 0, &i), AuditPick::None);
        let sparse = Integrity {
            audit_rate_ppm: 100_000,
            ..i
        };
        assert_eq!(
            pick(AuditBasis::Earned, true, 99_999, &sparse),
            AuditPick::Audit
        );
        assert_eq!(
            pick(AuditBasis::Earned, true, 100_000, &sparse),
            AuditPick::None
        );
    }

    #[test]
    fn unaffordable_audits_go_to_the_crowd_when_there_is_one() {
        assert_eq!(unaffordable(true), AuditPath::Replica);
        assert_eq!(unaffordable(false), AuditPath::Unaudited);
    }

    #[test]
    fn audits_go_to_the_crowd_but_for_the_coordinators_sample() {
        let i = Integrity {
            audit_sample_ppm: 20_000,
            ..Integrity::default()
        };
        assert_eq!(route(true, 20_000, &i), AuditRoute::Replica);
        assert_eq!(route(true, 19_999, &i), AuditRoute::Coordinator);
        // Nobody else at work: the coordinator, whatever the draw.
        assert_eq!(route(false, 999_999, &i), AuditRoute::Coordinator);
    }

    #[test]
    fn the_bound() {
        assert_eq!(expected_wrong(1.0, 1.0), 0.0);
        assert!((expected_wrong(1.0, 0.1) - 0.9).abs() < 1e-12);
        // A party that lies on all 200 workunits it holds whole in a 5,000-unit campaign at 20 %
        // colluders (0.2² × 5,000), with one in ten audited: caught almost surely.
        assert!(expected_wrong(200.0, 0.1) < 1e-6);
    }
}
