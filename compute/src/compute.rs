//! Computing a workunit: perft with the engine of `c960-common`, root move by root move, so that
//! progress can be shown and a cancel request is honoured between root moves; analysis with the
//! built-in searcher or the worker's UCI engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use c960_common::wire::{AnalysisEngine, PerftResult, PositionSpec, WorkResult, WorkUnitKind};
use c960_common::{PerftEngine, PerftOptions, Position, StartPosition};
use c960_common::{perft, search};

use crate::engine::{Engine, to_wire};
pub use crate::error::ComputeError;
use crate::selfplay::{SelfPlaySpec, play_games};
use crate::uci_engine::UciCommand;

/// The largest table an analysis workunit may ask for, in MiB: a coordinator asking for more
/// is misconfigured, and a volunteer's machine is not to be exhausted.
pub const MAX_ANALYSIS_HASH_MIB: u32 = 4096;

/// The worker's UCI engine: how to start it, and the running process kept across workunits.
pub struct UciSlot {
    /// The engine command.
    pub command: UciCommand,
    /// How long one search may take before the engine is killed.
    pub timeout: Duration,
    /// The running engine and the `Hash` it was started with.
    pub running: Option<(Engine, u32)>,
}

impl UciSlot {
    /// A slot that starts `command` on first use.
    pub fn new(command: UciCommand, timeout: Duration) -> UciSlot {
        UciSlot {
            command,
            timeout,
            running: None,
        }
    }
}

/// Computes any workunit. Perft goes root move by root move (see [`compute`]); analysis and
/// self-play games ([`crate::selfplay`]) use the built-in searcher or the UCI engine in `uci`
/// (see `with_engine`).
pub fn compute_any(
    kind: &WorkUnitKind,
    cancel: &AtomicBool,
    perft: &PerftEngine,
    uci: Option<&mut UciSlot>,
    mut progress: impl FnMut(usize, usize, u64),
) -> Result<WorkResult, ComputeError> {
    match kind {
        WorkUnitKind::Perft { .. } => {
            compute_with(perft, kind, cancel, progress).map(WorkResult::Perft)
        }
        WorkUnitKind::Analysis {
            depth,
            engine,
            hash_mib,
            ..
        } => {
            let pos = root_position(kind)?;
            if *depth == 0 || *depth > search::MAX_DEPTH {
                return Err(ComputeError::BadPosition(format!(
                    "analysis depth {depth} is out of range 1..{}",
                    search::MAX_DEPTH
                )));
            }
            with_engine(*engine, *hash_mib, uci, |e| {
                let a = e
                    .analyse(&pos, *depth)
                    .map_err(|e| ComputeError::EngineFailed(format!("{e:#}")))?;
                Ok(WorkResult::Analysis(to_wire(&a, &e.id())))
            })
        }
        WorkUnitKind::SelfPlay {
            games,
            nodes,
            engine,
            hash_mib,
            opening_plies,
            max_plies,
            seed,
            ..
        } => {
            let pos = root_position(kind)?;
            let spec = SelfPlaySpec {
                games: *games,
                nodes: *nodes,
                opening_plies: *opening_plies,
                max_plies: *max_plies,
                seed: *seed,
            };
            with_engine(*engine, *hash_mib, uci, |e| {
                play_games(e, &pos, spec, cancel, |done, total| {
                    progress(done as usize, total as usize, 0)
                })
                .map(WorkResult::SelfPlay)
            })
        }
    }
}

/// Runs `work` with the engine a workunit asks for: the built-in searcher (a fresh table each
/// search, so replicas agree exactly), or the UCI engine in `uci`, started on first use, kept
/// across workunits (each analysis and game begins with `ucinewgame`), and dropped — killing the
/// process — after any failure.
fn with_engine<T>(
    engine: AnalysisEngine,
    hash_mib: u32,
    uci: Option<&mut UciSlot>,
    work: impl FnOnce(&mut Engine) -> Result<T, ComputeError>,
) -> Result<T, ComputeError> {
    if hash_mib == 0 || hash_mib > MAX_ANALYSIS_HASH_MIB {
        return Err(ComputeError::BadPosition(format!(
            "analysis hash {hash_mib} MiB is out of range 1..{MAX_ANALYSIS_HASH_MIB}"
        )));
    }
    match engine {
        AnalysisEngine::Builtin => work(&mut Engine::Builtin {
            hash_mib: hash_mib as usize,
        }),
        AnalysisEngine::Uci => {
            let slot = uci.ok_or_else(|| {
                ComputeError::EngineFailed("this worker has no UCI engine (--uci)".into())
            })?;
            // A different table size needs a fresh process: `Hash` is part of the
            // reproducibility contract and is set once at start.
            let mut engine = match slot.running.take() {
                Some((e, h)) if h == hash_mib => e,
                _ => Engine::start(Some(&slot.command), hash_mib as usize, slot.timeout)
                    .map_err(|e| ComputeError::EngineFailed(format!("{e:#}")))?,
            };
            // On error `engine` is dropped here, which kills the process.
            let result = work(&mut engine)?;
            slot.running = Some((engine, hash_mib));
            Ok(result)
        }
    }
}

