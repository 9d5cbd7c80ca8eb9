//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.
//!
//! [`perft`] and [`divide`] are the plain single-threaded counts. [`PerftEngine`] adds the two
//! things deep counts need: a shared lock-free hash table of subtree counts, and threads.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::chess_move::Move;
use crate::position::Position;
use crate::zobrist::ZobristKey;

/// The number of leaf nodes `depth` plies below `pos` (1 at depth 0).
pub fn perft(pos: &Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        _ => {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("popcnt") {
                // SAFETY: the CPU has just been seen to support popcnt.
                return unsafe { perft_bulk_popcnt(pos, depth) };
            }
            perft_bulk_portable(pos, depth)
        }
    }
}

/// Defines a bulk-counting perft recursion: the last ply is counted per batch with a popcount,
/// and no Zobrist key is maintained since nothing reads it.
///
/// A macro rather than a generic function so that the closures handed to the move generator are
/// written inside each copy and so inherit its target features (a closure takes the features of
/// the function it is written in, not of the one it is inlined into).
macro_rules! define_perft_bulk {
    ($(#[$attr:meta])* fn $name:ident) => {
        $(#[$attr])*
        fn $name(pos: &Position, depth: u32) -> u64 {
            if depth == 1 {
                return pos.count_moves();
            }
            let mut nodes = 0;
            if depth == 2 {
                // The parents of the leaves are most of the work: count each child in place.
                pos.generate(&mut |batch| {
                    batch.for_each(|m| nodes += pos.play_unhashed(m, batch.role).count_moves());
                });
            } else {
                pos.generate(&mut |batch| {
                    batch.for_each(|m| nodes += $name(&pos.play_unhashed(m, batch.role), depth - 1));
                });
            }
            nodes
        }
    };
}

define_perft_bulk!(fn perft_bulk_portable);

#[cfg(target_arch = "x86_64")]
define_perft_bulk!(
    /// The recursion compiled with the hardware population count. The x86-64 baseline lacks it,
    /// and counting moves is mostly popcounts: chosen at run time, so the program still runs
    /// on CPUs without it.
    #[target_feature(enable = "popcnt")]
    fn perft_bulk_popcnt
);

/// Perft split by root move: each legal move with the count of its subtree, in generation order.
pub fn divide(pos: &Position, depth: u32) -> Vec<(Move, u64)> {
    PerftEngine::new(PerftOptions {
        threads: 1,
        hash_mib: 0,
        seed: crate::zobrist::DEFAULT_SEED,
    })
    .divide(pos, depth)
}

/// How a [`PerftEngine`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerftOptions {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Size of the hash table in MiB; 0 turns it off.
    pub hash_mib: usize,
    /// Seed of the Zobrist key set used for the hash table. Runs with different seeds have
    /// independent key collisions, so their agreement cross-checks the table.
    pub seed: u64,
}

impl Default for PerftOptions {
    fn default() -> Self {
        PerftOptions {
            threads: 1,
            hash_mib: 0,
            seed: crate::zobrist::DEFAULT_SEED,
        }
    }
}

/// A perft hash table: subtree counts keyed by (position, remaining depth), shared by threads
/// without locks.
///
/// Each entry is three words: the 128-bit key's halves each XORed with the count, and the
/// count. A reader accepts an entry only when both halves decode to its own key, so a torn
/// write (two threads storing at once) reads as a miss, never as a wrong count. Verification
/// uses all 128 key bits; a false hit needs a 128-bit collision.
pub struct PerftTable {
    words: Box<[AtomicU64]>,
    entries: usize,
}

impl PerftTable {
    /// A zeroed table of about `mib` MiB (at least one entry).
    pub fn new(mib: usize) -> PerftTable {
        let entries = ((mib << 20) / 24).max(1);
        let words = (0..entries * 3).map(|_| AtomicU64::new(0)).collect();
        PerftTable { words, entries }
    }

    /// Number of entries.
    pub fn entries(&self) -> usize {
        self.entries
    }

    #[inline(always)]
    fn slot(&self, key: ZobristKey) -> usize {
        // Multiply-shift maps the key onto any table size without a power-of-two restriction.
        (((key as u64 as u128) * self.entries as u128) >> 64) as usize * 3
    }

    /// The stored count for `key`, if present and intact.
    #[inline(always)]
    pub fn probe(&self, key: ZobristKey) -> Option<u64> {
        let i = self.slot(key);
        let lo = self.words[i].load(Ordering::Relaxed);
        let hi = self.words[i + 1].load(Ordering::Relaxed);
        let count = self.words[i + 2].load(Ordering::Relaxed);
        (lo ^ count == key as u64 && hi ^ count == (key >> 64) as u64 && count != 0)
            .then_some(count)
    }

    /// Stores a count (always replaces: the newest subtree is the likeliest to recur).
    #[inline(always)]
    pub fn store(&self, key: ZobristKey, count: u64) {
        let i = self.slot(key);
        self.words[i].store(key as u64 ^ count, Ordering::Relaxed);
        self.words[i + 1].store((key >> 64) as u64 ^ count, Ordering::Relaxed);
        self.words[i + 2].store(count, Ordering::Relaxed);
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// Deep perft: threads over the root moves and an optional shared hash table.
///
/// An engine keeps its table between calls, so a worker that computes many related positions
/// reuses subtrees across them.
pub struct PerftEngine {
    options: PerftOptions,
    table: Option<PerftTable>,
}

impl PerftEngine {
    /// An engine with the given options (the table is allocated here).
    pub fn new(options: PerftOptions) -> PerftEngine {
        let options = PerftOptions {
            threads: options.threads.max(1),
            ..options
        };
        let table = (options.hash_mib > 0).then(|| PerftTable::new(options.hash_mib));
        PerftEngine { options, table }
    }

    /// The options in force.
    pub fn options(&self) -> PerftOptions {
        self.options
    }

    /// The number of leaf nodes `depth` plies below `pos`.
    pub fn perft(&self, pos: &Position, depth: u32) -> u64 {
        if depth <= 1 || (self.options.threads == 1 && self.table.is_none()) {
            return perft(pos, depth);
        }
        self.divide(pos, depth).iter().map(|(_, n)| n).sum()
    }

    /// Counts per root move, in generation order.
    pub fn divide(&self, pos: &Position, depth: u32) -> Vec<(Move, u64)> {
        let pos = pos.with_zobrist_seed(self.options.seed);
        let moves = pos.legal_moves();
        if depth == 0 {
            return moves.iter().map(|&m| (m, 0)).collect();
        }
        // Tasks are the positions after one ply, or after two when there are too few root moves
        // to keep every thread busy until the end.
        let split_twice =
            depth >= 3 && moves.len() < 4 * self.options.threads && self.options.threads > 1;
        let mut tasks: Vec<(usize, Position)> = Vec::new();
        for (i, &m) in moves.iter().enumerate() {
            let child = pos.play(m);
            if split_twice {
                for &reply in child.legal_moves().iter() {
                    tasks.push((i, child.play(reply)));
                }
            } else {
                tasks.push((i, child));
            }
        }
        let remaining = depth - if split_twice { 2 } else { 1 };
        let totals: Vec<AtomicU64> = moves.iter().map(|_| AtomicU64::new(0)).collect();
        let next = AtomicUsize::new(0);
        let run = || {
            loop {
                let t = next.fetch_add(1, Ordering::Relaxed);
                let Some((root, child)) = tasks.get(t) else {
                    break;
                };
                let n = match &self.table {
                    Some(table) => perft_hashed(child, remaining, table),
                    None => perft(child, remaining),
                };
                totals[*root].fetch_add(n, Ordering::Relaxed);
            }
        };
        let threads = self.options.threads.min(tasks.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(run);
            }
            run();
        });
        moves
            .iter()
            .zip(totals)
            .map(|(&m, n)| (m, n.into_inner()))
            .collect()
    }
}

fn perft_hashed(pos: &Position, depth: u32, table: &PerftTable) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has just been seen to support popcnt.
        return unsafe { perft_hashed_popcnt(pos, depth, table) };
    }
    perft_hashed_portable(pos, depth, table)
}

