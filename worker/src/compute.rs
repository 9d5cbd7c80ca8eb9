//! Computing a workunit with the engine of `c960-common`, root move by root move, so that
//! progress can be shown and a cancel request is honoured between root moves.

use std::sync::atomic::{AtomicBool, Ordering};

use c960_common::wire::{PerftResult, PositionSpec, WorkUnitKind};
use c960_common::{Position, StartPosition, perft};

/// Why a workunit could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// The workunit names a position this engine refuses.
    #[error("bad workunit position: {0}")]
    BadPosition(String),
    /// Cancelled (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
}

/// The root position of a workunit.
pub fn root_position(kind: &WorkUnitKind) -> Result<Position, ComputeError> {
    let WorkUnitKind::Perft { position, .. } = kind;
    match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n))
            .map(|s| s.position())
            .map_err(|e| ComputeError::BadPosition(e.to_string())),
        PositionSpec::Fen(fen) => {
            Position::from_fen(fen).map_err(|e| ComputeError::BadPosition(e.to_string()))
        }
    }
}

/// Computes a perft workunit. `progress(done, total, nodes)` is called after each root move.
pub fn compute(
    kind: &WorkUnitKind,
    cancel: &AtomicBool,
    mut progress: impl FnMut(usize, usize, u64),
) -> Result<PerftResult, ComputeError> {
    let WorkUnitKind::Perft { depth, .. } = kind;
    let pos = root_position(kind)?;
    if *depth == 0 {
        return Ok(PerftResult {
            nodes: 1,
            divide: Vec::new(),
        });
    }
    let moves = pos.legal_moves();
    let total = moves.as_slice().len();
    let mut divide = Vec::with_capacity(total);
    let mut nodes = 0u64;
    for (i, &m) in moves.as_slice().iter().enumerate() {
        if cancel.load(Ordering::Relaxed) {
            return Err(ComputeError::Cancelled);
        }
        let n = perft(&pos.play(m), depth - 1);
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
}
