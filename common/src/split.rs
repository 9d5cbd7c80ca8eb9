//! Splitting a deep perft at ply k, with transposition merging (issue 5).
//!
//! The positions k plies below a root are enumerated; paths that reach the same position are
//! merged into one [`SplitNode`] with their multiplicity, so that each distinct position is
//! counted once, at depth D − k, and perft(root, D) = Σ multiplicity × perft(node, D − k).
//! Two positions are the same when the pieces, the side to move, the castling rights and the
//! en-passant square agree — the first four FEN fields. [`Position`] sets the en-passant square
//! only when a capture is legal, so positions that differ only by an unusable double-step merge.
//! Move counters are ignored: they do not change perft.

use std::collections::{BTreeMap, HashMap};

use crate::fen::CastlingNotation;
use crate::position::Position;

/// One distinct position k plies below the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitNode {
    /// Shredder-FEN with counters normalised to `0 1`, so the workunit is the same whichever
    /// path reached it first.
    pub fen: String,
    /// The number of move paths from the root that reach this position.
    pub multiplicity: u64,
    /// The paths per root move (UCI, king-takes-rook castling): the share of this node in each
    /// entry of the root's divide. Sums to `multiplicity`.
    pub by_first_move: BTreeMap<String, u64>,
}

/// The merge key: FEN without the move counters.
fn key(pos: &Position) -> String {
    let fen = pos.to_fen(CastlingNotation::Shredder);
    let mut fields: Vec<&str> = fen.split(' ').collect();
    fields.truncate(4);
    fields.join(" ")
}

/// The distinct positions `ply` plies below `root`, sorted by FEN. Lines that end in mate or
/// stalemate before `ply` have no leaves below and so do not appear. `ply` 0 gives the root.
///
/// # Examples
///
/// perft(root, D) = Σ multiplicity × perft(node, D − k): the identity every split campaign
/// relies on.
///
/// ```
/// use c960_common::split::split;
/// use c960_common::{Position, StartPosition, perft};
///
/// let root = StartPosition::new(518).unwrap().position();
/// let nodes = split(&root, 2);
/// assert_eq!(nodes.len(), 400); // 20 × 20 paths, no transpositions yet at ply 2
/// let total: u64 = nodes
///     .iter()
///     .map(|n| n.multiplicity * perft(&Position::from_fen(&n.fen).unwrap(), 2))
///     .sum();
/// assert_eq!(total, perft(&root, 4));
/// assert_eq!(total, 197_281);
/// ```
pub fn split(root: &Position, ply: u32) -> Vec<SplitNode> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut nodes: Vec<SplitNode> = Vec::new();
    let mut visit = |pos: &Position, first: &str| {
        let k = key(pos);
        let i = *index.entry(k.clone()).or_insert_with(|| {
            nodes.push(SplitNode {
                fen: format!("{k} 0 1"),
                multiplicity: 0,
                by_first_move: BTreeMap::new(),
            });
            nodes.len() - 1
        });
        let n = &mut nodes[i];
        n.multiplicity += 1;
        *n.by_first_move.entry(first.to_string()).or_insert(0) += 1;
    };
    if ply == 0 {
        visit(root, "");
    } else {
        for &m in root.legal_moves().as_slice() {
            let first = m.to_string();
            walk(&root.play(m), ply - 1, &mut |p| visit(p, &first));
        }
    }
    nodes.sort_by(|a, b| a.fen.cmp(&b.fen));
    nodes
}

fn walk(pos: &Position, remaining: u32, f: &mut impl FnMut(&Position)) {
    if remaining == 0 {
        f(pos);
        return;
    }
    for &m in pos.legal_moves().as_slice() {
        walk(&pos.play(m), remaining - 1, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perft::perft;
    use crate::startpos::StartPosition;

    #[test]
    fn multiplicities_count_every_path() {
        let root = StartPosition::new(518).unwrap().position();
        for ply in 0..=3 {
            let nodes = split(&root, ply);
            let paths: u64 = nodes.iter().map(|n| n.multiplicity).sum();
            assert_eq!(
                u128::from(paths),
                u128::from(perft(&root, ply)),
                "ply {ply}"
            );
            for n in &nodes {
                assert_eq!(n.by_first_move.values().sum::<u64>(), n.multiplicity);
                assert!(Position::from_fen(&n.fen).is_ok());
            }
        }
        // 1. Nf3 Nf6 2. Ng1 and 1. Nc3 ... transpose: ply 3 has fewer positions than paths.
        let nodes = split(&root, 3);
        assert!((nodes.len() as u64) < perft(&root, 3));
        assert_eq!(split(&root, 1).len(), 20);
    }

    #[test]
    fn split_sums_equal_perft_at_depth_5() {
        for sp in [0, 518, 959] {
            let root = StartPosition::new(sp).unwrap().position();
            let direct = perft(&root, 5);
            for ply in 1..=3 {
                let total: u128 = split(&root, ply)
                    .iter()
                    .map(|n| {
                        let pos = Position::from_fen(&n.fen).unwrap();
                        u128::from(n.multiplicity) * u128::from(perft(&pos, 5 - ply))
                    })
                    .sum();
                assert_eq!(total, u128::from(direct), "sp {sp} ply {ply}");
            }
        }
    }
}
