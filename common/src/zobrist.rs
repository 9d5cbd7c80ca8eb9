//! Zobrist keys, generated from a seed at compile time.
//!
//! Keys cover every (colour, role, square), the side to move, castling rights per rook square, and
//! the en-passant file. Different seeds give independent key sets, so two perft runs with
//! different seeds cross-check each other's hash-table collisions.

/// A Zobrist key. 128 bits so that the perft hash table can verify entries with far more bits
/// than its index uses: a false hit is then not a practical risk even over 10^12 probes.
pub type ZobristKey = u128;

/// One complete set of Zobrist keys.
pub struct ZobristKeys {
    /// The seed the set was generated from.
    pub seed: u64,
    /// `pieces[color][role][square]`.
    pub pieces: [[[ZobristKey; 64]; 6]; 2],
    /// XORed in when Black is to move.
    pub black_to_move: ZobristKey,
    /// Castling right held by the rook on this square (only back-rank squares are used).
    pub castling: [ZobristKey; 64],
    /// En-passant file, XORed in only when an en-passant capture is legal.
    pub ep_file: [ZobristKey; 8],
    /// Remaining search depth, XORed in by hash tables that key on (position, depth).
    pub depth: [ZobristKey; 64],
}

const fn key128(state: &mut u64) -> ZobristKey {
    let hi = splitmix64(state) as u128;
    (hi << 64) | splitmix64(state) as u128
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
        let mut pieces = [[[0; 64]; 6]; 2];
        let mut c = 0;
        while c < 2 {
            let mut r = 0;
            while r < 6 {
                let mut sq = 0;
                while sq < 64 {
                    pieces[c][r][sq] = key128(&mut s);
                    sq += 1;
                }
                r += 1;
            }
            c += 1;
        }
        let black_to_move = key128(&mut s);
        let mut castling = [0; 64];
        let mut sq = 0;
        while sq < 64 {
            castling[sq] = key128(&mut s);
            sq += 1;
        }
        let mut ep_file = [0; 8];
        let mut f = 0;
        while f < 8 {
            ep_file[f] = key128(&mut s);
            f += 1;
        }
        let mut depth = [0; 64];
        let mut d = 0;
        while d < 64 {
            depth[d] = key128(&mut s);
            d += 1;
        }
        ZobristKeys {
            seed,
            pieces,
            black_to_move,
            castling,
            ep_file,
            depth,
        }
    }
}

/// The seed of the key set that positions carry incrementally.
pub const DEFAULT_SEED: u64 = 0xC960_C960_5EED_0001;

/// The key set used by [`crate::Position::hash`].
pub static KEYS: ZobristKeys = ZobristKeys::from_seed(DEFAULT_SEED);

/// The key set for `seed`, generated once per seed and kept for the life of the process.
pub fn keys_for_seed(seed: u64) -> &'static ZobristKeys {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    if seed == DEFAULT_SEED {
        return &KEYS;
    }
    static CACHE: OnceLock<Mutex<HashMap<u64, &'static ZobristKeys>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    cache
        .entry(seed)
        .or_insert_with(|| Box::leak(Box::new(ZobristKeys::from_seed(seed))))
}
