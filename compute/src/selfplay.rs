//! Self-play workunits: games from one start, the engine against itself at a fixed node budget
//! per move, `ucinewgame` before each game, the first plies of each game chosen by a PRNG seeded
//! from the workunit ([`c960_common::game::openings`]), so that replicas with one engine build
//! play the same games and the games of one workunit differ from each other.

use std::sync::atomic::{AtomicBool, Ordering};

use c960_common::game::{self, Outcome, PlayedGame};
use c960_common::search::{self, SearchLimits};
use c960_common::wire::SelfPlayResult;
use c960_common::{CastlingNotation, Move, Position};

use crate::engine::Engine;
use crate::error::ComputeError;

/// The most games one workunit may ask for (the PGN of a hundred capped games stays well under
/// the 1 MiB body limit).
pub const MAX_GAMES: u32 = 100;

/// The largest node budget per move accepted.
pub const MAX_NODES_PER_MOVE: u64 = 1_000_000_000;

/// The built-in searcher's move at a node budget: iterative deepening, each depth from a
/// fresh table, stopping after the first depth whose search took at least `nodes` nodes.
/// Deterministic: a fixed-depth search is, and the stop depends only on node counts.
pub fn builtin_move(pos: &Position, nodes: u64, hash_mib: usize) -> (Option<Move>, u64) {
    let mut total = 0;
    let mut best = None;
    for depth in 1..=search::MAX_DEPTH {
        let a = search::analyse(pos, &SearchLimits { depth, hash_mib });
        total += a.nodes;
        best = a.best_move;
        if a.nodes >= nodes {
            break;
        }
    }
    (best, total)
}

/// The parameters of one self-play workunit.
#[derive(Clone, Copy, Debug)]
pub struct SelfPlaySpec {
    /// Games to play.
    pub games: u32,
    /// Nodes per engine move.
    pub nodes: u64,
    /// Random opening plies.
    pub opening_plies: u32,
    /// Move cap in plies.
    pub max_plies: u32,
    /// Seed of the openings.
    pub seed: u64,
}

/// Plays the games of a self-play workunit with `engine` (already started with the workunit's
/// table size). `progress(done, total)` is called after each game; a cancel request is honoured
/// between moves.
pub fn play_games(
    engine: &mut Engine,
    start: &Position,
    spec: SelfPlaySpec,
    cancel: &AtomicBool,
    mut progress: impl FnMut(u32, u32),
) -> Result<SelfPlayResult, ComputeError> {
    if spec.games == 0 || spec.games > MAX_GAMES {
        return Err(ComputeError::BadPosition(format!(
            "self-play games {} is out of range 1..{MAX_GAMES}",
            spec.games
        )));
    }
    if spec.nodes == 0 || spec.nodes > MAX_NODES_PER_MOVE {
        return Err(ComputeError::BadPosition(format!(
            "self-play nodes per move {} is out of range 1..{MAX_NODES_PER_MOVE}",
            spec.nodes
        )));
    }
    let engine_id = engine.id();
    let mut result = SelfPlayResult {
        engine_id: engine_id.clone(),
        nodes: 0,
        white_wins: 0,
        draws: 0,
        black_wins: 0,
        games: Vec::with_capacity(spec.games as usize),
    };
    let openings = game::openings(start, spec.seed, spec.games, spec.opening_plies);
    for (i, opening) in openings.iter().enumerate() {
        let played = play_one(engine, start, opening, spec, cancel, &mut result.nodes)?;
        match played.outcome {
            Outcome::WhiteWins => result.white_wins += 1,
            Outcome::Draw => result.draws += 1,
            Outcome::BlackWins => result.black_wins += 1,
        }
        result
            .games
            .push(game::to_pgn(&played, &engine_id, i as u32 + 1));
        progress(i as u32 + 1, spec.games);
    }
    Ok(result)
}

fn play_one(
    engine: &mut Engine,
    start: &Position,
    opening: &[Move],
    spec: SelfPlaySpec,
    cancel: &AtomicBool,
    nodes: &mut u64,
) -> Result<PlayedGame, ComputeError> {
    let failed = |e: anyhow::Error| ComputeError::EngineFailed(format!("{e:#}"));
    if let Engine::Uci(uci) = engine {
        uci.new_game().map_err(failed)?;
    }
    game::play_game(
        *start,
        opening,
        spec.max_plies,
        |start, moves, current| {
            if cancel.load(Ordering::Relaxed) {
                return Err(ComputeError::Cancelled);
            }
            let (m, searched) = match engine {
                Engine::Builtin { hash_mib } => {
                    let (m, n) = builtin_move(current, spec.nodes, *hash_mib);
                    let m = m.ok_or_else(|| {
                        ComputeError::EngineFailed("no move in a position with moves".into())
                    })?;
                    (m, n)
                }
                Engine::Uci(uci) => uci
                    .best_move_nodes(start, moves, current, spec.nodes)
                    .map_err(failed)?,
            };
            *nodes = nodes.saturating_add(searched);
            Ok(m)
        },
        |m, pos| {
            ComputeError::EngineFailed(format!(
                "the engine's move {m} is not legal in {}",
                pos.to_fen(CastlingNotation::Shredder)
            ))
        },
    )
}
