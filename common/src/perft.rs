//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.
//!
//! [`perft`] and [`divide`] are the plain single-threaded counts. [`PerftEngine`] adds the two
//! things deep counts need: a shared lock-free hash table of subtree counts, and threads.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::chess_move::Move;
use crate::movegen::ChildMoveCounter;
use crate::position::Position;
use crate::types::Role;
use crate::zobrist::ZobristKey;

/// More than the most legal moves any position has (218).
const MAX_MOVES: usize = 256;

/// The CPU features the perft recursions use on this machine, picked at run time: the name of
/// [`Kernel::best`] (`"bmi2"`, `"bmi1"`, `"popcnt"` or `"portable"`).
pub fn cpu_features() -> &'static str {
    match Kernel::best() {
        Kernel::Portable => "portable",
        Kernel::Popcnt => "popcnt",
        Kernel::Bmi1 => "bmi1",
        Kernel::Bmi2 => "bmi2",
    }
}

/// The number of leaf nodes `depth` plies below `pos` (1 at depth 0), with the fastest
/// [`Kernel`] this CPU runs.
pub fn perft(pos: &Position, depth: u32) -> u64 {
    perft_with(Kernel::best(), pos, depth)
}

/// [`perft`] with a chosen kernel; one this CPU cannot run ([`Kernel::is_available`]) is
/// replaced by the portable one, never executed.
pub fn perft_with(kernel: Kernel, pos: &Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    #[cfg(target_arch = "x86_64")]
    if kernel.is_available() {
        // SAFETY (each arm): the kernel's CPU features have just been seen to be present.
        match kernel {
            Kernel::Portable => {}
            Kernel::Popcnt => return unsafe { perft_bulk_popcnt(pos, depth) },
            Kernel::Bmi1 => return unsafe { perft_bulk_bmi1(pos, depth) },
            Kernel::Bmi2 => return unsafe { perft_bulk_bmi2(pos, depth) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
    perft_bulk_portable(pos, depth)
}

/// The copies of the perft recursions, one per set of CPU features they are compiled with. The
/// build stays portable (x86-64 baseline); the copy is chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// No optional instruction: any CPU.
    Portable,
    /// Hardware `popcnt` (the x86-64 baseline counts bits in a dozen instructions, and
    /// counting moves is mostly popcounts).
    Popcnt,
    /// `popcnt` and BMI1: `tzcnt` and `blsr` for the square loops, `andn`. Slider lookups by
    /// magics: for CPUs whose PEXT is slow.
    Bmi1,
    /// `popcnt`, BMI1, BMI2 and AVX2: slider lookups by PEXT instead of magic multiplication,
    /// and positions copied 32 bytes at a time (copy-make moves a 112-byte position per node).
    /// Every CPU with BMI2 but a few low-end Intel parts has AVX2; those run [`Kernel::Bmi1`].
    Bmi2,
}

impl Kernel {
    /// Every kernel, slowest first.
    pub const ALL: [Kernel; 4] = [Kernel::Portable, Kernel::Popcnt, Kernel::Bmi1, Kernel::Bmi2];

    /// True when this CPU has the instructions the kernel is compiled with.
    pub fn is_available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                Kernel::Portable => true,
                Kernel::Popcnt => has!("popcnt"),
                Kernel::Bmi1 => has!("popcnt") && has!("bmi1"),
                Kernel::Bmi2 => has!("popcnt") && has!("bmi1") && has!("bmi2") && has!("avx2"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Portable
        }
    }

    /// The fastest available kernel: BMI2 unless its PEXT is microcoded (AMD before Zen 3,
    /// where PEXT takes tens of cycles and magics win), then BMI1, then popcnt. Detected once.
    pub fn best() -> Kernel {
        static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let slow_pext = slow_pext();
            Kernel::ALL
                .into_iter()
                .rev()
                .find(|k| k.is_available() && !(*k == Kernel::Bmi2 && slow_pext))
                .unwrap_or(Kernel::Portable)
        })
    }
}

