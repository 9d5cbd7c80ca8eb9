//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.

use crate::chess_move::Move;
use crate::position::Position;

/// The number of leaf nodes `depth` plies below `pos` (1 at depth 0).
pub fn perft(pos: &Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        _ => perft_bulk(pos, depth),
    }
}

/// Recursion with bulk counting: the last ply is counted per piece with a popcount.
fn perft_bulk(pos: &Position, depth: u32) -> u64 {
    if depth == 1 {
        return pos.count_moves();
    }
    let mut nodes = 0;
    pos.generate(&mut |batch| {
        batch.for_each(|m| nodes += perft_bulk(&pos.play_unhashed(m, batch.role), depth - 1));
    });
    nodes
}

/// Perft split by root move: each legal move with the count of its subtree, in generation order.
pub fn divide(pos: &Position, depth: u32) -> Vec<(Move, u64)> {
    let moves = pos.legal_moves();
    moves
        .iter()
        .map(|&m| {
            (
                m,
                if depth == 0 {
                    0
                } else {
                    perft(&pos.play(m), depth - 1)
                },
            )
        })
        .collect()
}
