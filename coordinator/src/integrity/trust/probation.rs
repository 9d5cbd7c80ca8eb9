//! Probation (issue 31): what a worker that has returned nothing yet may hold, alone, with its
//! address block and with all such workers of a campaign. Pure rules; the store counts what is
//! held (`store/sql/probation_holdings.rs`).

use super::{Integrity, lease_cap};
use crate::model::TrustLevel;

/// Whether a worker is in probation: untrusted and no result returned yet. Nothing is known of
/// such an identity but that it exists, and identities are free under open enrolment (issue 31:
/// 480 of them from 48 address blocks held all 1,920 replicas of a campaign within a second and
/// never answered). An honest newcomer leaves probation with its first answer, so the
/// probation caps cost it nothing after its first workunit, and they never shorten a lease: a
/// newcomer's 10-minute workunit is answered in time.
pub fn in_probation(level: TrustLevel, returned_any: bool) -> bool {
    !level.is_trusted() && !returned_any
}

/// The open leases a worker may hold ([`lease_cap`]), at most
/// [`Integrity::probation_lease_cap`] while it is [`in_probation`]: one workunit to prove itself.
pub fn lease_cap_in_probation(
    level: TrustLevel,
    checks_passed: u64,
    cap: u64,
    probation: bool,
    integrity: &Integrity,
) -> u64 {
    let cap = lease_cap(level, checks_passed, cap, integrity);
    match (probation, integrity.probation_lease_cap) {
        (false, _) | (true, 0) => cap,
        (true, p) if cap == 0 => p,
        (true, p) => cap.min(p),
    }
}

/// `serve`'s [`Integrity::probation_lease_cap`]: one workunit to prove itself.
pub const PROBATION_LEASE_CAP: u64 = 1;
/// `serve`'s [`Integrity::probation_block_cap`]: a lab's eight new machines behind one address
/// start at once; a block of free identities holds eight replicas.
pub const PROBATION_BLOCK_CAP: u64 = 8;
/// `serve`'s [`Integrity::probation_share_pct`]: see [`probation_room`].
pub const PROBATION_SHARE_PCT: u64 = 25;

/// The smallest share of a campaign that workers in probation may hold together, whatever its
/// size: a tiny campaign's replicas all go to the two new workers of `serve`'s first hour.
pub const PROBATION_SHARE_FLOOR: u64 = 4;

/// What workers in probation hold when one of them fetches from a campaign.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbationHold {
    /// Open leases of the workers in probation of the fetching worker's address block.
    pub block: u64,
    /// Open leases of all workers in probation on this campaign.
    pub campaign: u64,
    /// The campaign's remaining replicas: open leases and replicas still to hand out (a lower
    /// bound is enough: the store counts up to what the share can reach).
    pub campaign_remaining: u64,
}

/// How many more leases of one campaign a worker in probation may take: what its block's
/// probation workers may still hold ([`Integrity::probation_block_cap`]), and what is left of
/// the campaign's probation share ([`Integrity::probation_share_pct`] of its remaining
/// replicas, at least [`PROBATION_SHARE_FLOOR`]).
///
/// Why both, and why the share is a quarter: per-identity caps alone let 480 free identities
/// hold 1,920 replicas; a per-block cap alone lets 48 blocks hold 384, all of a small campaign.
/// With the share, workers in probation never hold more than a quarter of a campaign, so
/// workers that have answered always find the rest. A newcomer is in probation itself, so a
/// block whose probation workers hold nothing may take one lease past the share: the honest
/// newcomer from a block of its own always gets its first workunit, and after that answer it
/// is out of probation. An attacker with `B` blocks thus holds at most the share plus `B` of a
/// campaign (and `B × probation_block_cap` in all, one per identity); with the quarter share a
/// campaign of `R` remaining replicas keeps work for newcomers as long as `B < 3R/4`.
pub fn probation_room(held: &ProbationHold, integrity: &Integrity) -> u64 {
    let block_room = match integrity.probation_block_cap {
        0 => u64::MAX,
        cap => cap.saturating_sub(held.block),
    };
    let campaign_room = match integrity.probation_share_pct {
        0 => u64::MAX,
        pct => {
            let share = (u128::from(held.campaign_remaining) * u128::from(pct) / 100) as u64;
            let room = share
                .max(PROBATION_SHARE_FLOOR)
                .saturating_sub(held.campaign);
            if held.block == 0 { room.max(1) } else { room }
        }
    };
    block_room.min(campaign_room)
}

/// The replicas of a campaign the store must count (at most) to apply [`probation_room`] for a
/// worker that wants `want` more while probation workers hold `held` of it: past this many, the
/// share leaves room for all of them.
pub fn probation_count_limit(held: u64, want: u64, integrity: &Integrity) -> u64 {
    match integrity.probation_share_pct {
        0 => 0,
        pct => (held.saturating_add(want))
            .saturating_mul(100)
            .div_ceil(pct.min(100)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probation_holds_one_lease_and_a_share() {
        let i = Integrity {
            probation_lease_cap: 1,
            probation_block_cap: 8,
            probation_share_pct: 25,
            ..Integrity::default()
        };
        let u = TrustLevel::Untrusted;
        assert!(in_probation(u, false));
        assert!(!in_probation(u, true) && !in_probation(TrustLevel::Operator, false));
        assert_eq!(lease_cap_in_probation(u, 0, 64, true, &i), 1);
        assert_eq!(lease_cap_in_probation(u, 0, 0, true, &i), 1);
        assert_eq!(lease_cap_in_probation(u, 0, 64, false, &i), 4);
        let off = Integrity::default();
        assert_eq!(lease_cap_in_probation(u, 0, 64, true, &off), 4);
        let room = |block, campaign, remaining| {
            probation_room(
                &ProbationHold {
                    block,
                    campaign,
                    campaign_remaining: remaining,
                },
                &i,
            )
        };
        // A block's probation workers hold 8 at most, local blocks too.
        assert_eq!(room(8, 0, 10_000), 0);
        assert_eq!(room(3, 0, 10_000), 5);
        // A quarter of the campaign: 20 of 80 remaining replicas.
        assert_eq!(room(1, 19, 80), 1);
        assert_eq!(room(1, 20, 80), 0);
        // ... but a block holding nothing gets its first workunit.
        assert_eq!(room(0, 20, 80), 1);
        assert_eq!(room(0, 500, 80), 1);
        // A tiny campaign goes to the first workers whole.
        assert_eq!(room(1, 3, 2), 1);
        assert_eq!(room(1, 4, 2), 0);
        assert_eq!(probation_room(&ProbationHold::default(), &off), u64::MAX);
        // Counting 4 × (held + wanted) replicas is enough to know the share has room.
        assert_eq!(probation_count_limit(20, 1, &i), 84);
        assert_eq!(probation_count_limit(20, 1, &off), 0);
    }
}
