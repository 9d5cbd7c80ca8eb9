//! Agreements nothing anchors: the pure rules. A perft value is valid only on an anchored
//! quorum (a public total, the coordinator's own digest, or a trusted worker among the agreeing
//! ones: [`crate::work::transitioner::transition_anchored`]), because identities are free and a
//! quorum of fresh ones may be one party. Where nothing anchors an agreement (a family without
//! published totals, a split sub-unit, fresh workers), the coordinator used to recount every one
//! itself: a campaign of fresh volunteers was computed twice over, once by the server (issue 54:
//! 100.9 % of the nodes of shuffle perft(5) with four fresh workers).
//!
//! Now such an agreement waits for its workers' trust, where other workers are at work:
//! - the coordinator asks for a check of one result of each untrusted worker every
//!   [`Integrity::trust_check_spacing_ms`] ([`trust_check_due`]): exactly the checks that count
//!   towards trust ([`super::trust::counts_towards_trust`]), so a newcomer earns it as fast as
//!   before and the server computes a few workunits per worker, not the campaign;
//! - once one of the agreeing workers is trusted, the agreement is anchored by it as if that
//!   worker had computed it after earning trust, and is audited like every value anchored by
//!   earned trust (by another worker's hidden replica, bisection convicting whoever is wrong:
//!   [`super::audit`]). A party gains nothing from lies told before its trust: they are anchored
//!   and audited exactly like lies told after it;
//! - a random sample ([`Integrity::unanchored_sample_ppm`]) is still checked at once, and so is
//!   every such agreement when no other worker is at work ([`checked_at_once`]): two workers on
//!   one machine have no crowd to audit them, the coordinator would audit each value anyway, and
//!   their campaign must not wait for trust it cannot use.

use super::trust::Integrity;

/// Whether an agreement nothing anchors is checked by the coordinator as soon as it forms,
/// given whether another worker than the agreeing ones is at work (`crowd`) and a uniform draw
/// in `0..1_000_000`; otherwise it waits for its workers' trust.
pub fn checked_at_once(crowd: bool, draw_ppm: u64, integrity: &Integrity) -> bool {
    !crowd || draw_ppm < integrity.unanchored_sample_ppm
}

/// Whether agreements nothing anchors ever wait for trust under these settings: not where every
/// one is checked at once (the default of the store's tests), whose checks grow trust anyway.
pub fn waits_for_trust(integrity: &Integrity) -> bool {
    integrity.unanchored_sample_ppm < 1_000_000
}

/// Whether the coordinator asks now for a check of one of an untrusted worker's results, so
/// that its trust grows, the last such ask having been at `asked_ms`: one per
/// [`Integrity::trust_check_spacing_ms`] (a check passed sooner after the last counted one does
/// not count), only where agreements wait for trust ([`waits_for_trust`]).
pub fn trust_check_due(
    trusted: bool,
    asked_ms: Option<i64>,
    now_ms: i64,
    integrity: &Integrity,
) -> bool {
    let spacing = i64::try_from(integrity.trust_check_spacing_ms).unwrap_or(i64::MAX);
    !trusted
        && waits_for_trust(integrity)
        && asked_ms.is_none_or(|asked| now_ms.saturating_sub(asked) >= spacing)
}

/// What one sweep of the waiting agreements did (`Store::sweep_waiting_agreements`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Waiting agreements one of whose workers is trusted now that the transitioner settled.
    pub anchored: u64,
    /// Checks asked for (trust checks due, agreements without another worker at work).
    pub asked: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve() -> Integrity {
        Integrity {
            unanchored_sample_ppm: 20_000,
            trust_check_spacing_ms: 20_000,
            ..Integrity::default()
        }
    }

    #[test]
    fn a_sample_is_checked_at_once_and_everything_without_a_crowd() {
        let i = serve();
        assert!(checked_at_once(true, 19_999, &i));
        assert!(!checked_at_once(true, 20_000, &i));
        assert!(!checked_at_once(true, 999_999, &i));
        assert!(checked_at_once(false, 999_999, &i), "no crowd: at once");
        let all = Integrity::default();
        assert!(checked_at_once(true, 999_999, &all));
        assert!(!waits_for_trust(&all));
        assert!(waits_for_trust(&i));
    }

    #[test]
    fn one_trust_check_is_asked_per_spacing_and_none_for_the_trusted() {
        let i = serve();
        assert!(trust_check_due(false, None, 5, &i));
        assert!(!trust_check_due(false, Some(1_000), 20_999, &i));
        assert!(trust_check_due(false, Some(1_000), 21_000, &i));
        assert!(
            !trust_check_due(true, None, 5, &i),
            "trusted: nothing to earn"
        );
        assert!(
            !trust_check_due(false, None, 5, &Integrity::default()),
            "every agreement checked at once: no asks"
        );
    }
}
