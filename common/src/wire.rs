//! Wire types of the worker protocol (`/api/v1/…`), shared by the coordinator and the worker.
//!
//! Every request starts with the protocol version ([`PROTOCOL_VERSION`]) as its first field, so
//! that the coordinator can read the version from the prefix of a body before it decodes the rest
//! and refuse an incompatible client with a clear code instead of a decode error. Bodies are
//! encoded with [`crate::codec`]; `docs/protocol.md` describes every endpoint.

use serde::{Deserialize, Serialize};

/// The protocol version spoken by this build. Bumped on any incompatible change of these types.
pub const PROTOCOL_VERSION: u32 = 5;

/// The largest request body the coordinator accepts, and the decode limit of [`crate::codec`].
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// How often a worker renews the leases it is computing ([`HeartbeatRequest`]). The coordinator
/// lets a lease go unrenewed for a few of these before its replica goes to another worker.
pub const HEARTBEAT_SECS: u64 = 30;

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

/// Which engine an analysis workunit must be searched with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AnalysisEngine {
    /// The built-in searcher of `c960-common` (`c960_common::search`).
    Builtin,
    /// Whatever UCI engine the volunteer runs; its `id name` goes into the result (and the digest),
    /// so only replicas from the same engine build can form a quorum.
    Uci,
}

impl AnalysisEngine {
    /// `builtin` or `uci`, as on the command line and in the database.
    pub fn name(self) -> &'static str {
        match self {
            AnalysisEngine::Builtin => "builtin",
            AnalysisEngine::Uci => "uci",
        }
    }

    /// The inverse of [`AnalysisEngine::name`].
    pub fn parse(text: &str) -> Option<AnalysisEngine> {
        match text {
            "builtin" => Some(AnalysisEngine::Builtin),
            "uci" => Some(AnalysisEngine::Uci),
            _ => None,
        }
    }
}

/// What a workunit asks for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkUnitKind {
    /// Count the leaves `depth` plies below `position`, with the divide per root move.
    Perft {
        /// The root position.
        position: PositionSpec,
        /// Depth in plies (≥ 1).
        depth: u32,
    },
    /// Search `position` to a fixed `depth` with one thread and a cleared table of `hash_mib`
    /// MiB; deterministic for one engine build, so replicas are compared exactly.
    Analysis {
        /// The root position.
        position: PositionSpec,
        /// Nominal search depth in plies (≥ 1).
        depth: u32,
        /// Which engine.
        engine: AnalysisEngine,
        /// Transposition-table (UCI `Hash`) size in MiB: part of the reproducibility contract.
        hash_mib: u32,
    },
    /// Play `games` games from `position`, the engine against itself: one thread, a table of
    /// `hash_mib` MiB cleared by `ucinewgame` before each game, `go nodes {nodes}` for every
    /// move after the `opening_plies` random ones ([`crate::game::openings`] seeded with
    /// `seed`), ended by the rules or at `max_plies` ([`crate::game::Game::adjudicate`]).
    /// Deterministic for one engine build, so replicas are compared exactly.
    SelfPlay {
        /// The start position of every game.
        position: PositionSpec,
        /// Games to play (≥ 1).
        games: u32,
        /// The node budget of every engine move (`go nodes`).
        nodes: u64,
        /// Which engine.
        engine: AnalysisEngine,
        /// Transposition-table (UCI `Hash`) size in MiB.
        hash_mib: u32,
        /// Random legal plies opening each game.
        opening_plies: u32,
        /// The move cap in plies (a draw when reached).
        max_plies: u32,
        /// The seed of the opening plies (the coordinator uses the workunit id).
        seed: u64,
    },
}

impl WorkUnitKind {
    /// The root position of the workunit.
    pub fn position(&self) -> &PositionSpec {
        match self {
            WorkUnitKind::Perft { position, .. }
            | WorkUnitKind::Analysis { position, .. }
            | WorkUnitKind::SelfPlay { position, .. } => position,
        }
    }

    /// The depth in plies (0 for self-play, which is limited by nodes per move).
    pub fn depth(&self) -> u32 {
        match self {
            WorkUnitKind::Perft { depth, .. } | WorkUnitKind::Analysis { depth, .. } => *depth,
            WorkUnitKind::SelfPlay { .. } => 0,
        }
    }
}

/// What a worker can compute; sent with every fetch so that the coordinator hands out only
/// workunits the worker can do (a worker without a UCI engine never receives a UCI analysis).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Perft workunits.
    pub perft: bool,
    /// Analysis with the built-in searcher.
    pub builtin_analysis: bool,
    /// Analysis with a UCI engine (the worker was started with one).
    pub uci_analysis: bool,
    /// Self-play games, with each engine the two fields above allow (protocol 4).
    pub self_play: bool,
}

