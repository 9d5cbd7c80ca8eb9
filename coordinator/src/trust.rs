//! Trust before influence: the pure rules of c960's integrity mechanism against colluding,
//! fast sybil workers. No I/O; the store applies them inside its transactions.
//!
//! - A perft value becomes valid only when a quorum of distinct workers agree on its digest
//!   *and* the value is anchored: one of the agreeing workers is trusted, or the coordinator
//!   computed the workunit itself (a check), or the total is a public known answer.
//! - Trust is earned only from secret checks (real workunits the coordinator recomputed), never
//!   from public known answers (a liar can look those up) or from agreeing with others. It grows
//!   slowly ([`Integrity::trust_after_checks`] passed checks), and is lost at once on a failed
//!   check, which is also evidence for quarantine. The operator can grant trust.
//! - Losing a vote is no evidence: only a failed check (a wrong answer to a known or secret
//!   check, an implausibly fast answer) or a refused result is.
//! - Untrusted workers are checked more often and hold fewer leases at once.

use std::net::IpAddr;

/// The operator's settings of the integrity mechanism, stored with the store's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Integrity {
    /// Secret checks a worker must pass to become trusted.
    pub trust_after_checks: u64,
    /// Chance (parts per million) that a result of an untrusted worker is checked.
    pub check_rate_untrusted_ppm: u64,
    /// Chance (parts per million) that a result of a trusted worker is checked.
    pub check_rate_trusted_ppm: u64,
    /// Open leases an untrusted worker may hold (doubles with each passed check, up to the
    /// coordinator's cap for everyone).
    pub untrusted_lease_cap: u64,
    /// Replicas of one workunit never go to two workers that share an address block.
    pub separate_address_blocks: bool,
    /// Open leases all workers of one address block may hold together (0: no cap).
    pub block_lease_cap: u64,
    /// The fastest plausible rate of a result, nodes per second from lease to receipt (0: off).
    pub max_nodes_per_sec: u64,
    /// Workers registered within this many milliseconds of each other from one address block
    /// count as one party for replicas even where blocks do not separate (0: off).
    pub registration_burst_ms: u64,
    /// Chance (parts per million) that a validated perft value without a public answer is
    /// re-split one ply deeper and recounted by the coordinator ([`picks_resplit`]). Off by
    /// default here (tests count checks); `serve` turns it on (`--resplit-rate`).
    pub resplit_rate_ppm: u64,
}

impl Default for Integrity {
    fn default() -> Self {
        Integrity {
            trust_after_checks: 3,
            check_rate_untrusted_ppm: 250_000,
            check_rate_trusted_ppm: 20_000,
            untrusted_lease_cap: 4,
            separate_address_blocks: true,
            block_lease_cap: 512,
            max_nodes_per_sec: 20_000_000_000,
            registration_burst_ms: 0,
            resplit_rate_ppm: 0,
        }
    }
}

impl Integrity {
    /// The settings as (key, value) pairs for the store's settings table.
    pub fn to_settings(&self) -> [(&'static str, u64); 9] {
        [
            ("trust_after_checks", self.trust_after_checks),
            ("check_rate_untrusted_ppm", self.check_rate_untrusted_ppm),
            ("check_rate_trusted_ppm", self.check_rate_trusted_ppm),
            ("untrusted_lease_cap", self.untrusted_lease_cap),
            (
                "separate_address_blocks",
                u64::from(self.separate_address_blocks),
            ),
            ("block_lease_cap", self.block_lease_cap),
            ("max_nodes_per_sec", self.max_nodes_per_sec),
            ("registration_burst_ms", self.registration_burst_ms),
            ("resplit_rate_ppm", self.resplit_rate_ppm),
        ]
    }

    /// The settings from stored (key, value) pairs; missing keys keep their defaults.
    pub fn from_settings<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> Integrity {
        let mut i = Integrity::default();
        for (k, v) in pairs {
            match k {
                "trust_after_checks" => i.trust_after_checks = v,
                "check_rate_untrusted_ppm" => i.check_rate_untrusted_ppm = v,
                "check_rate_trusted_ppm" => i.check_rate_trusted_ppm = v,
                "untrusted_lease_cap" => i.untrusted_lease_cap = v,
                "separate_address_blocks" => i.separate_address_blocks = v != 0,
                "block_lease_cap" => i.block_lease_cap = v,
                "max_nodes_per_sec" => i.max_nodes_per_sec = v,
                "registration_burst_ms" => i.registration_burst_ms = v,
                "resplit_rate_ppm" => i.resplit_rate_ppm = v,
                _ => {}
            }
        }
        i
    }
}

/// How far a worker is trusted, as stored in `workers.trusted`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TrustLevel {
    /// New, or lost its trust: its results count only with a trusted or checked peer.
    Untrusted = 0,
    /// Passed enough secret checks.
    Earned = 1,
    /// Granted by the operator (`worker trust`, and `run`'s own local workers).
    Operator = 2,
}