/// True on CPUs whose PEXT/PDEP are microcoded: AMD (and Hygon) families before 19h (Zen 3).
fn slow_pext() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // Leaves 0 (vendor) and 1 (family) exist on every x86-64 CPU.
        let (vendor, signature) = (__cpuid(0), __cpuid(1).eax);
        let mut name = [0u8; 12];
        name[..4].copy_from_slice(&vendor.ebx.to_le_bytes());
        name[4..8].copy_from_slice(&vendor.edx.to_le_bytes());
        name[8..].copy_from_slice(&vendor.ecx.to_le_bytes());
        let base = (signature >> 8) & 0xf;
        let family = if base == 0xf {
            base + ((signature >> 20) & 0xff)
        } else {
            base
        };
        (&name == b"AuthenticAMD" || &name == b"HygonGenuine") && family < 0x19
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// perft(2) of `$pos`: the parents of the leaves are most of the work, so each child's moves
/// are counted in place by a [`ChildMoveCounter`]. Batches of normal moves are fused
/// generate-make-count: no `Move` is made or decoded, and the moving piece is a constant in
/// each arm (the make's branches on the piece and on the kind fold away).
macro_rules! count_leaf_parent {
    ($pos:expr, $pext:literal) => {{
        let pos: &Position = $pos;
        let mut nodes = 0;
        let counter = ChildMoveCounter::new::<$pext>(pos);
        pos.generate_with::<$pext>(&mut |batch| {
            if batch.is_normal() {
                macro_rules! each {
                    ($role:expr, $pawn:literal) => {
                        batch.for_each_normal::<$pawn>(|from, to| {
                            nodes += counter.count_normal_move::<$pext>(pos, $role, from, to)
                        })
                    };
                }
                match batch.role {
                    Role::Pawn => each!(Role::Pawn, true),
                    Role::Knight => each!(Role::Knight, false),
                    Role::Bishop => each!(Role::Bishop, false),
                    Role::Rook => each!(Role::Rook, false),
                    Role::Queen => each!(Role::Queen, false),
                    Role::King => each!(Role::King, false),
                }
            } else {
                batch.for_each(|m| {
                    nodes += counter.count::<$pext>(&pos.play_unhashed::<$pext>(m, batch.role))
                });
            }
        });
        nodes
    }};
}

