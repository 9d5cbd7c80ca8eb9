//! The children a leaf parent counts without looking at them one by one: the moves that
//! change nothing [`ChildMoveCounter`] watches.

use super::ChildMoveCounter;
use crate::attacks::{between, bishop_rays, king_attacks, line, rook_rays};
use crate::movegen::{MoveBatch, shift};
use crate::types::{Bitboard, Role, bb};

impl ChildMoveCounter {
    /// The number of legal moves every child reached by a move in
    /// [`ChildMoveCounter::quiet_targets`] has: the parent's count for the children's side.
    #[inline(always)]
    pub(crate) fn unchanged(&self) -> u64 {
        u64::from(self.total + self.king_moves + self.pawn_moves)
    }

    /// The targets of `batch`, a batch of normal moves of the parent (`PAWN`: of pawns),
    /// whose children have [`ChildMoveCounter::unchanged`] moves, so that they are counted
    /// with one popcount: the moves from a quiet square to a quiet square (see `quiet`;
    /// such a target is empty) that give no check, cannot pin (a slider arriving on its
    /// king's lines) and cannot leave an en-passant capture. Such a move leaves the counted
    /// side's pins, its sliders' reach, its pawn moves and its king and castling moves as they
    /// are, and captures nothing; a unit test checks each against the made child.
    #[inline(always)]
    pub(crate) fn quiet_targets<const PAWN: bool>(&self, batch: &MoveBatch) -> Bitboard {
        let quiet = self.quiet;
        if PAWN {
            let (origins_quiet, double_step) = if batch.pawn_step == 0 {
                // A pinned pawn's batch may hold a double step.
                let from_quiet = 0u64.wrapping_sub((quiet >> batch.from) & 1);
                (from_quiet, self.beside_pawns)
            } else {
                // A target's origin is the target minus the step: quiet origins shifted on.
                let step = batch.pawn_step;
                let double = if step.unsigned_abs() == 16 {
                    self.beside_pawns
                } else {
                    0
                };
                (shift(quiet, step), double)
            };
            batch.to & quiet & origins_quiet & !double_step
        } else if quiet & (1u64 << batch.from) != 0 {
            // The squares from which the piece checks, or pins along the king's lines.
            let checks = match batch.role {
                Role::Knight => self.knight_checks,
                Role::Bishop => bishop_rays(self.king),
                Role::Rook => rook_rays(self.king),
                Role::Queen => self.king_lines,
                _ => 0,
            };
            batch.to & quiet & !checks
        } else {
            0
        }
    }
}

/// `RAY_ENDS[kind][sq]`: the last square on the board of each diagonal (kind 0) or orthogonal
/// (kind 1) ray from `sq`.
static RAY_ENDS: [[Bitboard; 64]; 2] = {
    const STEPS: [[(i8, i8); 4]; 2] = [
        [(1, 1), (1, -1), (-1, 1), (-1, -1)],
        [(1, 0), (-1, 0), (0, 1), (0, -1)],
    ];
    let mut table = [[0; 64]; 2];
    let mut kind = 0;
    while kind < 2 {
        let mut sq = 0;
        while sq < 64 {
            let mut d = 0;
            while d < 4 {
                let (df, dr) = STEPS[kind][d];
                let (mut f, mut r) = ((sq % 8) as i8, (sq / 8) as i8);
                let mut moved = false;
                while f + df >= 0 && f + df < 8 && r + dr >= 0 && r + dr < 8 {
                    f += df;
                    r += dr;
                    moved = true;
                }
                if moved {
                    table[kind][sq] |= 1u64 << (r * 8 + f);
                }
                d += 1;
            }
            sq += 1;
        }
        kind += 1;
    }
    table
};

/// The squares of a slider's `reach` (from `sq`; `kinds` says whether it moves diagonally and
/// orthogonally) whose change leaves its move count as it is: those after which its ray meets
/// the board's edge or a piece of its own (`own`). A piece of the other side arriving on such
/// an empty square is a capture instead of a move there, and nothing lies beyond; one leaving
/// such a square leaves a move there instead of a capture, and nothing beyond.
#[inline(always)]
pub(super) fn far_ends(
    sq: u8,
    kinds: [bool; 2],
    reach: Bitboard,
    own: Bitboard,
    occupied: Bitboard,
) -> Bitboard {
    let [diag, ortho] = kinds;
    let mut edge = 0;
    if diag {
        edge |= RAY_ENDS[0][sq as usize];
    }
    if ortho {
        edge |= RAY_ENDS[1][sq as usize];
    }
    let mut ends = reach & edge;
    for b in bb::squares(reach & occupied & !own) {
        // The other side's piece, when the square after it is its own or off the board.
        let after = line(sq, b) & king_attacks(b) & !between(sq, b) & !(1u64 << sq);
        if after & !own == 0 {
            ends |= 1u64 << b;
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::ChildMoveCounter;
    use crate::position::Position;
    use crate::startpos::StartPosition;
    use crate::types::Role;

    /// Checks every quiet target of `parent` against its made child's own move count, and
    /// returns how many it checked.
    fn check_quiet_targets(parent: &Position) -> usize {
        let mut slot = std::mem::MaybeUninit::uninit();
        let counter = ChildMoveCounter::new_in::<false>(&mut slot, parent);
        let mut checked = 0;
        parent.generate(&mut |batch| {
            if !batch.is_normal() {
                return;
            }
            let quiet = if batch.role == Role::Pawn {
                counter.quiet_targets::<true>(&batch)
            } else {
                counter.quiet_targets::<false>(&batch)
            };
            assert_eq!(quiet & !batch.to, 0);
            batch.for_each(|m| {
                if quiet & (1u64 << m.to_index()) != 0 {
                    assert_eq!(
                        parent.play(m).count_moves(),
                        counter.unchanged(),
                        "{m} counted as changing nothing in {}",
                        parent.to_fen(crate::CastlingNotation::Shredder)
                    );
                    checked += 1;
                }
            });
        });
        checked
    }

    /// A move counted by popcount at the leaves' parents must leave the other side's move
    /// count exactly as it is in the parent: checked against the made child on the reference
    /// sets (Chess960 castling, en-passant and promotion traps) and one ply after each of
    /// their positions, and on random play from every seventh Chess960 start.
    #[test]
    fn quiet_targets_leave_the_childs_count_unchanged() {
        let mut checked = 0;
        for text in [
            include_str!("../../../tests/data/tricky.epd"),
            include_str!("../../../tests/data/standard.epd"),
            include_str!("../../../tests/data/chess960_cpw.epd"),
        ] {
            for line in text.lines() {
                let Some(line) = crate::epd::parse_perft_line(line).unwrap() else {
                    continue;
                };
                let pos = Position::from_fen(&line.fen).unwrap();
                checked += check_quiet_targets(&pos);
                for &m in pos.legal_moves().iter() {
                    checked += check_quiet_targets(&pos.play(m));
                }
            }
        }
        let mut rng = StdRng::seed_from_u64(0x0057_C960);
        for sp in (0..960).step_by(7) {
            let mut pos = StartPosition::new(sp).unwrap().position();
            for _ in 0..100 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                checked += check_quiet_targets(&pos);
                pos = pos.play(moves[rng.random_range(0..moves.len())]);
            }
        }
        assert!(checked > 300_000, "only {checked} quiet moves checked");
    }
}