impl TrustLevel {
    /// Whether results of this worker anchor a value.
    pub fn is_trusted(self) -> bool {
        self != TrustLevel::Untrusted
    }

    /// The name shown on the status page.
    pub fn name(self) -> &'static str {
        match self {
            TrustLevel::Untrusted => "untrusted",
            TrustLevel::Earned => "earned",
            TrustLevel::Operator => "operator",
        }
    }
}

/// The trust level after a passed check: earned once `passed` (including this one) reaches the
/// threshold, never above what it was if that was higher.
pub fn after_passed_check(level: TrustLevel, passed: u64, integrity: &Integrity) -> TrustLevel {
    if level == TrustLevel::Untrusted && passed >= integrity.trust_after_checks {
        TrustLevel::Earned
    } else {
        level
    }
}

/// Whether the worker gets no more work: any failed check (evidence of a wrong answer), or
/// `refused` malformed results reaching `max_strikes`. `max_strikes == 0` disables automatic
/// quarantine. Lost votes are not an argument: an honest worker outvoted by colluding liars
/// must never be punished.
pub fn is_excluded(checks_failed: u64, refused: u64, max_strikes: u64) -> bool {
    max_strikes > 0 && (checks_failed > 0 || refused + checks_failed >= max_strikes)
}

/// A worker's standing once evidence against it was withdrawn (a check it failed was
/// overturned: the value it was checked against turned out wrong). Returns the trust level and
/// whether the worker stays quarantined. A ban is the operator's and stays; a quarantine is
/// lifted once what is left of the evidence no longer excludes ([`is_excluded`]); trust is
/// earned back from the checks passed, but only with no failed check left (operator trust was
/// the operator's grant and is not re-granted by itself).
pub fn standing_after_rollback(
    level: TrustLevel,
    checks_passed: u64,
    checks_failed: u64,
    refused: u64,
    banned: bool,
    max_strikes: u64,
    integrity: &Integrity,
) -> (TrustLevel, bool) {
    let quarantined = banned || is_excluded(checks_failed, refused, max_strikes);
    let level = if checks_failed == 0 {
        after_passed_check(level, checks_passed, integrity)
    } else {
        TrustLevel::Untrusted
    };
    (level, quarantined)
}

/// The open leases a worker may hold: the coordinator's cap (`cap`, 0: none) for trusted
/// workers; for untrusted ones the small cap, doubled for each check passed so far.
pub fn lease_cap(level: TrustLevel, checks_passed: u64, cap: u64, integrity: &Integrity) -> u64 {
    if level.is_trusted() || integrity.untrusted_lease_cap == 0 {
        return cap;
    }
    let grown = integrity
        .untrusted_lease_cap
        .saturating_mul(1u64 << checks_passed.min(20));
    if cap == 0 { grown } else { grown.min(cap) }
}

/// Whether a result of a worker at this level is picked for a secret check, given a uniform
/// random draw in `0..1_000_000`.
pub fn picks_check(level: TrustLevel, draw_ppm: u64, integrity: &Integrity) -> bool {
    let rate = if level.is_trusted() {
        integrity.check_rate_trusted_ppm
    } else {
        integrity.check_rate_untrusted_ppm
    };
    draw_ppm < rate
}

/// Whether a value just validated is re-split for the cross-check, given a uniform random draw
/// in `0..1_000_000`: whoever validated it (trusted workers too, which is what catches two
/// trusted colluders), since a worker cannot know which of its values will be recounted.
pub fn picks_resplit(draw_ppm: u64, integrity: &Integrity) -> bool {
    draw_ppm < integrity.resplit_rate_ppm
}

/// Whether `nodes` counted in `elapsed_ms` (the coordinator's own clock, from lease issue to
/// receipt) is possible at `max_nodes_per_sec`. Generous on purpose (the perft hash table makes
/// deep workunits fast); an instant answer to a large workunit fails.
pub fn plausible(nodes: u64, elapsed_ms: i64, max_nodes_per_sec: u64) -> bool {
    if max_nodes_per_sec == 0 {
        return true;
    }
    let ms = u128::try_from(elapsed_ms.max(1)).unwrap_or(1);
    u128::from(nodes) * 1000 <= u128::from(max_nodes_per_sec) * ms
}