impl Capabilities {
    /// Perft and built-in analysis: what every worker of this build can do.
    pub fn builtin() -> Capabilities {
        Capabilities {
            perft: true,
            builtin_analysis: true,
            uci_analysis: false,
            self_play: true,
        }
    }

    /// Whether a workunit of this kind may be handed to the worker.
    pub fn accepts(&self, kind: &WorkUnitKind) -> bool {
        match kind {
            WorkUnitKind::Perft { .. } => self.perft,
            WorkUnitKind::Analysis {
                engine: AnalysisEngine::Builtin,
                ..
            } => self.builtin_analysis,
            WorkUnitKind::Analysis {
                engine: AnalysisEngine::Uci,
                ..
            } => self.uci_analysis,
            WorkUnitKind::SelfPlay { engine, .. } => {
                self.self_play
                    && match engine {
                        AnalysisEngine::Builtin => self.builtin_analysis,
                        AnalysisEngine::Uci => self.uci_analysis,
                    }
            }
        }
    }
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
    /// Which workunit kinds the worker can compute.
    pub capabilities: Capabilities,
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
        /// Why, when a rule keeps this worker from replicas that remain (`None`: every
        /// remaining replica is with other workers, or no campaign has work).
        waiting: Option<crate::wait::Waiting>,
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

/// The payload of an analysis result. Scores are from White's point of view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalysisResult {
    /// Centipawns, when the score is not a mate (exactly one of `score_cp` and `mate` is set).
    pub score_cp: Option<i32>,
    /// Mate distance in moves, positive when White mates.
    pub mate: Option<i32>,
    /// The best move in UCI (king-takes-rook castling); `None` only without legal moves.
    pub best_move: Option<String>,
    /// The principal variation in UCI, starting with the best move.
    pub pv: Vec<String>,
    /// Nodes searched as the engine counts them.
    pub nodes: u64,
    /// White's win/draw/loss per mille, when the engine reports it.
    pub wdl: Option<[u16; 3]>,
    /// The engine id (`c960-builtin x.y.z-sN`, or the UCI `id name [sha256:… net:…]`).
    /// Digested: replicas of different engines or builds never agree.
    pub engine_id: String,
    /// The main line at every completed depth, shallowest first (UCI engines; empty for the
    /// built-in searcher). Digested when present.
    #[serde(default)]
    pub depths: Vec<DepthRecord>,
}

/// One completed depth of an analysis: what the engine said when it finished that iteration.
/// Scores are from White's point of view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepthRecord {
    /// The completed depth.
    pub depth: u32,
    /// Centipawns, when not a mate.
    pub score_cp: Option<i32>,
    /// Mate distance in moves, positive when White mates.
    pub mate: Option<i32>,
    /// White's win/draw/loss per mille, when reported.
    pub wdl: Option<[u16; 3]>,
    /// Nodes searched up to the end of this depth.
    pub nodes: u64,
}

/// The payload of a self-play result: the games and their score, White's point of view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfPlayResult {
    /// The engine id, as for analysis (digested: only replicas of one build agree).
    pub engine_id: String,
    /// Nodes searched over all games, as the engine counts them.
    pub nodes: u64,
    /// Games White won.
    pub white_wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games Black won.
    pub black_wins: u32,
    /// Every game as PGN ([`crate::game::to_pgn`]), in the order played.
    pub games: Vec<String>,
}

/// The payload of a submitted result, by workunit kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkResult {
    /// Answer to [`WorkUnitKind::Perft`].
    Perft(PerftResult),
    /// Answer to [`WorkUnitKind::Analysis`].
    Analysis(AnalysisResult),
    /// Answer to [`WorkUnitKind::SelfPlay`].
    SelfPlay(SelfPlayResult),
}

impl WorkResult {
    /// Nodes visited (leaves for perft, searched nodes for analysis).
    pub fn nodes(&self) -> u64 {
        match self {
            WorkResult::Perft(r) => r.nodes,
            WorkResult::Analysis(r) => r.nodes,
            WorkResult::SelfPlay(r) => r.nodes,
        }
    }
}

impl From<PerftResult> for WorkResult {
    fn from(r: PerftResult) -> Self {
        WorkResult::Perft(r)
    }
}

