//! The small states every layer names: a campaign's status and the operator's actions on it, a
//! replica's life, a worker's trust, a result's digest.

use serde::{Deserialize, Serialize};

/// Where a campaign stands with the operator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CampaignStatus {
    /// Its workunits are handed out.
    #[default]
    Active,
    /// Nothing new is handed out; leases already out may still be answered.
    Paused,
    /// Stopped for good: nothing is handed out again (leases already out may be answered).
    Cancelled,
}

impl CampaignStatus {
    /// The name in JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CampaignStatus::Active => "active",
            CampaignStatus::Paused => "paused",
            CampaignStatus::Cancelled => "cancelled",
        }
    }
}

/// What the operator does to a campaign's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CampaignAction {
    /// Stop handing out its workunits for now.
    Pause,
    /// Hand them out again.
    Resume,
    /// Stop for good.
    Cancel,
}

/// The life of one replica (a lease and, once returned, its result); serialised by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplicaState {
    /// Leased to a worker, deadline not passed.
    InProgress,
    /// A result came back and passed the digest and shape checks.
    Returned,
    /// The deadline passed without a result; the replica is reissued.
    Expired,
    /// The worker gave the lease back.
    Abandoned,
    /// The worker sent something refused (digest mismatch, impossible divide).
    Error,
}

impl ReplicaState {
    /// Name for JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::InProgress => "in_progress",
            ReplicaState::Returned => "returned",
            ReplicaState::Expired => "expired",
            ReplicaState::Abandoned => "abandoned",
            ReplicaState::Error => "error",
        }
    }
}

impl std::fmt::Display for ReplicaState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How far a worker is trusted, as stored in `workers.trusted` (serialised by its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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

impl std::fmt::Display for TrustLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A digest as stored and compared.
pub type Digest = [u8; 32];
