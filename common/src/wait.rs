//! Why work waits: the rule that keeps a worker from the replicas that remain, in one vocabulary
//! with one wording. The coordinator's log, `/api/v1/status`, `campaign show`, the campaign page
//! and the worker's waiting line all print [`Waiting::describe`], so an operator and a volunteer
//! read the same cause and the same remedy.

use serde::{Deserialize, Serialize};

/// The rule that keeps the remaining replicas of a campaign from a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitCause {
    /// This worker computed (or holds) the replicas that remain: another worker must.
    AlreadyComputed,
    /// Another worker of the same address block holds or answered the other replica.
    AddressBlock,
    /// Another worker enrolled with the same enrolment token holds or answered it.
    EnrolmentToken,
    /// Another worker registered in the same burst from the same address block holds it.
    RegistrationBurst,
    /// The remaining workunits need a UCI engine this worker does not have.
    EngineMissing,
    /// The remaining replicas are kept for trusted workers, whose results anchor the value.
    TrustAnchor,
    /// The worker holds as many open leases as its standing allows.
    LeaseCap,
    /// The workers of this address block hold as many open leases as a block may.
    BlockLeaseCap,
    /// Workers in probation (no result returned yet) hold as many leases as they may together.
    Probation,
    /// Only paused campaigns have work left.
    Paused,
}

impl WaitCause {
    /// Every cause, for tests and documentation.
    pub const ALL: [WaitCause; 10] = [
        WaitCause::AlreadyComputed,
        WaitCause::AddressBlock,
        WaitCause::EnrolmentToken,
        WaitCause::RegistrationBurst,
        WaitCause::EngineMissing,
        WaitCause::TrustAnchor,
        WaitCause::LeaseCap,
        WaitCause::BlockLeaseCap,
        WaitCause::Paused,
        WaitCause::Probation,
    ];

    /// The stored code (the `campaigns.stall_cause` column).
    pub fn code(self) -> i64 {
        WaitCause::ALL.iter().position(|c| *c == self).unwrap_or(0) as i64 + 1
    }

    /// From a stored code.
    pub fn from_code(code: i64) -> Option<WaitCause> {
        let i = usize::try_from(code.checked_sub(1)?).ok()?;
        WaitCause::ALL.get(i).copied()
    }

