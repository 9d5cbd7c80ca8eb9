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

mod probation;

pub use probation::{
    PROBATION_BLOCK_CAP, PROBATION_LEASE_CAP, PROBATION_SHARE_FLOOR, PROBATION_SHARE_PCT,
    ProbationHold, in_probation, lease_cap_in_probation, probation_count_limit, probation_room,
};

use std::net::IpAddr;

use crate::model::TrustLevel;

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
    /// Which address blocks keep replicas of one workunit apart ([`AddressSeparation`]).
    pub address_separation: AddressSeparation,
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
    /// How long a lease stays open without a renewal (the worker's heartbeat, every
    /// [`c960_common::wire::HEARTBEAT_SECS`]): a worker that died gives its replicas back after
    /// this long, whatever the lease's whole life (0: leases are never renewed, they last
    /// their whole life).
    pub lease_renewal_ms: u64,
    /// Chance (parts per million) that a value anchored by earned trust, a public total or a
    /// quorum alone is audited once valid ([`crate::integrity::audit`]); the coordinator recounts it when it
    /// can. Off by default here, like the re-split rate (the store's tests count checks);
    /// `serve` audits every such value (`--audit-rate 1`).
    pub audit_rate_ppm: u64,
    /// Chance (parts per million) that an audit the coordinator cannot compute itself (over its
    /// budget, or an engine it does not run) of a value anchored by a trusted worker is done by
    /// one more, hidden replica for another randomly drawn worker (`--audit-replica-rate`). A
    /// value anchored by nothing but its quorum always gets one.
    pub audit_replica_rate_ppm: u64,
    /// A passed check counts towards trust only this long after the last one that counted, so
    /// that trust takes audited work spread over time (0: every passed check counts; `serve`:
    /// 20 s, `--trust-check-spacing-secs`).
    pub trust_check_spacing_ms: u64,
    /// The smallest pool of a campaign's ready workunits a worker's batch is drawn from at
    /// random ([`crate::work::transitioner::draw_replicas`]); 0 hands them out in order, lowest id first
    /// (the default here and for `run`'s own workers; `serve` draws from 64).
    pub draw_pool: u64,
    /// Open leases a worker in probation ([`in_probation`]: untrusted, no result returned yet)
    /// may hold (0: no probation cap; `serve`: 1, `--probation-lease-cap`).
    pub probation_lease_cap: u64,
    /// Open leases all workers in probation whose last fetch came from one address block hold
    /// together, local blocks too (0: off; `serve`: 8, `--probation-block-cap`).
    pub probation_block_cap: u64,
    /// Percent of a campaign's remaining replicas that workers in probation hold together, at
    /// least [`PROBATION_SHARE_FLOOR`] (0: off; `serve`: 25, `--probation-share`).
    pub probation_share_pct: u64,
    /// How long a side of a dispute has to answer a challenge ([`crate::integrity::referee`]):
    /// silence past it loses the dispute (`serve`: `--challenge-secs`, 6 hours).
    pub challenge_ms: u64,
    /// Chance (parts per million) that an audit goes to the coordinator although another
    /// worker could take it as a replica ([`crate::integrity::audit::route`]): its own random
    /// sample. Everything here by default (the store's tests count the coordinator's audits);
    /// `serve`: 0.02 (`--audit-sample`).
    pub audit_sample_ppm: u64,
    /// Spare capacity re-verifies: a worker with no other work gets a hidden replica of a valid
    /// perft value with fewer than this many agreeing workers (0: off, the default here;
    /// `serve`: 4, `--idle-reverify-upto`).
    pub idle_reverify_upto: u64,
    /// Only this campaign's values are re-verified that way (0: every active campaign's;
    /// `--idle-reverify-campaign`).
    pub idle_reverify_campaign: u64,
    /// Chance (parts per million) that the coordinator checks an agreement nothing anchors (no
    /// public total, no trusted worker among it) as soon as it forms, where other workers are
    /// at work; the others wait for their workers' trust ([`crate::integrity::anchoring`]).
    /// Every one at once by default here (the store's tests count those checks); `serve`: 0.02
    /// (`--unanchored-sample`).
    pub unanchored_sample_ppm: u64,
}

