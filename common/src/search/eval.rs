//! Static evaluation: material, piece-square tables, bishop pair and mobility, tapered between
//! middlegame and endgame by the material left on the board.
//!
//! The material values and piece-square tables are Ronald Friederich's PeSTO tables (published on
//! the Chess Programming Wiki), which are strong for a hand-written evaluation and carry no
//! licence restriction. They are written with a8 first, the way one reads a diagram, so White's
//! square `sq` (a1 = 0) looks up entry `sq ^ 56` and Black's looks up `sq` itself: that flips the
//! board vertically, which is exactly the colour mirror.

use crate::attacks::{bishop_attacks, knight_attacks, queen_attacks, rook_attacks};
use crate::position::Position;
use crate::types::{Color, Role, bb};

/// Middlegame material value of each role (pawn, knight, bishop, rook, queen, king).
const MG_VALUE: [i32; 6] = [82, 337, 365, 477, 1025, 0];
/// Endgame material value of each role.
const EG_VALUE: [i32; 6] = [94, 281, 297, 512, 936, 0];
/// How much each role counts towards the middlegame phase; 24 is the full starting material.
const PHASE_WEIGHT: [i32; 6] = [0, 1, 1, 2, 4, 0];
const MAX_PHASE: i32 = 24;

/// Bonus for keeping both bishops (middlegame, endgame).
const BISHOP_PAIR: (i32, i32) = (30, 50);
/// Bonus for the side to move: a quiet position is worth a little more to the side that may act.
const TEMPO: i32 = 10;

/// Mobility weight per attacked square not held by an own piece, and the count that scores zero,
/// for knight, bishop, rook, queen: (middlegame, endgame, neutral count).
const MOBILITY: [(i32, i32, i32); 4] = [(4, 4, 4), (5, 5, 6), (2, 4, 6), (1, 2, 12)];

#[rustfmt::skip]
const MG_PST: [[i32; 64]; 6] = [
    [ // pawn
          0,   0,   0,   0,   0,   0,  0,   0,
         98, 134,  61,  95,  68, 126, 34, -11,
         -6,   7,  26,  31,  65,  56, 25, -20,
        -14,  13,   6,  21,  23,  12, 17, -23,
        -27,  -2,  -5,  12,  17,   6, 10, -25,
        -26,  -4,  -4, -10,   3,   3, 33, -12,
        -35,  -1, -20, -23, -15,  24, 38, -22,
          0,   0,   0,   0,   0,   0,  0,   0,
    ],
    [ // knight
        -167, -89, -34, -49,  61, -97, -15, -107,
         -73, -41,  72,  36,  23,  62,   7,  -17,
         -47,  60,  37,  65,  84, 129,  73,   44,
          -9,  17,  19,  53,  37,  69,  18,   22,
         -13,   4,  16,  13,  28,  19,  21,   -8,
         -23,  -9,  12,  10,  19,  17,  25,  -16,
         -29, -53, -12,  -3,  -1,  18, -14,  -19,
        -105, -21, -58, -33, -17, -28, -19,  -23,
    ],
    [ // bishop
        -29,   4, -82, -37, -25, -42,   7,  -8,
        -26,  16, -18, -13,  30,  59,  18, -47,
        -16,  37,  43,  40,  35,  50,  37,  -2,
         -4,   5,  19,  50,  37,  37,   7,  -2,
         -6,  13,  13,  26,  34,  12,  10,   4,
          0,  15,  15,  15,  14,  27,  18,  10,
          4,  15,  16,   0,   7,  21,  33,   1,
        -33,  -3, -14, -21, -13, -12, -39, -21,
    ],
    [ // rook
         32,  42,  32,  51, 63,  9,  31,  43,
         27,  32,  58,  62, 80, 67,  26,  44,
         -5,  19,  26,  36, 17, 45,  61,  16,
        -24, -11,   7,  26, 24, 35,  -8, -20,
        -36, -26, -12,  -1,  9, -7,   6, -23,
        -45, -25, -16, -17,  3,  0,  -5, -33,
        -44, -16, -20,  -9, -1, 11,  -6, -71,
        -19, -13,   1,  17, 16,  7, -37, -26,
    ],
    [ // queen
        -28,   0,  29,  12,  59,  44,  43,  45,
        -24, -39,  -5,   1, -16,  57,  28,  54,
        -13, -17,   7,   8,  29,  56,  47,  57,
        -27, -27, -16, -16,  -1,  17,  -2,   1,
         -9, -26,  -9, -10,  -2,  -4,   3,  -3,
        -14,   2, -11,  -2,  -5,   2,  14,   5,
        -35,  -8,  11,   2,   8,  15,  -3,   1,
         -1, -18,  -9,  10, -15, -25, -31, -50,
    ],
    [ // king
        -65,  23,  16, -15, -56, -34,   2,  13,
         29,  -1, -20,  -7,  -8,  -4, -38, -29,
         -9,  24,   2, -16, -20,   6,  22, -22,
        -17, -20, -12, -27, -30, -25, -14, -36,
        -49,  -1, -27, -39, -46, -44, -33, -51,
        -14, -14, -22, -46, -44, -30, -15, -27,
          1,   7,  -8, -64, -43, -16,   9,   8,
        -15,  36,  12, -54,   8, -28,  24,  14,
    ],
];