/// What replica separation knows of a worker: the address blocks it registered and last fetched
/// from, the enrolment token that enrolled it, and when it registered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Party<'a> {
    /// Address block at registration.
    pub reg_block: Option<&'a str>,
    /// Address block of the last fetch.
    pub last_block: Option<&'a str>,
    /// The per-volunteer enrolment token that enrolled it.
    pub token: Option<u64>,
    /// When it registered (the coordinator's clock).
    pub registered_ms: i64,
}

/// Whether two workers count as one party, so that replicas of one workunit never go to both:
/// they share an address block (when separation is on), one enrolment token enrolled both, or
/// they registered in one burst (within [`Integrity::registration_burst_ms`]) from one address
/// block — which still separates a script's identities where blocks alone cannot (behind a
/// proxy or NAT every worker shares the block) while workers that joined at other times pair.
/// The assign query mirrors this rule; the store checks it again on what the query found.
pub fn same_party(a: &Party, b: &Party, integrity: &Integrity) -> bool {
    let (xs, ys) = ([a.reg_block, a.last_block], [b.reg_block, b.last_block]);
    let share_block = xs
        .iter()
        .flatten()
        .any(|x| ys.iter().flatten().any(|y| x == y));
    let burst = integrity.registration_burst_ms > 0
        && a.reg_block.is_some()
        && a.reg_block == b.reg_block
        && a.registered_ms.abs_diff(b.registered_ms) <= integrity.registration_burst_ms;
    (integrity.separate_address_blocks && share_block)
        || (a.token.is_some() && a.token == b.token)
        || burst
}

