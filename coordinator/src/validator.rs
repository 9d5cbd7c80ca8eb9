//! Validation: quorum by digest among distinct workers, and the sanity checks a result must pass
//! before it may vote at all. Pure functions, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use c960_common::wire::{PerftResult, PositionSpec, WorkUnitKind};
use c960_common::{Position, StartPosition};

/// A digest as stored and compared.
pub type Digest = [u8; 32];

/// One returned result as the validator sees it: who sent it and its digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The worker that computed it.
    pub worker_id: u64,
    /// Its digest.
    pub digest: Digest,
}

/// Agreeing workers per digest. A worker counts once per digest, so a quorum always means
/// distinct computations even if a worker somehow returned twice.
fn tally(votes: &[Vote]) -> BTreeMap<Digest, BTreeSet<u64>> {
    let mut groups: BTreeMap<Digest, BTreeSet<u64>> = BTreeMap::new();
    for v in votes {
        groups.entry(v.digest).or_default().insert(v.worker_id);
    }
    groups
}

/// The canonical digest if `quorum` distinct workers agree on one, else `None`.
/// If two digests both reach the quorum (only possible with many liars), the larger group
/// wins, ties broken by digest order so the outcome is deterministic.
pub fn find_quorum(quorum: u32, votes: &[Vote]) -> Option<Digest> {
    tally(votes)
        .into_iter()
        .filter(|(_, w)| w.len() as u32 >= quorum.max(1))
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)))
        .map(|(d, _)| d)
}

/// The size of the largest group of distinct workers that agree on one digest.
pub fn best_agreement(votes: &[Vote]) -> u32 {
    tally(votes)
        .values()
        .map(|w| w.len() as u32)
        .max()
        .unwrap_or(0)
}

/// Why a result was refused before voting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The workunit's own position cannot be set up (corrupt store).
    #[error("workunit position is invalid: {0}")]
    BadWorkunit(String),
    /// The divide does not list exactly the legal root moves.
    #[error("divide does not list exactly the legal root moves: {0}")]
    Moves(String),
    /// The divide does not sum to the node count.
    #[error("divide sums to {sum} but nodes is {nodes}")]
    Sum {
        /// Sum of the divide.
        sum: u128,
        /// Claimed total.
        nodes: u64,
    },
}

/// Checks what can be checked cheaply without redoing the work: the divide names exactly the
/// legal root moves, once each, and sums to the node count. Catches broken or careless
/// clients early; wrong counts that pass this are caught by the quorum.
pub fn check_perft_shape(kind: &WorkUnitKind, result: &PerftResult) -> Result<(), ShapeError> {
    let WorkUnitKind::Perft { position, depth } = kind;
    let pos = match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n))
            .map_err(|e| ShapeError::BadWorkunit(e.to_string()))?
            .position(),
        PositionSpec::Fen(fen) => {
            Position::from_fen(fen).map_err(|e| ShapeError::BadWorkunit(e.to_string()))?
        }
    };
    let sum: u128 = result.divide.iter().map(|(_, n)| u128::from(*n)).sum();
    if *depth == 0 {
        return if result.nodes == 1 && result.divide.is_empty() {
            Ok(())
        } else {
            Err(ShapeError::Moves("depth 0 has no divide and 1 node".into()))
        };
    }
    let legal: BTreeSet<String> = pos
        .legal_moves()
        .as_slice()
        .iter()
        .map(|m| m.to_string())
        .collect();
    let mut seen = BTreeSet::new();
    for (m, _) in &result.divide {
        if !legal.contains(m) {
            return Err(ShapeError::Moves(format!("{m} is not a legal root move")));
        }
        if !seen.insert(m.clone()) {
            return Err(ShapeError::Moves(format!("{m} listed twice")));
        }
    }
    if seen.len() != legal.len() {
        return Err(ShapeError::Moves(format!(
            "{} of {} root moves listed",
            seen.len(),
            legal.len()
        )));
    }
    if sum != u128::from(result.nodes) {
        return Err(ShapeError::Sum {
            sum,
            nodes: result.nodes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use c960_common::divide;

    fn v(worker_id: u64, d: u8) -> Vote {
        Vote {
            worker_id,
            digest: [d; 32],
        }
    }

    #[test]
    fn quorum_needs_distinct_workers() {
        assert_eq!(find_quorum(2, &[v(1, 1)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(1, 1)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 1)]), Some([1; 32]));
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 2)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 2), v(3, 2)]), Some([2; 32]));
        assert_eq!(find_quorum(3, &[v(1, 1), v(2, 1)]), None);
        assert_eq!(find_quorum(1, &[v(1, 7)]), Some([7; 32]));
    }

    #[test]
    fn best_agreement_counts_workers() {
        assert_eq!(best_agreement(&[]), 0);
        assert_eq!(best_agreement(&[v(1, 1), v(2, 2), v(3, 2), v(3, 2)]), 2);
    }

    fn honest(depth: u32) -> (WorkUnitKind, PerftResult) {
        let kind = WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth,
        };
        let pos = StartPosition::new(518).unwrap().position();
        let d: Vec<(String, u64)> = divide(&pos, depth)
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        let nodes = d.iter().map(|x| x.1).sum();
        (kind, PerftResult { nodes, divide: d })
    }

    #[test]
    fn shape_checks() {
        let (kind, good) = honest(2);
        assert_eq!(check_perft_shape(&kind, &good), Ok(()));
        let mut bad_sum = good.clone();
        bad_sum.nodes += 1;
        assert!(matches!(
            check_perft_shape(&kind, &bad_sum),
            Err(ShapeError::Sum { .. })
        ));
        let mut missing = good.clone();
        let (_, n) = missing.divide.pop().unwrap();
        missing.nodes -= n;
        assert!(matches!(
            check_perft_shape(&kind, &missing),
            Err(ShapeError::Moves(_))
        ));
        let mut dup = good.clone();
        dup.divide[1].0 = dup.divide[0].0.clone();
        assert!(check_perft_shape(&kind, &dup).is_err());
        let mut illegal = good.clone();
        illegal.divide[0].0 = "e2e5".into();
        assert!(check_perft_shape(&kind, &illegal).is_err());
        // Consistent but wrong counts pass the shape check: only the quorum catches them.
        let mut liar = good;
        liar.divide[0].1 += 1;
        liar.nodes += 1;
        assert_eq!(check_perft_shape(&kind, &liar), Ok(()));
    }
}