#[rustfmt::skip]
const EG_PST: [[i32; 64]; 6] = [
    [ // pawn
          0,   0,   0,   0,   0,   0,   0,   0,
        178, 173, 158, 134, 147, 132, 165, 187,
         94, 100,  85,  67,  56,  53,  82,  84,
         32,  24,  13,   5,  -2,   4,  17,  17,
         13,   9,  -3,  -7,  -7,  -8,   3,  -1,
          4,   7,  -6,   1,   0,  -5,  -1,  -8,
         13,   8,   8,  10,  13,   0,   2,  -7,
          0,   0,   0,   0,   0,   0,   0,   0,
    ],
    [ // knight
        -58, -38, -13, -28, -31, -27, -63, -99,
        -25,  -8, -25,  -2,  -9, -25, -24, -52,
        -24, -20,  10,   9,  -1,  -9, -19, -41,
        -17,   3,  22,  22,  22,  11,   8, -18,
        -18,  -6,  16,  25,  16,  17,   4, -18,
        -23,  -3,  -1,  15,  10,  -3, -20, -22,
        -42, -20, -10,  -5,  -2, -20, -23, -44,
        -29, -51, -23, -15, -22, -18, -50, -64,
    ],
    [ // bishop
        -14, -21, -11,  -8, -7,  -9, -17, -24,
         -8,  -4,   7, -12, -3, -13,  -4, -14,
          2,  -8,   0,  -1, -2,   6,   0,   4,
         -3,   9,  12,   9, 14,  10,   3,   2,
         -6,   3,  13,  19,  7,  10,  -3,  -9,
        -12,  -3,   8,  10, 13,   3,  -7, -15,
        -14, -18,  -7,  -1,  4,  -9, -15, -27,
        -23,  -9, -23,  -5, -9, -16,  -5, -17,
    ],
    [ // rook
        13, 10, 18, 15, 12,  12,   8,   5,
        11, 13, 13, 11, -3,   3,   8,   3,
         7,  7,  7,  5,  4,  -3,  -5,  -3,
         4,  3, 13,  1,  2,   1,  -1,   2,
         3,  5,  8,  4, -5,  -6,  -8, -11,
        -4,  0, -5, -1, -7, -12,  -8, -16,
        -6, -6,  0,  2, -9,  -9, -11,  -3,
        -9,  2,  3, -1, -5, -13,   4, -20,
    ],
    [ // queen
         -9,  22,  22,  27,  27,  19,  10,  20,
        -17,  20,  32,  41,  58,  25,  30,   0,
        -20,   6,   9,  49,  47,  35,  19,   9,
          3,  22,  24,  45,  57,  40,  57,  36,
        -18,  28,  19,  47,  31,  34,  39,  23,
        -16, -27,  15,   6,   9,  17,  10,   5,
        -22, -23, -30, -16, -16, -23, -36, -32,
        -33, -28, -22, -43,  -5, -32, -20, -41,
    ],
    [ // king
        -74, -35, -18, -18, -11,  15,   4, -17,
        -12,  17,  14,  17,  17,  38,  23,  11,
         10,  17,  23,  15,  20,  45,  44,  13,
         -8,  22,  24,  27,  26,  33,  26,   3,
        -18,  -4,  21,  24,  27,  23,   9, -11,
        -19,  -3,  11,  21,  23,  16,   7,  -9,
        -27, -11,   4,  13,  14,   4,  -5, -17,
        -53, -34, -21, -11, -28, -14, -24, -43,
    ],
];

