//! Attack tables: leapers and rays as const-fn tables, sliders through build-time magics.

use crate::types::{Bitboard, bb};

/// One square's entry in a fancy-magic table.
pub(crate) struct Magic {
    pub(crate) mask: u64,
    pub(crate) magic: u64,
    pub(crate) shift: u32,
    pub(crate) offset: usize,
}

include!(concat!(env!("OUT_DIR"), "/magics.rs"));

const fn leaper_table(deltas: &[(i8, i8)]) -> [Bitboard; 64] {
    let mut table = [0u64; 64];
    let mut sq = 0;
    while sq < 64 {
        let (f, r) = ((sq % 8) as i8, (sq / 8) as i8);
        let mut i = 0;
        while i < deltas.len() {
            let (nf, nr) = (f + deltas[i].0, r + deltas[i].1);
            if nf >= 0 && nf < 8 && nr >= 0 && nr < 8 {
                table[sq] |= 1u64 << (nr * 8 + nf);
            }
            i += 1;
        }
        sq += 1;
    }
    table
}

static KNIGHT: [Bitboard; 64] = leaper_table(&[
    (1, 2),
    (2, 1),
    (2, -1),
    (1, -2),
    (-1, -2),
    (-2, -1),
    (-2, 1),
    (-1, 2),
]);
static KING: [Bitboard; 64] = leaper_table(&[
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
]);
static PAWN: [[Bitboard; 64]; 2] = [
    leaper_table(&[(-1, 1), (1, 1)]),
    leaper_table(&[(-1, -1), (1, -1)]),
];

const fn ray_between_table(include_line: bool) -> [[Bitboard; 64]; 64] {
    let mut table = [[0u64; 64]; 64];
    let mut a = 0;
    while a < 64 {
        let dirs: [(i8, i8); 8] = [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1, 1),
            (1, -1),
            (-1, 1),
            (-1, -1),
        ];
        let mut d = 0;
        while d < 8 {
            let (df, dr) = dirs[d];
            // Walk from a in direction d; every square reached is aligned with a.
            let mut between = 0u64;
            let (mut f, mut r) = ((a % 8) as i8 + df, (a / 8) as i8 + dr);
            while f >= 0 && f < 8 && r >= 0 && r < 8 {
                let b = (r * 8 + f) as usize;
                if include_line {
                    // The full line through a and b, both directions, edge to edge.
                    let mut line = 1u64 << a;
                    let mut k = 0;
                    while k < 2 {
                        let (sf, sr) = if k == 0 { (df, dr) } else { (-df, -dr) };
                        let (mut lf, mut lr) = ((a % 8) as i8 + sf, (a / 8) as i8 + sr);
                        while lf >= 0 && lf < 8 && lr >= 0 && lr < 8 {
                            line |= 1u64 << (lr * 8 + lf);
                            lf += sf;
                            lr += sr;
                        }
                        k += 1;
                    }
                    table[a][b] = line;
                } else {
                    table[a][b] = between;
                }
                between |= 1u64 << b;
                f += df;
                r += dr;
            }
            d += 1;
        }
        a += 1;
    }
    table
}

const fn rays_table(deltas: &[(i8, i8); 4]) -> [Bitboard; 64] {
    let mut table = [0u64; 64];
    let mut sq = 0;
    while sq < 64 {
        let mut d = 0;
        while d < 4 {
            let (df, dr) = deltas[d];
            let (mut f, mut r) = ((sq % 8) as i8 + df, (sq / 8) as i8 + dr);
            while f >= 0 && f < 8 && r >= 0 && r < 8 {
                table[sq] |= 1u64 << (r * 8 + f);
                f += df;
                r += dr;
            }
            d += 1;
        }
        sq += 1;
    }
    table
}

static ROOK_RAYS: [Bitboard; 64] = rays_table(&[(1, 0), (-1, 0), (0, 1), (0, -1)]);
static BISHOP_RAYS: [Bitboard; 64] = rays_table(&[(1, 1), (1, -1), (-1, 1), (-1, -1)]);

static BETWEEN: [[Bitboard; 64]; 64] = ray_between_table(false);
static LINE: [[Bitboard; 64]; 64] = ray_between_table(true);

/// Squares a knight on `sq` attacks.
#[inline(always)]
pub fn knight_attacks(sq: u8) -> Bitboard {
    KNIGHT[sq as usize]
}

/// Squares a king on `sq` attacks.
#[inline(always)]
pub fn king_attacks(sq: u8) -> Bitboard {
    KING[sq as usize]
}

/// Squares a pawn of colour index `color` (0 White, 1 Black) on `sq` attacks.
#[inline(always)]
pub fn pawn_attacks(color: usize, sq: u8) -> Bitboard {
    PAWN[color][sq as usize]
}

/// Squares a rook on `sq` attacks given the occupancy `occ`.
#[inline(always)]
pub fn rook_attacks(sq: u8, occ: Bitboard) -> Bitboard {
    rook_attacks_with::<false>(sq, occ)
}

/// Squares a bishop on `sq` attacks given the occupancy `occ`.
#[inline(always)]
pub fn bishop_attacks(sq: u8, occ: Bitboard) -> Bitboard {
    bishop_attacks_with::<false>(sq, occ)
}

/// [`rook_attacks`], looked up by BMI2 PEXT when `PEXT` (see [`slider_index`]).
#[inline(always)]
pub(crate) fn rook_attacks_with<const PEXT: bool>(sq: u8, occ: Bitboard) -> Bitboard {
    let m = &ROOK_MAGICS[sq as usize];
    let table: &[u64] = if PEXT { &ROOK_PEXT_TABLE } else { &ROOK_TABLE };
    table[m.offset + slider_index::<PEXT>(m, occ)]
}

