//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.
//!
//! [`perft`] and [`divide`] are the plain single-threaded counts. [`PerftEngine`] adds the two
//! things deep counts need: a shared lock-free hash table of subtree counts, and threads.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::chess_move::Move;
use crate::position::Position;
use crate::zobrist::ZobristKey;

/// More than the most legal moves any position has (218).
const MAX_MOVES: usize = 256;

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
/// The table is an array of 64-byte buckets (one cache line) of four entries. An entry is two
/// words: `data` = remaining depth (top 8 bits) and count (low 56 bits), and `check` = the high
/// 64 bits of the 128-bit key XORed with `data`. A reader accepts an entry only when `check ^
/// data` gives back its own key's high half, so a torn write (two threads storing at once)
/// reads as a miss, never as a wrong count. The low half of the key picks the bucket; a false
/// hit needs the 64 checked bits to collide as well, about 2^-62 per probe.
pub struct PerftTable {
    words: TableMemory,
    buckets: usize,
    /// Buckets reserved for remaining depth 2 at the start of the table (see [`Self::bucket`]).
    shallow_buckets: usize,
}

const ENTRIES_PER_BUCKET: usize = 4;
const WORDS_PER_BUCKET: usize = 2 * ENTRIES_PER_BUCKET;
const COUNT_BITS: u32 = 56;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

impl PerftTable {
    /// A zeroed table of about `mib` MiB (at least one bucket).
    pub fn new(mib: usize) -> PerftTable {
        let buckets = ((mib << 20) / (8 * WORDS_PER_BUCKET)).max(1);
        PerftTable {
            words: TableMemory::zeroed(buckets * WORDS_PER_BUCKET),
            buckets,
            shallow_buckets: buckets / 16,
        }
    }

    /// Number of entries.
    pub fn entries(&self) -> usize {
        self.buckets * ENTRIES_PER_BUCKET
    }

    /// The bucket of a key. Remaining depth 2 — most probes, each saving little — lives in its
    /// own sixteenth of the table, small enough to stay mostly in the CPU's last-level cache;
    /// deeper subtrees share the rest.
    #[inline(always)]
    fn bucket(&self, key: ZobristKey, depth: u32) -> usize {
        let (first, count) = if depth <= 2 && self.shallow_buckets > 0 {
            (0, self.shallow_buckets)
        } else {
            (self.shallow_buckets, self.buckets - self.shallow_buckets)
        };
        // Multiply-shift maps the key onto any table size without a power-of-two restriction.
        (first + (((key as u64 as u128) * count as u128) >> 64) as usize) * WORDS_PER_BUCKET
    }

    /// The stored count for `key` (which includes the remaining depth `depth`), if present and
    /// intact.
    #[inline(always)]
    pub fn probe(&self, key: ZobristKey, depth: u32) -> Option<u64> {
        let b = self.bucket(key, depth);
        let high = (key >> 64) as u64;
        for e in 0..ENTRIES_PER_BUCKET {
            let check = self.words[b + 2 * e].load(Ordering::Relaxed);
            let data = self.words[b + 2 * e + 1].load(Ordering::Relaxed);
            if data != 0 && check ^ data == high {
                return Some(data & COUNT_MASK);
            }
        }
        None
    }

    /// Asks the CPU to start loading the bucket of `key` at remaining depth `depth`, so that a
    /// probe shortly after finds it in cache.
    #[inline(always)]
    pub fn prefetch(&self, key: ZobristKey, depth: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let b = self.bucket(key, depth);
            let p = self.words[b..].as_ptr() as *const i8;
            // SAFETY: a prefetch is only a hint; `p` points into the table.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (key, depth);
    }