/// The value of a role in the middlegame, used for move ordering (most valuable victim first).
pub(crate) fn ordering_value(role: Role) -> i32 {
    MG_VALUE[role.index()]
}

/// Middlegame and endgame terms of one side, from that side's point of view.
fn side_terms(pos: &Position, color: Color) -> (i32, i32, i32) {
    let mut mg = 0;
    let mut eg = 0;
    let mut phase = 0;
    // The table index that puts this side's pieces on the diagram's squares.
    let flip = if color == Color::White { 56 } else { 0 };
    let own = pos.by_color(color);
    let occ = pos.occupied();
    for role in Role::ALL {
        for sq in bb::squares(pos.pieces(color, role)) {
            let i = (sq ^ flip) as usize;
            mg += MG_VALUE[role.index()] + MG_PST[role.index()][i];
            eg += EG_VALUE[role.index()] + EG_PST[role.index()][i];
            phase += PHASE_WEIGHT[role.index()];
            let attacks = match role {
                Role::Knight => knight_attacks(sq),
                Role::Bishop => bishop_attacks(sq, occ),
                Role::Rook => rook_attacks(sq, occ),
                Role::Queen => queen_attacks(sq, occ),
                Role::Pawn | Role::King => continue,
            };
            let (w_mg, w_eg, neutral) = MOBILITY[role.index() - 1];
            let count = (attacks & !own).count_ones() as i32 - neutral;
            mg += w_mg * count;
            eg += w_eg * count;
        }
    }
    if pos.pieces(color, Role::Bishop).count_ones() >= 2 {
        mg += BISHOP_PAIR.0;
        eg += BISHOP_PAIR.1;
    }
    (mg, eg, phase)
}

/// The static evaluation in centipawns from the side to move's point of view.
///
/// Colour-symmetric by construction: the mirrored position (board flipped, colours swapped, the
/// other side to move) evaluates to the same number.
pub fn evaluate(pos: &Position) -> i32 {
    let (w_mg, w_eg, w_phase) = side_terms(pos, Color::White);
    let (b_mg, b_eg, b_phase) = side_terms(pos, Color::Black);
    let phase = (w_phase + b_phase).min(MAX_PHASE);
    let mg = w_mg - b_mg;
    let eg = w_eg - b_eg;
    // Integer taper; the division truncates towards zero, which is symmetric in sign.
    let white = (mg * phase + eg * (MAX_PHASE - phase)) / MAX_PHASE;
    let relative = if pos.side_to_move() == Color::White {
        white
    } else {
        -white
    };
    relative + TEMPO
}

/// True when neither side can possibly mate: bare kings, or a single minor piece against a bare
/// king. (Positions that are merely drawish, such as two knights, are left to the search.)
pub fn insufficient_material(pos: &Position) -> bool {
    let heavy = pos.by_role(Role::Pawn) | pos.by_role(Role::Rook) | pos.by_role(Role::Queen);
    if heavy != 0 {
        return false;
    }
    let minors = pos.by_role(Role::Knight) | pos.by_role(Role::Bishop);
    minors.count_ones() <= 1
}

/// True when `color` has a piece other than pawns and king; null-move pruning is unsound in
/// pawn-only endings, where zugzwang is common.
pub(crate) fn has_non_pawn_material(pos: &Position, color: Color) -> bool {
    let pieces = pos.by_color(color) & !(pos.by_role(Role::Pawn) | pos.by_role(Role::King));
    pieces != 0
}
