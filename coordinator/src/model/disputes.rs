//! Disputes: two results of one perft workunit that disagree, settled by bisection over the
//! tree ([`crate::integrity::referee`] decides each step, the store keeps where each stands).

/// Challenge leases travel on the wire with this added to the challenge's id (as lease and as
/// workunit id), so the native and the BOINC front doors hand them out, renew them and take
/// their answers through the one worker session like any lease, and no result id (one per
/// replica ever issued) comes near it.
pub const CHALLENGE_BASE: u64 = 1 << 48;

/// The challenge a wire lease id names, if it names one.
pub fn challenge_of(lease_id: u64) -> Option<u64> {
    lease_id.checked_sub(CHALLENGE_BASE).filter(|&id| id > 0)
}

/// One side of a dispute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The first result (the larger group of agreeing results).
    A,
    /// The second.
    B,
}

impl Side {
    /// Both, in order.
    pub const BOTH: [Side; 2] = [Side::A, Side::B];

    /// As stored.
    pub fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

/// What one side said of the node in dispute, when asked for its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Its divide: each legal move's count one ply deeper, in the order it sent them.
    Divide(Vec<(String, u64)>),
    /// Its challenge's deadline passed, or its answer was refused.
    Missed,
    /// Its challenge is open.
    Waiting,
}

/// A dispute where the referee is to move ([`crate::store::Store::disputes_due`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputeView {
    /// The dispute.
    pub id: u64,
    /// The workunit its results answer.
    pub workunit_id: u64,
    /// The node in dispute.
    pub fen: String,
    /// Its remaining depth.
    pub depth: u32,
    /// The moves from the workunit's position to it (UCI, in order).
    pub path: Vec<String>,
    /// The workers of sides A and B.
    pub workers: [u64; 2],
    /// Each side's count for the node.
    pub claims: [u64; 2],
    /// Each side's children of the node.
    pub answers: [Answer; 2],
    /// Challenges issued so far (one per side per round).
    pub rounds: u32,
}

/// The referee's move on a dispute, written by [`crate::store::Store::advance_dispute`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Advance {
    /// Both sides are asked for the children of this node, a child of the one in dispute.
    Challenge {
        /// The move to it.
        mv: String,
        /// Its FEN.
        fen: String,
        /// Its remaining depth.
        depth: u32,
        /// Each side's count for it (from its answer one level up).
        claims: [u64; 2],
    },
    /// Settled: the workers proven wrong (none: nothing differed), and the nodes the
    /// coordinator counted for it.
    Decided {
        /// The workers proven wrong.
        losers: Vec<u64>,
        /// The coordinator's own count's cost.
        nodes: u64,
    },
}

/// What disputes have cost and found, for the status page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DisputeCost {
    /// Disputes opened.
    pub opened: u64,
    /// Disputes decided.
    pub decided: u64,
    /// Workers proven wrong by them.
    pub convicted: u64,
    /// Challenges issued to workers.
    pub challenges: u64,
    /// Nodes the coordinator counted at their leaves.
    pub leaf_nodes: u64,
}