impl From<AnalysisResult> for WorkResult {
    fn from(r: AnalysisResult) -> Self {
        WorkResult::Analysis(r)
    }
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
    /// The result.
    pub result: WorkResult,
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

/// The most workunits one [`FetchBatchRequest`] may ask for, and the most results one
/// [`SubmitBatchRequest`] may carry (or leases one heartbeat names). A coordinator says the
/// most it takes in the [`MAX_BATCH_HEADER`] of its answers; one that does not say (0.2.0 and
/// before) takes [`LEGACY_MAX_BATCH`].
pub const MAX_BATCH: u32 = 1024;

/// What coordinators before 0.3.0 accept as a batch ([`MAX_BATCH`]); also the BOINC
/// scheduler's batch of reported results.
pub const LEGACY_MAX_BATCH: u32 = 256;

/// The response header in which a coordinator says the largest batch it accepts
/// ([`MAX_BATCH`]).
pub const MAX_BATCH_HEADER: &str = "c960-max-batch";

/// `POST /api/v1/fetch-batch`: ask for up to `max_units` workunits at once. Meant for small
/// workunits (split campaigns at shallow depth), where one request per workunit would make the
/// coordinator's per-request cost the bottleneck; each workunit gets a lease of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchBatchRequest {
    /// Must equal [`PROTOCOL_VERSION`]. Who asks is told by the bearer token.
    pub protocol: u32,
    /// Which workunit kinds the worker can compute.
    pub capabilities: Capabilities,
    /// At most this many workunits, 1..=[`MAX_BATCH`].
    pub max_units: u32,
}

/// Answer to [`FetchBatchRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FetchBatchResponse {
    /// One to `max_units` leases, each on a different workunit, in handout order.
    Assigned(Vec<Assignment>),
    /// Nothing to hand out now; ask again after this many seconds.
    NoWork {
        /// Seconds to wait before the next fetch (also sent as the `Retry-After` header).
        retry_after_secs: u32,
        /// Why, when a rule keeps this worker from replicas that remain (`None`: every
        /// remaining replica is with other workers, or no campaign has work).
        waiting: Option<crate::wait::Waiting>,
    },
}

/// One result inside a [`SubmitBatchRequest`]: the fields of a [`SubmitRequest`] that differ
/// per workunit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchedResult {
    /// The lease being answered.
    pub lease_id: u64,
    /// The workunit of the lease.
    pub workunit_id: u64,
    /// The result.
    pub result: WorkResult,
    /// Wall time of the computation in milliseconds (informational, not digested).
    pub elapsed_ms: u64,
    /// SHA-256 of the canonical encoding, see [`crate::digest`].
    pub digest: [u8; 32],
}

/// `POST /api/v1/submit-batch`: several results at once, judged one by one: a refused result
/// does not affect the others.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitBatchRequest {
    /// Must equal [`PROTOCOL_VERSION`]. The bearer token must hold every lease.
    pub protocol: u32,
    /// The engine that computed them (informational, not digested).
    pub engine: EngineInfo,
    /// 1..=[`MAX_BATCH`] results.
    pub results: Vec<BatchedResult>,
}

/// The verdict on one result of a [`SubmitBatchRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BatchedOutcome {
    /// Stored; it will be compared with the other replicas.
    Accepted,
    /// Refused, with the code and message a single [`SubmitRequest`] would have got.
    Refused(ErrorBody),
}

/// Answer to [`SubmitBatchRequest`]: one outcome per result, in request order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitBatchResponse {
    /// Outcomes, in the order of the request's results.
    pub outcomes: Vec<BatchedOutcome>,
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

/// `POST /api/v1/fail`: the worker could not compute the lease (its UCI engine hung, crashed or
/// answered nonsense). The replica is closed as an error, never counted as a result, reissued to
/// another worker, and not offered to this worker again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailRequest {
    /// Must equal [`PROTOCOL_VERSION`]. The bearer token must be the lease holder's.
    pub protocol: u32,
    /// The lease.
    pub lease_id: u64,
    /// What went wrong (at most 500 bytes are kept).
    pub reason: String,
}

/// Answer to [`FailRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailResponse {
    /// The failure is recorded and the replica will go to another worker.
    Recorded,
}

/// `POST /api/v1/heartbeat`: the worker is alive and still computing these leases; each is
/// renewed (never past its whole life, `--lease-secs`). Sent every [`HEARTBEAT_SECS`] while a
/// batch is in hand, so a worker that died gives its replicas back within minutes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatRequest {
    /// Must equal [`PROTOCOL_VERSION`]. The bearer token must hold the leases.
    pub protocol: u32,
    /// The leases in hand, at most [`MAX_BATCH`].
    pub lease_ids: Vec<u64>,
}