/// Defines a bulk-counting perft recursion: the last ply is counted per batch with a popcount,
/// and no Zobrist key is maintained since nothing reads it. `$pext` picks the slider lookup
/// (`true` only for copies compiled with BMI2).
///
/// A macro rather than a generic function so that the closures handed to the move generator are
/// written inside each copy and so inherit its target features (a closure takes the features of
/// the function it is written in, not of the one it is inlined into).
macro_rules! define_perft_bulk {
    ($(#[$attr:meta])* fn $name:ident, $pext:literal) => {
        $(#[$attr])*
        fn $name(pos: &Position, depth: u32) -> u64 {
            if depth == 1 {
                return pos.count_moves_with::<$pext>();
            }
            let mut nodes = 0;
            if depth == 2 {
                nodes = count_leaf_parent!(pos, $pext);
            } else {
                pos.generate_with::<$pext>(&mut |batch| {
                    batch.for_each(|m| {
                        nodes += $name(&pos.play_unhashed::<$pext>(m, batch.role), depth - 1)
                    });
                });
            }
            nodes
        }
    };
}

define_perft_bulk!(fn perft_bulk_portable, false);

#[cfg(target_arch = "x86_64")]
define_perft_bulk!(
    /// The recursion compiled for [`Kernel::Popcnt`].
    #[target_feature(enable = "popcnt")]
    fn perft_bulk_popcnt, false
);

#[cfg(target_arch = "x86_64")]
define_perft_bulk!(
    /// The recursion compiled for [`Kernel::Bmi1`].
    #[target_feature(enable = "popcnt,bmi1")]
    fn perft_bulk_bmi1, false
);

#[cfg(target_arch = "x86_64")]
define_perft_bulk!(
    /// The recursion compiled for [`Kernel::Bmi2`].
    #[target_feature(enable = "popcnt,bmi1,bmi2,avx2")]
    fn perft_bulk_bmi2, true
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
/// The table is an array of 64-byte buckets (one cache line) in two regions:
///
/// - **Shallow** (remaining depth ≤ 2, most probes, each saving only ~30 leaf-parents of work):
///   eight one-word entries per bucket, `check` (46 bits of the key) | generation (2 bits) |
///   count (16 bits; a depth-2 count is at most 218², so it always fits). A word is written
///   atomically, so a reader sees either the old entry or the new one. The region is a
///   sixteenth of the table (16 MiB of 256), small enough to stay mostly in the last-level
///   cache.
/// - **Deep** (the rest): four two-word entries per bucket, `data` = remaining depth (6 bits) |
///   generation (6 bits) | count (52 bits), and `check` = the high 64 bits of the 128-bit key
///   XORed with `data`. A reader accepts an entry only when `check ^ data` gives back its own
///   key's high half, so a torn write (two threads storing at once) reads as a miss, never as a
///   wrong count.
///
/// The low half of the key picks the bucket; a false hit also needs the checked bits to
/// collide, about 2^-43 per shallow probe and 2^-62 per deep probe.
///
/// A worker starts a new *generation* for each workunit ([`PerftEngine::new_generation`]).
/// Entries from earlier generations are still read, but they are replaced first: a worker keeps
/// its table across workunits, and without ageing the deep entries of earlier start positions
/// would sit in their buckets for good and leave the current one a fraction of the table
/// (measured: 24 start positions at depth 7 in a row took 62.9 s without ageing, 50.7 s with).
pub struct PerftTable {
    words: TableMemory,
    /// Buckets of the shallow region, at the start of the table.
    shallow_buckets: usize,
    /// Buckets of the deep region, after the shallow one.
    deep_buckets: usize,
    generation: AtomicU64,
}

const WORDS_PER_BUCKET: usize = 8;
const SHALLOW_DEPTH: u32 = 2;
const SHALLOW_COUNT_BITS: u32 = 16;
const SHALLOW_GEN_BITS: u32 = 2;
const SHALLOW_CHECK_SHIFT: u32 = SHALLOW_COUNT_BITS + SHALLOW_GEN_BITS;
const DEEP_ENTRIES: usize = WORDS_PER_BUCKET / 2;
const DEEP_COUNT_BITS: u32 = 52;
const DEEP_GEN_BITS: u32 = 6;
const DEEP_DEPTH_SHIFT: u32 = DEEP_COUNT_BITS + DEEP_GEN_BITS;
/// Remaining depths are keyed modulo 64 (see `ZobristKeys::depth`) and stored in 6 bits.
const MAX_TABLE_DEPTH: u32 = 63;

const fn mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

impl PerftTable {
    /// A zeroed table of about `mib` MiB (at least one bucket per region).
    pub fn new(mib: usize) -> PerftTable {
        let buckets = ((mib << 20) / (8 * WORDS_PER_BUCKET)).max(2);
        let shallow_buckets = (buckets / 16).max(1);
        PerftTable {
            words: TableMemory::zeroed(buckets * WORDS_PER_BUCKET),
            shallow_buckets,
            deep_buckets: buckets - shallow_buckets,
            generation: AtomicU64::new(0),
        }
    }

    /// Number of entries.
    pub fn entries(&self) -> usize {
        self.shallow_buckets * WORDS_PER_BUCKET + self.deep_buckets * DEEP_ENTRIES
    }

    /// Starts a new generation: entries stored from now on are kept in preference to older
    /// ones, which stay readable until replaced.
    pub fn new_generation(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The first word of the bucket of a key.
    #[inline(always)]
    fn bucket(&self, key: ZobristKey, depth: u32) -> usize {
        let (first, count) = if depth <= SHALLOW_DEPTH {
            (0, self.shallow_buckets)
        } else {
            (self.shallow_buckets, self.deep_buckets)
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
        if depth <= SHALLOW_DEPTH {
            let check = high >> SHALLOW_CHECK_SHIFT;
            for e in 0..WORDS_PER_BUCKET {
                let word = self.words[b + e].load(Ordering::Relaxed);
                if word != 0 && word >> SHALLOW_CHECK_SHIFT == check {
                    return Some(word & mask(SHALLOW_COUNT_BITS));
                }
            }
        } else if depth <= MAX_TABLE_DEPTH {
            for e in 0..DEEP_ENTRIES {
                let check = self.words[b + 2 * e].load(Ordering::Relaxed);
                let data = self.words[b + 2 * e + 1].load(Ordering::Relaxed);
                if data != 0 && check ^ data == high {
                    return Some(data & mask(DEEP_COUNT_BITS));
                }
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
    /// same key's if present, else an empty or older-generation one, else — deep region — the
    /// shallowest: deep subtrees cost the most to recompute. Ties go to a slot chosen by the
    /// key, so that no slot of a bucket is left holding its first entry for ever.
    #[inline(always)]
    pub fn store(&self, key: ZobristKey, depth: u32, count: u64) {
        let b = self.bucket(key, depth);
        let high = (key >> 64) as u64;
        let generation = self.generation.load(Ordering::Relaxed);
        // The key's lowest bits barely move the bucket index (its top bits do): they pick
        // where ties start.
        let start = key as usize;
        if depth <= SHALLOW_DEPTH {
            if count > mask(SHALLOW_COUNT_BITS) {
                return; // never for depth ≤ 2; just not kept
            }
            let check = high >> SHALLOW_CHECK_SHIFT;
            let current = generation & mask(SHALLOW_GEN_BITS);
            // Worth keeping: empty 0, older generation 1, current 2.
            let mut victim = start % WORDS_PER_BUCKET;
            let mut victim_worth = 2;
            for e in 0..WORDS_PER_BUCKET {
                let word = self.words[b + e].load(Ordering::Relaxed);
                if word != 0 && word >> SHALLOW_CHECK_SHIFT == check {
                    victim = e;
                    break;
                }
                let worth = if word == 0 {
                    0
                } else if (word >> SHALLOW_COUNT_BITS) & mask(SHALLOW_GEN_BITS) != current {
                    1
                } else {
                    2
                };
                if worth < victim_worth {
                    victim = e;
                    victim_worth = worth;
                }
            }
            let word = check << SHALLOW_CHECK_SHIFT | current << SHALLOW_COUNT_BITS | count;
            self.words[b + victim].store(word, Ordering::Relaxed);
        } else if depth <= MAX_TABLE_DEPTH {
            if count > mask(DEEP_COUNT_BITS) {
                return; // 2^52 nodes under one position: never reached in practice; not kept
            }
            let current = generation & mask(DEEP_GEN_BITS);
            let mut victim = 0;
            let mut victim_worth = u64::MAX;
            for i in 0..DEEP_ENTRIES {
                let e = (start + i) % DEEP_ENTRIES;
                let check = self.words[b + 2 * e].load(Ordering::Relaxed);
                let old = self.words[b + 2 * e + 1].load(Ordering::Relaxed);
                if old != 0 && check ^ old == high {
                    victim = e;
                    break;
                }
                // Worth keeping: older generations (and empty slots) below the current one,
                // then by remaining depth.
                let old_depth = old >> DEEP_DEPTH_SHIFT;
                let is_current =
                    old != 0 && (old >> DEEP_COUNT_BITS) & mask(DEEP_GEN_BITS) == current;
                let worth = old_depth + if is_current { 64 } else { 0 };
                if worth < victim_worth {
                    victim = e;
                    victim_worth = worth;
                }
            }
            let data = (depth as u64) << DEEP_DEPTH_SHIFT | current << DEEP_COUNT_BITS | count;
            self.words[b + 2 * victim].store(high ^ data, Ordering::Relaxed);
            self.words[b + 2 * victim + 1].store(data, Ordering::Relaxed);
        }
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
    kernel: Kernel,
}

impl PerftEngine {
    /// An engine with the given options (the table is allocated here).
    pub fn new(options: PerftOptions) -> PerftEngine {
        let options = PerftOptions {
            threads: options.threads.max(1),
            ..options
        };
        let table = (options.hash_mib > 0).then(|| PerftTable::new(options.hash_mib));
        PerftEngine {
            options,
            table,
            kernel: Kernel::best(),
        }
    }

    /// The same engine running `kernel` (one this CPU cannot run falls back to the portable
    /// kernel); by default [`Kernel::best`]. For tests and benchmarks of each compiled copy.
    pub fn with_kernel(mut self, kernel: Kernel) -> PerftEngine {
        self.kernel = if kernel.is_available() {
            kernel
        } else {
            Kernel::Portable
        };
        self
    }

    /// Starts a new generation of the table (see [`PerftTable`]): call it once per independent
    /// job, such as a workunit, so that the table keeps the current job's entries in preference
    /// to earlier ones. Not per call: the root moves of one job share transpositions.
    pub fn new_generation(&self) {
        if let Some(table) = &self.table {
            table.new_generation();
        }
    }

    /// The options in force.
    pub fn options(&self) -> PerftOptions {
        self.options
    }

    /// The number of leaf nodes `depth` plies below `pos`.
    pub fn perft(&self, pos: &Position, depth: u32) -> u64 {
        if depth <= 1 || (self.options.threads == 1 && self.table.is_none()) {
            return perft_with(self.kernel, pos, depth);
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
                    Some(table) => perft_hashed(self.kernel, child, remaining, table),
                    None => perft_with(self.kernel, child, remaining),
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

/// The hashed recursion of `kernel`, which must be available (the engine checks).
fn perft_hashed(kernel: Kernel, pos: &Position, depth: u32, table: &PerftTable) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        debug_assert!(kernel.is_available());
        // SAFETY (each arm): the engine holds only kernels this CPU runs.
        match kernel {
            Kernel::Portable => {}
            Kernel::Popcnt => return unsafe { perft_hashed_popcnt(pos, depth, table) },
            Kernel::Bmi1 => return unsafe { perft_hashed_bmi1(pos, depth, table) },
            Kernel::Bmi2 => return unsafe { perft_hashed_bmi2(pos, depth, table) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
    perft_hashed_portable(pos, depth, table)
}

/// Defines a perft recursion that stores subtree counts in a [`PerftTable`]; see
/// [`define_perft_bulk`] for why this is a macro.
macro_rules! define_perft_hashed {
    ($(#[$attr:meta])* fn $name:ident, $pext:literal) => {
        $(#[$attr])*
        fn $name(pos: &Position, depth: u32, table: &PerftTable) -> u64 {
            if depth <= 1 {
                return if depth == 0 { 1 } else { pos.count_moves_with::<$pext>() };
            }
            let key = pos.hash128() ^ pos.zobrist_keys().depth[depth as usize & 63];
            if let Some(n) = table.probe(key, depth) {
                return n;
            }
            let mut nodes = 0;
            if depth == 2 {
                // Depth-1 counts are not stored (recounting beats a cache miss): count leaves.
                nodes = count_leaf_parent!(pos, $pext);
            } else {
                // Make every child first and prefetch its bucket, then recurse: the table is
                // far bigger than the caches, and a probe issued only on entering a child
                // waits for memory, while these loads overlap with making the siblings.
                let child_depth = pos.zobrist_keys().depth[(depth - 1) as usize & 63];
                let mut children = [const { MaybeUninit::<Position>::uninit() }; MAX_MOVES];
                let mut made = 0;
                pos.generate_with::<$pext>(&mut |batch| {
                    batch.for_each(|m| {
                        let child = pos.play_with_role::<$pext>(m, batch.role);
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

define_perft_hashed!(fn perft_hashed_portable, false);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Popcnt`].
    #[target_feature(enable = "popcnt")]
    fn perft_hashed_popcnt, false
);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Bmi1`].
    #[target_feature(enable = "popcnt,bmi1")]
    fn perft_hashed_bmi1, false
);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Bmi2`].
    #[target_feature(enable = "popcnt,bmi1,bmi2,avx2")]
    fn perft_hashed_bmi2, true
);