/// The root position of a workunit.
pub fn root_position(kind: &WorkUnitKind) -> Result<Position, ComputeError> {
    match kind.position() {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n))
            .map(|s| s.position())
            .map_err(|e| ComputeError::BadPosition(e.to_string())),
        PositionSpec::Fen(fen) => {
            Position::from_fen(fen).map_err(|e| ComputeError::BadPosition(e.to_string()))
        }
    }
}

/// Computes a perft workunit with a plain single-threaded engine (no table).
/// `progress(done, total, nodes)` is called after each root move.
pub fn compute(
    kind: &WorkUnitKind,
    cancel: &AtomicBool,
    progress: impl FnMut(usize, usize, u64),
) -> Result<PerftResult, ComputeError> {
    compute_with(
        &PerftEngine::new(PerftOptions::default()),
        kind,
        cancel,
        progress,
    )
}

/// Computes a perft workunit with `engine`, whose hash table (if any) persists across calls, so
/// that a worker doing many split workunits of one start position reuses transpositions.
pub fn compute_with(
    engine: &PerftEngine,
    kind: &WorkUnitKind,
    cancel: &AtomicBool,
    mut progress: impl FnMut(usize, usize, u64),
) -> Result<PerftResult, ComputeError> {
    let WorkUnitKind::Perft { depth, .. } = kind else {
        return Err(ComputeError::BadPosition("not a perft workunit".into()));
    };
    let pos = root_position(kind)?;
    if *depth > perft::MAX_DEPTH {
        return Err(ComputeError::BadPosition(format!(
            "perft depth {depth} is out of range 0..{}",
            perft::MAX_DEPTH
        )));
    }
    if *depth == 0 {
        return Ok(PerftResult {
            nodes: 1,
            divide: Vec::new(),
        });
    }
    engine.new_generation();
    let moves = pos.legal_moves();
    let total = moves.as_slice().len();
    let mut divide = Vec::with_capacity(total);
    let mut nodes = 0u64;
    for (i, &m) in moves.as_slice().iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        let n = engine.perft(&pos.play(m), depth - 1);
        nodes += n;
        divide.push((m.to_string(), n));
        progress(i + 1, total, nodes);
    }
    Ok(PerftResult { nodes, divide })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_perft_and_cancels() {
        let kind = WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 3,
        };
        let no = AtomicBool::new(false);
        let mut calls = 0;
        let r = compute(&kind, &no, |_, _, _| calls += 1).unwrap();
        assert_eq!(r.nodes, 8902);
        assert_eq!(r.divide.len(), 20);
        assert_eq!(calls, 20);
        let yes = AtomicBool::new(true);
        assert!(matches!(
            compute(&kind, &yes, |_, _, _| {}),
            Err(ComputeError::Cancelled)
        ));
        let fen = WorkUnitKind::Perft {
            position: PositionSpec::Fen("bad".into()),
            depth: 1,
        };
        assert!(compute(&fen, &no, |_, _, _| {}).is_err());
    }

    #[test]
    fn builtin_analysis_is_deterministic_and_uci_needs_an_engine() {
        let kind = WorkUnitKind::Analysis {
            position: PositionSpec::StartPosition(518),
            depth: 3,
            engine: AnalysisEngine::Builtin,
            hash_mib: 1,
        };
        let no = AtomicBool::new(false);
        let perft = PerftEngine::new(PerftOptions::default());
        let a = compute_any(&kind, &no, &perft, None, |_, _, _| {}).unwrap();
        let b = compute_any(&kind, &no, &perft, None, |_, _, _| {}).unwrap();
        assert_eq!(a, b);
        let WorkResult::Analysis(r) = a else {
            panic!("not an analysis")
        };
        assert_eq!(r.engine_id, search::ENGINE_ID);
        assert_eq!(r.pv.first(), r.best_move.as_ref());
        let uci = WorkUnitKind::Analysis {
            position: PositionSpec::StartPosition(518),
            depth: 3,
            engine: AnalysisEngine::Uci,
            hash_mib: 1,
        };
        assert!(matches!(
            compute_any(&uci, &no, &perft, None, |_, _, _| {}),
            Err(ComputeError::EngineFailed(_))
        ));
        // An engine that exits at once: the handshake fails, a failed replica.
        let gone = UciCommand::parse("/bin/true").unwrap();
        let mut missing = UciSlot::new(gone, Duration::from_secs(5));
        assert!(matches!(
            compute_any(&uci, &no, &perft, Some(&mut missing), |_, _, _| {}),
            Err(ComputeError::EngineFailed(_))
        ));
    }

    #[test]
    fn a_kept_hashed_engine_with_its_own_seed_gives_the_same_counts() {
        let engine = PerftEngine::new(PerftOptions {
            threads: 1,
            hash_mib: 1,
            seed: 12345,
        });
        let no = AtomicBool::new(false);
        for _ in 0..2 {
            let kind = WorkUnitKind::Perft {
                position: PositionSpec::StartPosition(518),
                depth: 4,
            };
            assert_eq!(
                compute_with(&engine, &kind, &no, |_, _, _| {})
                    .unwrap()
                    .nodes,
                197_281
            );
        }
    }
}