/// [`bishop_attacks`], looked up by BMI2 PEXT when `PEXT` (see [`slider_index`]).
#[inline(always)]
pub(crate) fn bishop_attacks_with<const PEXT: bool>(sq: u8, occ: Bitboard) -> Bitboard {
    let m = &BISHOP_MAGICS[sq as usize];
    let table: &[u64] = if PEXT {
        &BISHOP_PEXT_TABLE
    } else {
        &BISHOP_TABLE
    };
    table[m.offset + slider_index::<PEXT>(m, occ)]
}

/// The index of `occ` in a square's slice of the slider table: by multiply-shift (fancy
/// magics, portable), or by PEXT, which gathers the mask's bits and needs neither the multiply
/// nor the magic's load.
///
/// `PEXT = true` may only be instantiated in code that runs after `bmi2` was detected (the
/// `#[target_feature(enable = "bmi2")]` copies of the perft recursions in `perft.rs`): PEXT is
/// an illegal instruction elsewhere. Off x86-64 it falls back to the magics.
#[inline(always)]
fn slider_index<const PEXT: bool>(m: &Magic, occ: Bitboard) -> usize {
    #[cfg(target_arch = "x86_64")]
    if PEXT {
        // SAFETY: see above — only reached on CPUs with BMI2.
        return unsafe { std::arch::x86_64::_pext_u64(occ, m.mask) } as usize;
    }
    ((occ & m.mask).wrapping_mul(m.magic) >> m.shift) as usize
}

/// The rank and file through `sq` (a rook's attacks on an empty board).
#[inline(always)]
pub fn rook_rays(sq: u8) -> Bitboard {
    ROOK_RAYS[sq as usize]
}

/// The diagonals through `sq` (a bishop's attacks on an empty board).
#[inline(always)]
pub fn bishop_rays(sq: u8) -> Bitboard {
    BISHOP_RAYS[sq as usize]
}

/// Squares a queen on `sq` attacks given the occupancy `occ`.
#[inline(always)]
pub fn queen_attacks(sq: u8, occ: Bitboard) -> Bitboard {
    rook_attacks(sq, occ) | bishop_attacks(sq, occ)
}

/// The squares strictly between `a` and `b` when they share a rank, file or diagonal; else empty.
#[inline(always)]
pub fn between(a: u8, b: u8) -> Bitboard {
    BETWEEN[a as usize][b as usize]
}

/// The pieces of `ours` pinned to the king on `king` by `snipers` (the other side's sliders on
/// the king's lines that move along them), through the occupancy `occ`: each sniper with
/// exactly one piece between it and the king pins that piece if it is ours.
#[inline(always)]
pub(crate) fn pinned_by(king: u8, snipers: Bitboard, ours: Bitboard, occ: Bitboard) -> Bitboard {
    let mut pinned = 0;
    for s in bb::squares(snipers) {
        let blockers = between(king, s) & occ;
        if blockers != 0 && !bb::more_than_one(blockers) {
            pinned |= blockers & ours;
        }
    }
    pinned
}

/// The whole line (edge to edge) through `a` and `b` when aligned; else empty.
#[inline(always)]
pub fn line(a: u8, b: u8) -> Bitboard {
    LINE[a as usize][b as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slider_tables_match_ray_walks() {
        // Rook on d4 with blockers on d6 and b4: stops on the blockers.
        let occ = (1u64 << 43) | (1u64 << 25);
        let att = rook_attacks(27, occ);
        assert_ne!(att & (1 << 43), 0);
        assert_eq!(att & (1 << 51), 0);
        assert_ne!(att & (1 << 25), 0);
        assert_eq!(att & (1 << 24), 0);
        assert_eq!(att.count_ones(), 3 + 2 + 4 + 2);
        assert_eq!(bishop_attacks(0, 0).count_ones(), 7);
        for sq in 0..64 {
            assert_eq!(rook_rays(sq), rook_attacks(sq, 0));
            assert_eq!(bishop_rays(sq), bishop_attacks(sq, 0));
        }
        assert_eq!(between(0, 7).count_ones(), 6);
        assert_eq!(between(0, 9), 0);
        assert_eq!(line(0, 9).count_ones(), 8);
        assert_eq!(line(0, 10), 0);
    }

    #[test]
    fn pext_tables_agree_with_the_magic_tables() {
        for (magics, magic_table, pext_table) in [
            (&ROOK_MAGICS, &ROOK_TABLE[..], &ROOK_PEXT_TABLE[..]),
            (&BISHOP_MAGICS, &BISHOP_TABLE[..], &BISHOP_PEXT_TABLE[..]),
        ] {
            assert_eq!(magic_table.len(), pext_table.len());
            for m in magics {
                // Every subset of the mask in Carry-Rippler order, which is PEXT order: the
                // k-th subset's PEXT index is k. Bits outside the mask must not matter.
                let mut sub = 0u64;
                for k in 0.. {
                    let occ = sub | !m.mask & 0x8100_0000_0000_0081;
                    assert_eq!(
                        pext_table[m.offset + k],
                        magic_table[m.offset + slider_index::<false>(m, occ)]
                    );
                    sub = sub.wrapping_sub(m.mask) & m.mask;
                    if sub == 0 {
                        break;
                    }
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("bmi2") {
            for sq in 0..64 {
                for occ in [0, 0x00ff_0000_ff00_0000u64, 0x1234_5678_9abc_def0] {
                    assert_eq!(rook_attacks_with::<true>(sq, occ), rook_attacks(sq, occ));
                    assert_eq!(
                        bishop_attacks_with::<true>(sq, occ),
                        bishop_attacks(sq, occ)
                    );
                }
            }
        }
    }
}
