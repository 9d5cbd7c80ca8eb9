//! Zobrist keys, generated from a seed at compile time.
//!
//! Keys cover every (colour, role, square), the side to move, castling rights per rook square, and
//! the en-passant file. Different seeds give independent key sets, so two perft runs with
//! different seeds cross-check each other's hash-table collisions.

/// One complete set of Zobrist keys.
pub struct ZobristKeys {
    /// `pieces[color][role][square]`.
    pub pieces: [[[u64; 64]; 6]; 2],
    /// XORed in when Black is to move.
    pub black_to_move: u64,
    /// Castling right held by the rook on this square (only back-rank squares are used).
    pub castling: [u64; 64],
    /// En-passant file, XORed in only when an en-passant capture is legal.
    pub ep_file: [u64; 8],
}

const fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl ZobristKeys {
    /// The key set derived from `seed` (SplitMix64 stream).
    pub const fn from_seed(seed: u64) -> ZobristKeys {
        let mut s = seed;
        let mut pieces = [[[0u64; 64]; 6]; 2];
        let mut c = 0;
        while c < 2 {
            let mut r = 0;
            while r < 6 {
                let mut sq = 0;
                while sq < 64 {
                    pieces[c][r][sq] = splitmix64(&mut s);
                    sq += 1;
                }
                r += 1;
            }
            c += 1;
        }
        let black_to_move = splitmix64(&mut s);
        let mut castling = [0u64; 64];
        let mut sq = 0;
        while sq < 64 {
            castling[sq] = splitmix64(&mut s);
            sq += 1;
        }
        let mut ep_file = [0u64; 8];
        let mut f = 0;
        while f < 8 {
            ep_file[f] = splitmix64(&mut s);
            f += 1;
        }
        ZobristKeys {
            pieces,
            black_to_move,
            castling,
            ep_file,
        }
    }
}

/// The seed of the key set that positions carry incrementally.
pub const DEFAULT_SEED: u64 = 0xC960_C960_5EED_0001;

/// The key set used by [`crate::Position::hash`].
pub static KEYS: ZobristKeys = ZobristKeys::from_seed(DEFAULT_SEED);
