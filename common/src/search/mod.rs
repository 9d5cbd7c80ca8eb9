//! The built-in searcher: iterative deepening principal-variation search with quiescence search,
//! a transposition table, move ordering (hash move, MVV-LVA captures, killers, history), null-move
//! pruning and late-move reductions, over a tapered material + piece-square evaluation.
//!
//! Pure and single-threaded: no I/O, no clock, no threads. The transposition table is created
//! empty for every call, so [`analyse`] at a fixed depth returns the same score, best move, PV and
//! node count on every run and every machine — which is what lets volunteers' replicas of an
//! analysis workunit be compared exactly.
//!
//! Scores in [`Analysis`] are from **White's point of view** (positive: White is better), unlike
//! the side-to-move scores used inside the search and in UCI output.

mod alphabeta;
pub mod eval;
mod tt;

use std::fmt;

use crate::chess_move::{Move, MoveKind};
use crate::position::Position;
use crate::types::{Color, Role};

/// The engine id reported with every built-in analysis; results of different ids are never
/// mixed in one quorum, so the version changes whenever search or evaluation changes.
pub const ENGINE_ID: &str = concat!("c960-builtin ", env!("CARGO_PKG_VERSION"), "-s2");

/// The deepest search [`analyse`] accepts, in plies.
pub const MAX_DEPTH: u32 = 64;

/// The default transposition-table size in MiB.
pub const DEFAULT_HASH_MIB: usize = 16;

/// What to search: a fixed depth with a fixed-size transposition table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SearchLimits {
    /// Nominal depth in plies (1..=[`MAX_DEPTH`]); quiescence search and check extensions go
    /// deeper.
    pub depth: u32,
    /// Transposition-table size in MiB. Part of the reproducibility contract: the same depth
    /// with a different table size may give a different node count or even a different move.
    pub hash_mib: usize,
}

impl SearchLimits {
    /// A fixed-depth search with the default table size.
    pub fn depth(depth: u32) -> SearchLimits {
        SearchLimits {
            depth,
            hash_mib: DEFAULT_HASH_MIB,
        }
    }
}

/// An evaluation: centipawns, or a forced mate.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Score {
    /// Centipawns (100 = one pawn).
    Cp(i32),
    /// Mate in this many moves (full moves, as UCI counts them); negative when the side whose
    /// point of view the score takes is the one being mated. `Mate(0)` means the side to move is
    /// already checkmated.
    Mate(i32),
}

impl Score {
    /// The same score from the other side's point of view.
    pub fn negate(self) -> Score {
        match self {
            Score::Cp(cp) => Score::Cp(-cp),
            Score::Mate(n) => Score::Mate(-n),
        }
    }

    /// The centipawn value, if the score is not a mate.
    pub fn cp(self) -> Option<i32> {
        match self {
            Score::Cp(cp) => Some(cp),
            Score::Mate(_) => None,
        }
    }

    /// The mate distance in moves, if the score is a mate.
    pub fn mate(self) -> Option<i32> {
        match self {
            Score::Cp(_) => None,
            Score::Mate(n) => Some(n),
        }
    }
}

impl fmt::Display for Score {
    /// `+0.35` (pawns) or `#3` / `#-3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Score::Cp(cp) => {
                let sign = if cp < 0 { "-" } else { "+" };
                let abs = cp.unsigned_abs();
                write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
            }
            Score::Mate(n) => write!(f, "#{n}"),
        }
    }
}

/// The result of a search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// The evaluation from White's point of view.
    pub score: Score,
    /// The move the engine would play; `None` only when the side to move has no legal move.
    pub best_move: Option<Move>,
    /// The principal variation, starting with `best_move` (legal from the analysed position).
    pub pv: Vec<Move>,
    /// Positions visited, quiescence nodes included, summed over all iterations.
    pub nodes: u64,
    /// The depth of the last completed iteration, in plies.
    pub depth: u32,
    /// Win/draw/loss expectation from White's point of view, when the engine reports one (UCI
    /// engines with `UCI_ShowWDL`; the built-in searcher does not).
    pub wdl: Option<Wdl>,
    /// The main line's exact score at every completed depth, shallowest first (UCI engines;
    /// empty for the built-in searcher). Estimators average several of them.
    pub depths: Vec<DepthScore>,
}

/// What an engine reported when it completed one depth of its iterative deepening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DepthScore {
    /// The completed depth.
    pub depth: u32,
    /// The score from White's point of view.
    pub score: Score,
    /// Win/draw/loss from White's point of view, when reported.
    pub wdl: Option<Wdl>,
    /// Nodes searched so far.
    pub nodes: u64,
}

/// An engine's win/draw/loss expectation in per mille (the three sum to about 1000).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wdl {
    /// White wins.
    pub win: u32,
    /// Draw.
    pub draw: u32,
    /// White loses.
    pub loss: u32,
}

impl Wdl {
    /// The same expectation from the other side's point of view.
    pub fn flip(self) -> Wdl {
        Wdl {
            win: self.loss,
            draw: self.draw,
            loss: self.win,
        }
    }
}

/// Searches `pos` to `limits.depth` plies and returns the result of the last iteration.
///
/// The depth is clamped to 1..=[`MAX_DEPTH`]. Draws by repetition are recognised only inside the
/// searched tree, since a bare position carries no game history; the fifty-move rule and
/// insufficient material are recognised from the position itself.
pub fn analyse(pos: &Position, limits: &SearchLimits) -> Analysis {
    alphabeta::Searcher::new(limits.hash_mib).run(pos, limits.depth.clamp(1, MAX_DEPTH))
}

/// Converts a side-to-move score (in search units) to a White's-view [`Score`].
fn white_view(pos: &Position, score: Score) -> Score {
    if pos.side_to_move() == Color::White {
        score
    } else {
        score.negate()
    }
}

/// The role captured by `m` in `pos`, if it is a capture (en passant captures a pawn; castling
/// "captures" an own rook in its encoding, which is not a capture).
pub fn captured_role(pos: &Position, m: Move) -> Option<Role> {
    match m.kind() {
        MoveKind::EnPassant => Some(Role::Pawn),
        MoveKind::Castle => None,
        MoveKind::Normal | MoveKind::Promotion(_) => pos.role_at(m.to_index()),
    }
}

/// True when `m` captures a piece in `pos`.
pub fn is_capture(pos: &Position, m: Move) -> bool {
    captured_role(pos, m).is_some()
}