/// Answer to [`HeartbeatRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatResponse {
    /// The leases renewed: still open and this worker's. A lease missing here expired or was
    /// answered; a result for it is still accepted while its replica is needed.
    pub renewed: Vec<u64>,
}

/// `POST /api/v1/standing`: how this worker's results stand on the coordinator (the worker asks
/// now and then, for its totals line; it costs a count over the worker's results).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandingRequest {
    /// Must equal [`PROTOCOL_VERSION`].
    pub protocol: u32,
}

/// Answer to [`StandingRequest`]: this identity's results, lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StandingResponse {
    /// Results returned and accepted.
    pub returned: u64,
    /// Of those, in a validated value (credited).
    pub validated: u64,
    /// Of those, waiting for more replicas before a quorum can agree.
    pub awaiting: u64,
}

/// The JSON body of every refusal (any 4xx/5xx), on every endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `bad_body`, `lease_not_yours` (see `docs/protocol.md`).
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
}

/// The `User-Agent` of every worker request begins with this; the build follows it
/// ([`WorkerBuild::user_agent`]). A header rather than a field of the bodies: workers from before
/// 0.2 send none and are served as before (their build is unknown), and coordinators from before
/// it ignore it, so neither side needs a new protocol version.
pub const USER_AGENT_PRODUCT: &str = "c960-worker";

/// What build a worker runs: its crate version and the git commit it was built from, so that an
/// operator can see who runs an old build.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerBuild {
    /// The crate version, e.g. `0.2.0`.
    pub version: String,
    /// The short git commit, or `unknown` (a build from a source archive without git).
    pub commit: String,
}

impl WorkerBuild {
    /// The `User-Agent` header: `c960-worker/0.2.0 (commit 1a2b3c4d5e6f; protocol 5)`.
    pub fn user_agent(&self) -> String {
        format!(
            "{USER_AGENT_PRODUCT}/{} (commit {}; protocol {PROTOCOL_VERSION})",
            self.version, self.commit
        )
    }

    /// The build a `User-Agent` names, or `None` where it is not a c960 worker's or does not
    /// parse: only short ASCII version and commit text is taken, so what a client chose to
    /// write there is never stored or shown.
    pub fn from_user_agent(header: &str) -> Option<WorkerBuild> {
        let rest = header.strip_prefix(USER_AGENT_PRODUCT)?.strip_prefix('/')?;
        let (version, rest) = rest.split_once(' ')?;
        let commit = rest.strip_prefix("(commit ")?.split([';', ')']).next()?;
        let plain = |s: &str, extra: &[char]| {
            !s.is_empty()
                && s.len() <= 40
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
        };
        (plain(version, &['.', '-', '+']) && plain(commit, &[])).then(|| WorkerBuild {
            version: version.to_string(),
            commit: commit.to_string(),
        })
    }

    /// How pages, logs and `worker list` show it: `0.2.0 (1a2b3c4d5e6f)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.version, self.commit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build() -> WorkerBuild {
        WorkerBuild {
            version: "0.2.0".to_string(),
            commit: "1a2b3c4d5e6f".to_string(),
        }
    }

    #[test]
    fn a_user_agent_reads_back_as_its_build() {
        let b = build();
        assert_eq!(
            b.user_agent(),
            format!("c960-worker/0.2.0 (commit 1a2b3c4d5e6f; protocol {PROTOCOL_VERSION})")
        );
        assert_eq!(WorkerBuild::from_user_agent(&b.user_agent()), Some(b));
        let unknown = WorkerBuild {
            commit: "unknown".to_string(),
            ..build()
        };
        assert_eq!(
            WorkerBuild::from_user_agent(&unknown.user_agent()),
            Some(unknown)
        );
        assert_eq!(build().label(), "0.2.0 (1a2b3c4d5e6f)");
    }

    #[test]
    fn other_or_hostile_user_agents_name_no_build() {
        for ua in [
            "",
            "curl/8.5.0",
            "c960-worker",
            "c960-worker/",
            "c960-worker/0.2.0",
            "c960-worker/0.2.0 (protocol 5)",
            "c960-worker/0.2.0 (commit ; protocol 5)",
            "c960-worker/0.2.0\u{202e} (commit abc; protocol 5)",
            "c960-worker/0.2.0 (commit a<b>c; protocol 5)",
            "c960-worker/0.2.0 (commit abcdefabcdefabcdefabcdefabcdefabcdefabcdefab; protocol 5)",
            "c960-workers/0.2.0 (commit abc; protocol 5)",
        ] {
            assert_eq!(WorkerBuild::from_user_agent(ua), None, "{ua:?}");
        }
    }
}