impl Default for Integrity {
    fn default() -> Self {
        Integrity {
            trust_after_checks: 3,
            check_rate_untrusted_ppm: 250_000,
            check_rate_trusted_ppm: 20_000,
            untrusted_lease_cap: 4,
            address_separation: AddressSeparation::Public,
            block_lease_cap: 512,
            max_nodes_per_sec: 20_000_000_000,
            registration_burst_ms: 0,
            resplit_rate_ppm: 0,
            lease_renewal_ms: 90_000,
            audit_rate_ppm: 0,
            audit_replica_rate_ppm: 100_000,
            trust_check_spacing_ms: 0,
            draw_pool: 0,
            probation_lease_cap: 0,
            probation_block_cap: 0,
            probation_share_pct: 0,
            challenge_ms: 6 * 3600 * 1000,
            audit_sample_ppm: 1_000_000,
            idle_reverify_upto: 0,
            idle_reverify_campaign: 0,
            unanchored_sample_ppm: 1_000_000,
        }
    }
}

impl Integrity {
    /// Whether any probation rule is on ([`in_probation`]): the store asks whether a worker
    /// returned anything only then.
    pub fn probation_on(&self) -> bool {
        self.probation_lease_cap > 0 || self.probation_block_cap > 0 || self.probation_share_pct > 0
    }

    /// The settings as (key, value) pairs for the store's settings table.
    pub fn to_settings(&self) -> [(&'static str, u64); 22] {
        [
            ("trust_after_checks", self.trust_after_checks),
            ("check_rate_untrusted_ppm", self.check_rate_untrusted_ppm),
            ("check_rate_trusted_ppm", self.check_rate_trusted_ppm),
            ("untrusted_lease_cap", self.untrusted_lease_cap),
            ("separate_address_blocks", self.address_separation.code()),
            ("block_lease_cap", self.block_lease_cap),
            ("max_nodes_per_sec", self.max_nodes_per_sec),
            ("registration_burst_ms", self.registration_burst_ms),
            ("resplit_rate_ppm", self.resplit_rate_ppm),
            ("lease_renewal_ms", self.lease_renewal_ms),
            ("audit_rate_ppm", self.audit_rate_ppm),
            ("audit_replica_rate_ppm", self.audit_replica_rate_ppm),
            ("trust_check_spacing_ms", self.trust_check_spacing_ms),
            ("draw_pool", self.draw_pool),
            ("probation_lease_cap", self.probation_lease_cap),
            ("probation_block_cap", self.probation_block_cap),
            ("probation_share_pct", self.probation_share_pct),
            ("challenge_ms", self.challenge_ms),
            ("audit_sample_ppm", self.audit_sample_ppm),
            ("idle_reverify_upto", self.idle_reverify_upto),
            ("idle_reverify_campaign", self.idle_reverify_campaign),
            ("unanchored_sample_ppm", self.unanchored_sample_ppm),
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
                "separate_address_blocks" => i.address_separation = AddressSeparation::from_code(v),
                "block_lease_cap" => i.block_lease_cap = v,
                "max_nodes_per_sec" => i.max_nodes_per_sec = v,
                "registration_burst_ms" => i.registration_burst_ms = v,
                "resplit_rate_ppm" => i.resplit_rate_ppm = v,
                "lease_renewal_ms" => i.lease_renewal_ms = v,
                "audit_rate_ppm" => i.audit_rate_ppm = v,
                "audit_replica_rate_ppm" => i.audit_replica_rate_ppm = v,
                "trust_check_spacing_ms" => i.trust_check_spacing_ms = v,
                "draw_pool" => i.draw_pool = v,
                "probation_lease_cap" => i.probation_lease_cap = v,
                "probation_block_cap" => i.probation_block_cap = v,
                "probation_share_pct" => i.probation_share_pct = v,
                "challenge_ms" => i.challenge_ms = v,
                "audit_sample_ppm" => i.audit_sample_ppm = v,
                "idle_reverify_upto" => i.idle_reverify_upto = v,
                "idle_reverify_campaign" => i.idle_reverify_campaign = v,
                "unanchored_sample_ppm" => i.unanchored_sample_ppm = v,
                _ => {}
            }
        }
        i
    }
}

/// Which address blocks separate replicas: two workers of one separated block never hold
/// replicas of one workunit, and a separated block's open leases are capped together.
///
/// Why private and loopback blocks are not separated by default: an address in them reaches the
/// coordinator only from its own host or its own network (a TCP peer cannot forge one from the
/// internet, and behind a reverse proxy `--trusted-proxy` gives the client's real address), so
/// every such worker runs on machines the operator's network admits. Separating them made the
/// first thing an operator tries, `serve` and two workers on one machine or one lab network,
/// wait forever. The rules that do not rest on addresses hold everywhere: a quorum of distinct
/// workers, an anchor (a trusted worker, the coordinator's own digest, a public total), secret
/// checks, enrolment tokens and registration bursts as parties.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum AddressSeparation {
    /// No block separates (behind a NAT or a proxy that hides the volunteers' addresses).
    Off,
    /// Public blocks separate; loopback, private (RFC 1918, fc00::/7) and link-local ones do not.
    #[default]
    Public,
    /// Every block separates, loopback and private ones too.
    Everywhere,
}