/// Defines a perft recursion that stores subtree counts in a [`PerftTable`]; see
/// [`define_perft_bulk`] for why this is a macro.
macro_rules! define_perft_hashed {
    ($(#[$attr:meta])* fn $name:ident) => {
        $(#[$attr])*
        fn $name(pos: &Position, depth: u32, table: &PerftTable) -> u64 {
            if depth <= 1 {
                return if depth == 0 { 1 } else { pos.count_moves() };
            }
            let key = pos.hash128() ^ pos.zobrist_keys().depth[depth as usize & 63];
            if let Some(n) = table.probe(key) {
                return n;
            }
            let mut nodes = 0;
            if depth == 2 {
                // Storing depth-1 counts costs more than recounting them; count the leaves.
                pos.generate(&mut |batch| {
                    batch.for_each(|m| nodes += pos.play_unhashed(m, batch.role).count_moves());
                });
            } else {
                pos.generate(&mut |batch| {
                    batch.for_each(|m| {
                        nodes += $name(&pos.play_with_role(m, batch.role), depth - 1, table)
                    });
                });
            }
            table.store(key, nodes);
            nodes
        }
    };
}

define_perft_hashed!(fn perft_hashed_portable);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// See `perft_bulk_popcnt`.
    #[target_feature(enable = "popcnt")]
    fn perft_hashed_popcnt
);
