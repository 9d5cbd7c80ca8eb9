//! The read-only queries of the public pages (leaderboard, one worker's history, a page of a
//! split campaign's table): the types they return. The queries are the `Store` trait methods of
//! the same names, written once for both backends (`store/sql/reads.rs`).
//!
//! Cost: each query reads only what the page shows. Credit is two columns of the worker row
//! (valid results, their nodes as hi/lo halves: migration 12), kept by a trigger in the very
//! statement that grades a result valid, voids it (quarantine) or ungrades it (re-verification),
//! so it is exact in every transaction and a leaderboard page reads no results for it; the
//! leaderboard is ordered by it through the `workers_credit` index. Only the throughput window
//! reads the listed workers' recent results (the `results(worker_id, returned_ms)` index).

use serde::Serialize;

/// One worker on the leaderboard. Nothing secret: no key hash, no address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerStanding {
    /// Id.
    pub id: u64,
    /// Self-chosen name (untrusted text: escape it).
    pub name: String,
    /// `name version` of the engine it registered with (untrusted text).
    pub engine: String,
    /// Registered at (ms since the epoch).
    pub created_ms: i64,
    /// Last request (ms since the epoch).
    pub last_seen_ms: i64,
    /// Credit: results that agreed with a canonical result (passed the quorum).
    pub valid_results: u64,
    /// Credit: nodes of those results (a string in JSON).
    #[serde(serialize_with = "u128_str")]
    pub valid_nodes: u128,
    /// Nodes of all results it returned in the throughput window.
    #[serde(serialize_with = "u128_str")]
    pub recent_nodes: u128,
    /// Results that lost a vote.
    pub lost_votes: u64,
    /// Results refused on receipt.
    pub refused: u64,
    /// Banned by the operator.
    pub banned: bool,
    /// Quarantined.
    pub quarantined: bool,
    /// The build it runs (`0.2.0 (1a2b3c4d5e6f)`); `None`: unknown (a worker before 0.2).
    pub build: Option<String>,
}

impl WorkerStanding {
    /// The build as pages and `worker list` show it: `unknown` where the worker named none.
    pub fn build_label(&self) -> &str {
        self.build.as_deref().unwrap_or("unknown")
    }
}

fn u128_str<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// Which workers a leaderboard query lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingsQuery {
    /// Only workers seen since then (the "connected" list), most recently seen first; `None`:
    /// every worker, most credit (validated nodes, then validated results) first.
    pub seen_since_ms: Option<i64>,
    /// `recent_nodes` counts results returned since then.
    pub recent_since_ms: i64,
    /// Rows to skip.
    pub offset: u64,
    /// Rows to return.
    pub limit: u64,
}

/// One result (replica) of a worker, for its history page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerResult {
    /// Result id.
    pub id: u64,
    /// Workunit.
    pub workunit_id: u64,
    /// Its campaign.
    pub campaign_id: u64,
    /// Start position (or the origin of a split workunit).
    pub sp: Option<u16>,
    /// Replica state name.
    pub state: crate::model::ReplicaState,
    /// `pending`, `valid` or `invalid`.
    pub outcome: crate::model::ResultOutcome,
    /// Nodes when returned.
    pub nodes: Option<u64>,
    /// Issued at.
    pub issued_ms: i64,
    /// Returned at.
    pub returned_ms: Option<i64>,
    /// Wall time the worker reported.
    pub elapsed_ms: Option<u64>,
}

/// One worker and its latest results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerHistory {
    /// The standing.
    pub standing: WorkerStanding,
    /// Latest results first.
    pub results: Vec<WorkerResult>,
}
