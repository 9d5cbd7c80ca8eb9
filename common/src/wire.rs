//! Wire types of the worker protocol (`/api/v1/…`), shared by the coordinator and the worker.
//!
//! Every request starts with the protocol version ([`PROTOCOL_VERSION`]) as its first field, so
//! that the coordinator can read the version from the prefix of a body before it decodes the rest
//! and refuse an incompatible client with a clear code instead of a decode error. Bodies are
//! encoded with [`crate::codec`]; `docs/protocol.md` describes every endpoint.

use serde::{Deserialize, Serialize};

/// The protocol version spoken by this build. Bumped on any incompatible change of these types.
pub const PROTOCOL_VERSION: u32 = 2;

/// The largest request body the coordinator accepts, and the decode limit of [`crate::codec`].
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The content type of every bincode body.
pub const CONTENT_TYPE: &str = "application/octet-stream";

/// A worker's identity as given at registration and kept in its state file. The token is sent
/// with every later request as `Authorization: Bearer <token>`, never in a body; the coordinator
/// keeps only a SHA-256 of its secret part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerAuth {
    /// The id the coordinator gave at registration.
    pub worker_id: u64,
    /// The API token: `<worker_id>.<secret>` with a secret of 128 random bits in hex.
    pub token: String,
}

/// The engine that computed a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// Engine name, e.g. `c960-common`.
    pub name: String,
    /// Engine version, e.g. the crate version.
    pub version: String,
}

/// Where a perft workunit starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PositionSpec {
    /// A Chess960 start position by Scharnagl number 0..959.
    StartPosition(u16),
    /// Any position in FEN (used by split campaigns for sub-positions).
    Fen(String),
}

/// What a workunit asks for. An enum so that later kinds (analysis) fit without a new protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkUnitKind {
    /// Count the leaves `depth` plies below `position`, with the divide per root move.
    Perft {
        /// The root position.
        position: PositionSpec,
        /// Depth in plies (≥ 1).
        depth: u32,
    },
}

/// `POST /api/v1/register`: enrol a new worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterRequest {
    /// Must equal [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// A human name for status pages (not unique, not trusted).
    pub name: String,
    /// The engine this worker runs.
    pub engine: EngineInfo,
    /// Threads the worker offers (informational for now).
    pub threads: u32,
    /// Hash table size in MiB (informational for now).
    pub hash_mib: u32,
    /// The enrolment secret the operator handed out (`None` where enrolment is open).
    pub enrol_secret: Option<String>,
}

/// Answer to [`RegisterRequest`]: the identity to keep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterResponse {
    /// The identity; the worker stores it and sends its token with every later request.
    pub auth: WorkerAuth,
}

/// `POST /api/v1/fetch`: ask for one workunit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// Must equal [`PROTOCOL_VERSION`]. Who asks is told by the bearer token.
    pub protocol: u32,
}

/// A lease on one replica of one workunit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The lease (= replica/result) id to quote when submitting or abandoning.
    pub lease_id: u64,
    /// The workunit; part of the result digest.
    pub workunit_id: u64,
    /// What to compute.
    pub kind: WorkUnitKind,
    /// Unix time in milliseconds after which the lease expires and the replica is reissued.
    pub deadline_unix_ms: i64,
}

/// Answer to [`FetchRequest`]. "No work right now" is not an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FetchResponse {
    /// Compute this and submit it before the deadline.
    Assigned(Assignment),
    /// Nothing to hand out now; ask again after this many seconds.
    NoWork {
        /// Seconds to wait before the next fetch (also sent as the `Retry-After` header).
        retry_after_secs: u32,
    },
}

/// The payload of a perft result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerftResult {
    /// Leaf count.
    pub nodes: u64,
    /// Leaf count per root move, by UCI move (king-takes-rook castling as the engine prints it).
    pub divide: Vec<(String, u64)>,
}

/// `POST /api/v1/submit`: the result of a lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// Must equal [`PROTOCOL_VERSION`]. The bearer token must be the lease holder's.
    pub protocol: u32,
    /// The lease being answered.
    pub lease_id: u64,
    /// The workunit of the lease.
    pub workunit_id: u64,
    /// The counts.
    pub result: PerftResult,
    /// Wall time of the computation in milliseconds (informational, not digested).
    pub elapsed_ms: u64,
    /// The engine that computed it (informational, not digested).
    pub engine: EngineInfo,
    /// SHA-256 of the canonical encoding, see [`crate::digest`].
    pub digest: [u8; 32],
}

/// Answer to [`SubmitRequest`]. Whether the result won its vote is not revealed to the worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubmitResponse {
    /// Stored; it will be compared with the other replicas.
    Accepted,
}

/// `POST /api/v1/abandon`: give a lease back (e.g. on Ctrl-C) so it is reissued at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbandonRequest {
    /// Must equal [`PROTOCOL_VERSION`]. The bearer token must be the lease holder's.
    pub protocol: u32,
    /// The lease.
    pub lease_id: u64,
}

/// Answer to [`AbandonRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AbandonResponse {
    /// The lease is closed and its replica will go to another worker.
    Released,
}

/// The JSON body of every refusal (any 4xx/5xx), on every endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `bad_body`, `lease_not_yours` (see `docs/protocol.md`).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}