    /// The name in JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            WaitCause::AlreadyComputed => "already_computed",
            WaitCause::AddressBlock => "address_block",
            WaitCause::EnrolmentToken => "enrolment_token",
            WaitCause::RegistrationBurst => "registration_burst",
            WaitCause::EngineMissing => "engine_missing",
            WaitCause::TrustAnchor => "trust_anchor",
            WaitCause::LeaseCap => "lease_cap",
            WaitCause::BlockLeaseCap => "block_lease_cap",
            WaitCause::Probation => "probation",
            WaitCause::Paused => "paused",
        }
    }

    /// Why the replicas wait, in a clause.
    pub fn reason(self) -> &'static str {
        match self {
            WaitCause::AlreadyComputed => {
                "the workers connected have computed them already, and a replica must come from a different worker"
            }
            WaitCause::AddressBlock => {
                "the other replica is with a worker of the same address block, and replicas of one workunit go to different address blocks"
            }
            WaitCause::EnrolmentToken => {
                "the other replica is with a worker of the same enrolment token, and one token is one volunteer"
            }
            WaitCause::RegistrationBurst => {
                "the other replica is with a worker registered in the same burst from the same address block"
            }
            WaitCause::EngineMissing => {
                "they need a UCI engine that the workers connected do not have"
            }
            WaitCause::TrustAnchor => {
                "they are kept for trusted workers, whose results anchor the value (an agreement of untrusted workers waits until one of them has earned trust: the coordinator checks one of each newcomer's results every `serve --trust-check-spacing-secs`, 20 s by default, and trust takes `--trust-after` passed checks, 3)"
            }
            WaitCause::LeaseCap => "the worker holds as many open leases as its standing allows",
            WaitCause::BlockLeaseCap => {
                "the workers of this address block hold as many open leases as one block may"
            }
            WaitCause::Probation => {
                "workers that have not returned a result yet hold as many leases as they may together (of this address block, or of the campaign)"
            }
            WaitCause::Paused => "their campaign is paused",
        }
    }

    /// What changes it: a flag, a command or a worker to start.
    pub fn remedy(self) -> &'static str {
        match self {
            WaitCause::AlreadyComputed => {
                "start another worker (another terminal on the same machine counts: `c960-worker work`)"
            }
            WaitCause::AddressBlock => {
                "start a worker on another network, or run `serve --address-separation off` if the workers behind this address are yours"
            }
            WaitCause::EnrolmentToken => {
                "start a worker enrolled with another token (`c960-coordinator token mint`)"
            }
            WaitCause::RegistrationBurst => {
                "register another worker later or from another network, or lower `serve --registration-burst-secs`"
            }
            WaitCause::EngineMissing => "start a worker with `--uci /usr/games/stockfish`",
            WaitCause::TrustAnchor => {
                "wait for a worker to earn trust by passing checks, or vouch for one you know: `c960-coordinator worker trust ID`"
            }
            WaitCause::LeaseCap => {
                "nothing: its leases count down as it answers them, and the cap doubles with each passed check"
            }
            WaitCause::BlockLeaseCap => {
                "wait for the block's leases to be answered, or raise `serve --block-lease-cap`"
            }
            WaitCause::Probation => {
                "wait: a new worker's first answer ends its probation; or raise `serve --probation-block-cap` / `--probation-share-percent`"
            }
            WaitCause::Paused => "resume it: `c960-coordinator campaign resume ID`",
        }
    }

    /// Whether the cause waits on the workers' own setup (a stall only more or other workers, or
    /// the operator, can end), as opposed to back-pressure that ends by itself.
    pub fn is_stall(self) -> bool {
        !matches!(
            self,
            WaitCause::LeaseCap | WaitCause::BlockLeaseCap | WaitCause::Probation
        )
    }
}

/// Why a worker got no work, or why a campaign is stalled: the cause, the campaign it concerns
/// and how many replicas wait on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    /// The rule.
    pub cause: WaitCause,
    /// The campaign whose replicas wait (`None` for causes of the worker's own, the lease caps).
    pub campaign: Option<u64>,
    /// Replicas waiting on this cause (of the workunits looked at: at most a few hundred).
    pub replicas: u64,
}

impl Waiting {
    /// One line: what waits, why, and what to do.
    ///
    /// ```
    /// use c960_common::wait::{WaitCause, Waiting};
    /// let w = Waiting { cause: WaitCause::Paused, campaign: Some(3), replicas: 2 };
    /// assert_eq!(
    ///     w.describe(),
    ///     "2 replicas of campaign 3 wait: their campaign is paused; \
    ///      to go on, resume it: `c960-coordinator campaign resume 3`"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        let what = match (self.campaign, self.replicas) {
            (Some(c), 1) => format!("1 replica of campaign {c} waits"),
            (Some(c), n) => format!("{n} replicas of campaign {c} wait"),
            (None, _) => "no new lease".to_string(),
        };
        let remedy = match self.campaign {
            Some(c) => self.cause.remedy().replace("ID`", &format!("{c}`")),
            None => self.cause.remedy().to_string(),
        };
        format!("{what}: {}; to go on, {remedy}", self.cause.reason())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_every_cause_has_words() {
        for c in WaitCause::ALL {
            assert_eq!(WaitCause::from_code(c.code()), Some(c));
            assert!(!c.reason().is_empty() && !c.remedy().is_empty());
        }
        assert_eq!(WaitCause::from_code(0), None);
        assert_eq!(WaitCause::from_code(99), None);
        assert!(WaitCause::AddressBlock.is_stall() && !WaitCause::LeaseCap.is_stall());
    }

    #[test]
    fn the_line_names_campaign_cause_and_remedy() {
        let w = Waiting {
            cause: WaitCause::AddressBlock,
            campaign: Some(7),
            replicas: 40,
        };
        let line = w.describe();
        assert!(
            line.starts_with("40 replicas of campaign 7 wait: "),
            "{line}"
        );
        assert!(line.contains("--address-separation off"), "{line}");
    }
}