    /// Stores the count of a subtree of remaining depth `depth`. The entry replaced is the
    /// bucket's shallowest: deep subtrees cost the most to recompute.
    #[inline(always)]
    pub fn store(&self, key: ZobristKey, depth: u32, count: u64) {
        if count > COUNT_MASK {
            return; // 2^56 nodes under one position: never reached in practice; just not kept.
        }
        let b = self.bucket(key, depth);
        let high = (key >> 64) as u64;
        let data = ((depth.clamp(1, 255) as u64) << COUNT_BITS) | count;
        let mut victim = 0;
        let mut victim_depth = u64::MAX;
        for e in 0..ENTRIES_PER_BUCKET {
            let check = self.words[b + 2 * e].load(Ordering::Relaxed);
            let old = self.words[b + 2 * e + 1].load(Ordering::Relaxed);
            if old != 0 && check ^ old == high {
                victim = e;
                break;
            }
            if old >> COUNT_BITS < victim_depth {
                victim = e;
                victim_depth = old >> COUNT_BITS;
            }
        }
        self.words[b + 2 * victim].store(high ^ data, Ordering::Relaxed);
        self.words[b + 2 * victim + 1].store(data, Ordering::Relaxed);
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// Zeroed memory for a [`PerftTable`].
///
/// On Linux the table is mapped directly and marked for transparent huge pages: probes land at
/// random across hundreds of MiB, and with 4 KiB pages nearly every probe also misses the TLB.
/// Elsewhere it is an ordinary allocation.
struct TableMemory {
    ptr: *mut AtomicU64,
    len: usize,
    mapped: bool,
}

// SAFETY: the memory is owned by this value and only reached as `&[AtomicU64]`, which is Sync.
unsafe impl Send for TableMemory {}
// SAFETY: as above.
unsafe impl Sync for TableMemory {}

impl TableMemory {
    fn zeroed(len: usize) -> TableMemory {
        #[cfg(target_os = "linux")]
        {
            let bytes = len * std::mem::size_of::<AtomicU64>();
            // SAFETY: an anonymous private mapping of `bytes` bytes, checked for failure; fresh
            // anonymous pages read as zero, and all-zero bits are a valid AtomicU64.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p != libc::MAP_FAILED {
                    // Only a hint: without huge pages the table works the same, just slower.
                    libc::madvise(p, bytes, libc::MADV_HUGEPAGE);
                    return TableMemory {
                        ptr: p.cast(),
                        len,
                        mapped: true,
                    };
                }
            }
        }
        let boxed: Box<[AtomicU64]> = (0..len).map(|_| AtomicU64::new(0)).collect();
        TableMemory {
            len,
            ptr: Box::into_raw(boxed).cast(),
            mapped: false,
        }
    }
}

impl std::ops::Deref for TableMemory {
    type Target = [AtomicU64];
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` points to `len` initialised AtomicU64 owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for TableMemory {
    fn drop(&mut self) {
        if self.mapped {
            #[cfg(target_os = "linux")]
            // SAFETY: unmaps exactly the mapping made in `zeroed`.
            unsafe {
                libc::munmap(self.ptr.cast(), self.len * std::mem::size_of::<AtomicU64>());
            }
        } else {
            // SAFETY: `ptr` came from `Box::into_raw` of a boxed slice of `len` elements.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
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
        // Tasks are the positions after one ply, or after two with several threads: with one
        // task per root move, the last big subtree often runs alone at the end; the
        // positions after two plies (about 400) keep every thread busy until the end.
        let split_twice = depth >= 4 && self.options.threads > 1;
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
            if let Some(n) = table.probe(key, depth) {
                return n;
            }
            let mut nodes = 0;
            if depth == 2 {
                // Depth-1 counts are not stored (recounting beats a cache miss): count leaves.
                pos.generate(&mut |batch| {
                    batch.for_each(|m| nodes += pos.play_unhashed(m, batch.role).count_moves());
                });
            } else {
                // Make every child first and prefetch its bucket, then recurse: the table is
                // far bigger than the caches, and a probe issued only on entering a child
                // waits for memory, while these loads overlap with making the siblings.
                let child_depth = pos.zobrist_keys().depth[(depth - 1) as usize & 63];
                let mut children = [const { MaybeUninit::<Position>::uninit() }; MAX_MOVES];
                let mut made = 0;
                pos.generate(&mut |batch| {
                    batch.for_each(|m| {
                        let child = pos.play_with_role(m, batch.role);
                        table.prefetch(child.hash128() ^ child_depth, depth - 1);
                        children[made].write(child);
                        made += 1;
                    });
                });
                for child in &children[..made] {
                    // SAFETY: the first `made` children were written just above.
                    nodes += $name(unsafe { child.assume_init_ref() }, depth - 1, table);
                }
            }
            table.store(key, depth, nodes);
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