/// The address block of a client: IPv4 /24, IPv6 /48 (IPv4-mapped IPv6 as IPv4). Replicas of one
/// workunit never go to two workers of one block, and a block's open leases are capped.
pub fn address_block(ip: IpAddr) -> String {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.0/24", o[0], o[1], o[2])
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_earned_slowly_and_not_raised_by_passing_once() {
        let i = Integrity::default();
        assert_eq!(
            after_passed_check(TrustLevel::Untrusted, 1, &i),
            TrustLevel::Untrusted
        );
        assert_eq!(
            after_passed_check(TrustLevel::Untrusted, 3, &i),
            TrustLevel::Earned
        );
        assert_eq!(
            after_passed_check(TrustLevel::Operator, 0, &i),
            TrustLevel::Operator
        );
    }

    #[test]
    fn only_evidence_excludes() {
        assert!(!is_excluded(0, 0, 3));
        assert!(is_excluded(1, 0, 3), "one failed check is enough");
        assert!(!is_excluded(0, 2, 3));
        assert!(is_excluded(0, 3, 3));
        assert!(!is_excluded(5, 5, 0), "0 disables automatic quarantine");
    }

    #[test]
    fn withdrawn_evidence_restores_the_standing() {
        let i = Integrity::default();
        let u = TrustLevel::Untrusted;
        // The only failed check was overturned: quarantine lifted, earned trust back.
        assert_eq!(
            standing_after_rollback(u, 4, 0, 0, false, 3, &i),
            (TrustLevel::Earned, false)
        );
        assert_eq!(
            standing_after_rollback(u, 1, 0, 0, false, 3, &i),
            (u, false)
        );
        // Another failed check is still evidence.
        assert_eq!(standing_after_rollback(u, 9, 1, 0, false, 3, &i), (u, true));
        // Refused results up to the strikes still exclude; a ban stays.
        assert_eq!(standing_after_rollback(u, 0, 0, 3, false, 3, &i), (u, true));
        assert_eq!(
            standing_after_rollback(u, 5, 0, 0, true, 3, &i),
            (TrustLevel::Earned, true)
        );
    }

    #[test]
    fn untrusted_workers_hold_few_leases() {
        let i = Integrity::default();
        assert_eq!(lease_cap(TrustLevel::Untrusted, 0, 64, &i), 4);
        assert_eq!(lease_cap(TrustLevel::Untrusted, 2, 64, &i), 16);
        assert_eq!(lease_cap(TrustLevel::Untrusted, 30, 64, &i), 64);
        assert_eq!(lease_cap(TrustLevel::Earned, 0, 64, &i), 64);
        assert_eq!(lease_cap(TrustLevel::Untrusted, 1, 0, &i), 8);
    }

    #[test]
    fn checks_are_drawn_by_trust() {
        let i = Integrity::default();
        assert!(picks_check(TrustLevel::Untrusted, 249_999, &i));
        assert!(!picks_check(TrustLevel::Untrusted, 250_000, &i));
        assert!(!picks_check(TrustLevel::Earned, 20_000, &i));
        assert!(picks_check(TrustLevel::Earned, 19_999, &i));
    }

    #[test]
    fn resplits_are_drawn_at_their_rate() {
        let i = Integrity {
            resplit_rate_ppm: 10_000,
            ..Integrity::default()
        };
        assert!(picks_resplit(9_999, &i) && !picks_resplit(10_000, &i));
        assert!(!picks_resplit(0, &Integrity::default()), "off by default");
    }

    #[test]
    fn instant_answers_to_large_units_are_implausible() {
        let nps = 20_000_000_000;
        assert!(!plausible(100_000_000, 0, nps));
        assert!(!plausible(100_000_000, 4, nps));
        assert!(plausible(100_000_000, 5, nps));
        assert!(plausible(400, 0, nps));
        assert!(plausible(u64::MAX, 0, 0));
        assert!(!plausible(u64::MAX, i64::MAX / 1000, 1));
    }

    #[test]
    fn one_block_or_one_token_is_one_party() {
        let i = Integrity::default();
        let p = |reg, last, token| Party {
            reg_block: reg,
            last_block: last,
            token,
            registered_ms: 0,
        };
        let a = p(Some("10.0.0.0/24"), Some("10.0.9.0/24"), None);
        assert!(same_party(&a, &p(Some("10.0.9.0/24"), None, None), &i));
        assert!(!same_party(&a, &p(Some("10.0.1.0/24"), None, None), &i));
        assert!(!same_party(&p(None, None, None), &p(None, None, None), &i));
        // One token is one volunteer, from whatever address.
        let t = p(Some("10.0.0.0/24"), None, Some(7));
        assert!(same_party(&t, &p(Some("192.0.2.0/24"), None, Some(7)), &i));
        assert!(!same_party(&t, &p(Some("192.0.2.0/24"), None, Some(8)), &i));
        // Behind a proxy blocks do not separate; tokens still do.
        let shared = Integrity {
            separate_address_blocks: false,
            ..i
        };
        assert!(!same_party(
            &a,
            &p(Some("10.0.0.0/24"), None, None),
            &shared
        ));
        assert!(same_party(
            &t,
            &p(Some("10.0.0.0/24"), None, Some(7)),
            &shared
        ));
    }

    #[test]
    fn one_registration_burst_from_one_block_is_one_party() {
        let i = Integrity {
            separate_address_blocks: false,
            registration_burst_ms: 60_000,
            ..Integrity::default()
        };
        let at = |block, ms| Party {
            reg_block: Some(block),
            last_block: None,
            token: None,
            registered_ms: ms,
        };
        let a = at("10.0.0.0/24", 1_000_000);
        assert!(same_party(&a, &at("10.0.0.0/24", 1_060_000), &i));
        assert!(same_party(&a, &at("10.0.0.0/24", 940_000), &i));
        assert!(!same_party(&a, &at("10.0.0.0/24", 1_060_001), &i));
        assert!(!same_party(&a, &at("10.0.1.0/24", 1_000_000), &i));
        let off = Integrity {
            registration_burst_ms: 0,
            ..i
        };
        assert!(!same_party(&a, &at("10.0.0.0/24", 1_000_000), &off));
    }

    #[test]
    fn address_blocks() {
        let b = |s: &str| address_block(s.parse().unwrap());
        assert_eq!(b("127.0.0.1"), "127.0.0.0/24");
        assert_eq!(b("127.0.0.200"), b("127.0.0.1"));
        assert_ne!(b("127.0.1.1"), b("127.0.0.1"));
        assert_eq!(b("::ffff:10.1.2.3"), "10.1.2.0/24");
        assert_eq!(b("2001:db8:1:2::5"), "2001:db8:1::/48");
        assert_eq!(b("2001:db8:1:ffff::5"), b("2001:db8:1::1"));
    }

    #[test]
    fn settings_round_trip() {
        let i = Integrity {
            trust_after_checks: 7,
            separate_address_blocks: false,
            ..Integrity::default()
        };
        let pairs = i.to_settings();
        assert_eq!(Integrity::from_settings(pairs.iter().copied()), i);
        assert_eq!(Integrity::from_settings([]), Integrity::default());
    }
}