impl AddressSeparation {
    /// As stored in the settings (1 was the old `true`: every block).
    pub fn code(self) -> u64 {
        match self {
            AddressSeparation::Off => 0,
            AddressSeparation::Everywhere => 1,
            AddressSeparation::Public => 2,
        }
    }

    /// From a stored code; unknown codes separate everywhere (the stricter reading).
    pub fn from_code(code: u64) -> AddressSeparation {
        match code {
            0 => AddressSeparation::Off,
            2 => AddressSeparation::Public,
            _ => AddressSeparation::Everywhere,
        }
    }

    /// Whether workers of `block` (an [`address_block`]) are kept apart.
    pub fn separates(self, block: &str) -> bool {
        self != AddressSeparation::Off && !self.exempts(block)
    }

    /// Whether `block` is no block at all under this setting: neither separated nor under
    /// [`Integrity::block_lease_cap`] (a local block when only public blocks separate).
    pub fn exempts(self, block: &str) -> bool {
        self == AddressSeparation::Public && is_local_block(block)
    }
}

/// Whether an [`address_block`] is loopback, private or link-local: 127/8, 10/8, 172.16/12,
/// 192.168/16, 169.254/16; ::/48 (which holds ::1), fc00::/7, fe80::/10. A string that is no
/// block counts as public (the stricter reading).
pub fn is_local_block(block: &str) -> bool {
    let Some(Ok(ip)) = block.split('/').next().map(str::parse::<IpAddr>) else {
        return false;
    };
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.segments()[..3] == [0, 0, 0] || first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfe80
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

/// Whether a check passed at `now_ms` counts towards trust, the last one that counted having
/// been at `last_ms`: trust takes [`Integrity::trust_after_checks`] checks spread over at least
/// `(trust_after_checks - 1) × trust_check_spacing_ms`, so a party cannot earn it for a fresh
/// identity in the first seconds of a campaign.
pub fn counts_towards_trust(last_ms: Option<i64>, now_ms: i64, integrity: &Integrity) -> bool {
    last_ms.is_none_or(|last| {
        now_ms.saturating_sub(last)
            >= i64::try_from(integrity.trust_check_spacing_ms).unwrap_or(i64::MAX)
    })
}

/// Whether a worker that gave `gave_back` leases back through `/fail` (this one included) and
/// has `valid` results in valid values does so as a pattern: at least 5, and more than one for
/// every four of its valid results. Such a worker loses its earned trust (never a quarantine: an
/// honest worker's engine may crash), so that a party cannot keep trust while it gives back
/// every workunit it does not hold whole.
pub fn gives_back_too_much(gave_back: u64, valid: u64) -> bool {
    gave_back >= 5 && gave_back.saturating_mul(4) > valid
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
/// they share an address block that separates ([`AddressSeparation::separates`]), one enrolment token enrolled both, or
/// they registered in one burst (within [`Integrity::registration_burst_ms`]) from one address
/// block — which still separates a script's identities where blocks alone cannot (behind a
/// proxy or NAT every worker shares the block) while workers that joined at other times pair.
/// The assign query mirrors this rule; the store checks it again on what the query found.
pub fn same_party(a: &Party, b: &Party, integrity: &Integrity) -> bool {
    party_rule(a, b, integrity).is_some()
}

/// Which rule of [`same_party`] makes two workers one party.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartyRule {
    /// They share an address block that separates.
    AddressBlock,
    /// One enrolment token enrolled both.
    EnrolmentToken,
    /// They registered in one burst from one address block.
    RegistrationBurst,
}

/// The rule of [`same_party`] that joins `a` and `b`, if any (the first that applies, in the
/// order of [`PartyRule`]).
pub fn party_rule(a: &Party, b: &Party, integrity: &Integrity) -> Option<PartyRule> {
    let separated = |x: &&&str| integrity.address_separation.separates(x);
    let (xs, ys) = ([a.reg_block, a.last_block], [b.reg_block, b.last_block]);
    let share_block = xs
        .iter()
        .flatten()
        .filter(separated)
        .any(|x| ys.iter().flatten().any(|y| x == y));
    let burst = integrity.registration_burst_ms > 0
        && a.reg_block.is_some()
        && a.reg_block == b.reg_block
        && a.registered_ms.abs_diff(b.registered_ms) <= integrity.registration_burst_ms;
    if share_block {
        Some(PartyRule::AddressBlock)
    } else if a.token.is_some() && a.token == b.token {
        Some(PartyRule::EnrolmentToken)
    } else if burst {
        Some(PartyRule::RegistrationBurst)
    } else {
        None
    }
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
    fn trust_takes_checks_spread_over_time() {
        let i = Integrity::default();
        assert!(counts_towards_trust(None, 5, &i));
        let i = Integrity {
            trust_check_spacing_ms: 20_000,
            ..i
        };
        assert!(!counts_towards_trust(Some(1_000), 1_000 + 19_999, &i));
        assert!(counts_towards_trust(Some(1_000), 1_000 + 20_000, &i));
        let any = Integrity::default();
        assert!(counts_towards_trust(Some(1_000), 1_000, &any));
    }

    #[test]
    fn giving_work_back_as_a_pattern_costs_trust() {
        assert!(
            !gives_back_too_much(4, 0),
            "a few engine failures are no pattern"
        );
        assert!(gives_back_too_much(5, 19));
        assert!(!gives_back_too_much(5, 20));
        assert!(gives_back_too_much(300, 1_000));
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
        let a = p(Some("198.51.100.0/24"), Some("203.0.113.0/24"), None);
        assert!(same_party(&a, &p(Some("203.0.113.0/24"), None, None), &i));
        assert!(!same_party(&a, &p(Some("198.51.101.0/24"), None, None), &i));
        assert!(!same_party(&p(None, None, None), &p(None, None, None), &i));
        // One token is one volunteer, from whatever address.
        let t = p(Some("10.0.0.0/24"), None, Some(7));
        assert!(same_party(&t, &p(Some("192.0.2.0/24"), None, Some(7)), &i));
        assert!(!same_party(&t, &p(Some("192.0.2.0/24"), None, Some(8)), &i));
        // Behind a proxy blocks do not separate; tokens still do.
        let shared = Integrity {
            address_separation: AddressSeparation::Off,
            ..i
        };
        assert!(!same_party(
            &a,
            &p(Some("198.51.100.0/24"), None, None),
            &shared
        ));
        assert!(same_party(
            &t,
            &p(Some("10.0.0.0/24"), None, Some(7)),
            &shared
        ));
    }

    #[test]
    fn local_blocks_separate_only_everywhere() {
        let p = |block| Party {
            reg_block: Some(block),
            last_block: Some(block),
            token: None,
            registered_ms: 0,
        };
        let public = Integrity::default();
        let everywhere = Integrity {
            address_separation: AddressSeparation::Everywhere,
            ..public
        };
        for local in [
            "127.0.0.0/24",
            "10.1.2.0/24",
            "172.16.5.0/24",
            "172.31.0.0/24",
            "192.168.1.0/24",
            "169.254.3.0/24",
            "0:0:0::/48",
            "fd12:3456:789a::/48",
            "fe80:0:0::/48",
        ] {
            assert!(is_local_block(local), "{local}");
            assert!(!same_party(&p(local), &p(local), &public), "{local}");
            assert!(same_party(&p(local), &p(local), &everywhere), "{local}");
        }
        for public_block in [
            "172.32.0.0/24",
            "100.64.0.0/24",
            "8.8.8.0/24",
            "2001:db8:1::/48",
            "junk",
        ] {
            assert!(!is_local_block(public_block), "{public_block}");
            assert!(same_party(&p(public_block), &p(public_block), &public));
        }
        // The blocks of the loopback and private addresses a worker really comes from.
        for ip in [
            "127.0.0.1",
            "::1",
            "::ffff:192.168.0.7",
            "fc00::1",
            "fe80::1",
        ] {
            assert!(is_local_block(&address_block(ip.parse().unwrap())), "{ip}");
        }
        for code in [0, 1, 2] {
            let s = AddressSeparation::from_code(code);
            assert_eq!(s.code(), code);
        }
    }

    #[test]
    fn one_registration_burst_from_one_block_is_one_party() {
        let i = Integrity {
            address_separation: AddressSeparation::Off,
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
            address_separation: AddressSeparation::Off,
            ..Integrity::default()
        };
        let pairs = i.to_settings();
        assert_eq!(Integrity::from_settings(pairs.iter().copied()), i);
        assert_eq!(Integrity::from_settings([]), Integrity::default());
    }
}
