//! The perft hash table: subtree counts keyed by (position, remaining depth), shared by threads
//! without locks.

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use crate::zobrist::ZobristKey;

/// A perft hash table: subtree counts keyed by (position, remaining depth), shared by threads
/// without locks.
///
/// **Layout.** 64-byte buckets (one cache line each) in two regions, each used only as far as
/// the job needs it (see [`Region`]: it starts at 8 MiB and doubles). The key's low 64 bits
/// pick the bucket; its high 64 bits are checked.
///
/// - **Remaining depth 2** (the leaves' parents, by far the most entries: about ten times those
///   of depth 3 in a deep tree, and the most probed): up to half the table (rounded down to a
///   power of two), six entries per bucket: six `check` words, six 16-bit `stored` counts (the count
///   plus one, 0 for an empty entry; a depth-2 count is at most 218² = 47,524) and six 4-bit
///   generation stamps. `check` = the key's high half XORed with `stored` spread over 64 bits
///   (times an odd constant).
/// - **Deeper entries**: the rest, four 16-byte entries per bucket: `data` = remaining depth
///   (6 bits) | generation (6 bits) | count (52 bits), and `check` = the key's high half XORed
///   with `data`.
///
/// **Reading without locks.** Each word is written atomically but an entry's two are not. A
/// reader accepts an entry only when its `check` XOR its count word gives back the reader's own
/// key's high half, so an entry torn between two writers (one's `check`, the other's count)
/// reads as a miss: accepting it would need the two stored keys' high halves to differ by
/// exactly the difference of the two spread counts, a 64-bit coincidence.
///
/// **False hits.** A probe compares its key's high 64 bits with at most six entries. For two
/// different positions (or depths: the depth is keyed in) those bits are equal with probability
/// 2^-64 over the random choice of Zobrist keys, so `N` probes give a false hit with probability
/// at most 6·N·2^-64: **3.3·10^-7 for N = 10^12** (a torn entry adds 2^-64 per torn read). The
/// one-word depth-2 entries before this layout checked 46 bits in buckets of eight, about 0.11
/// expected false hits per 10^12 probes.
///
/// **Replacement.** A store overwrites the same key's entry if the bucket has it, else the
/// least valuable: an empty entry, then one from an older generation, then (deep region) the
/// shallowest, since a deep count took the most work and is probed the least often. Ties go to
/// a slot chosen by the key. So a new count is always stored, and a bucket never keeps its
/// first entries for good.
///
/// **Generations.** A worker starts a new generation for each workunit
/// ([`PerftEngine::new_generation`](super::PerftEngine::new_generation)). Entries from earlier
/// generations are still read, but they are replaced first: a worker keeps its table across
/// workunits, and without ageing the deep entries of earlier start positions would sit in their
/// buckets for good (measured: 24 start positions at depth 7 in a row took 62.9 s without
/// ageing, 50.7 s with).
pub struct PerftTable {
    memory: TableMemory,
    /// The depth-2 entries: the first half of the memory (rounded down to a power of two).
    leaf: Region,
    /// Deeper entries: the rest.
    deep: Region,
    generation: AtomicU64,
}

/// A region of the table that is only as large as the job needs: its first 2^`bits` buckets,
/// or all of them once it has outgrown the largest power of two it holds.
///
/// A key's bucket is its low `bits` bits, so a doubling keeps the entries whose new index bit
/// is 0 and loses the others (about what a moment of a half-size region costs), and threads
/// that read `bits` before and after a doubling only miss each other's entries, never read a
/// wrong one. Only the last step, to a whole region that is not a power of two, indexes by
/// multiply-shift and loses every entry once.
///
/// Why not the whole table from the start: a big region spreads the most probed entries over
/// more memory and more pages (each probe a cache and TLB miss), and every page a job touches
/// for the first time is one the kernel must zero and the host may have to back afresh — on the
/// development VM up to 45 s of system time for a perft(9) of SP 518 with an 8 GiB table
/// whose deep entries were spread over all of its 4 GiB (BENCHMARKS.md, "Regions sized to the
/// job"). A small region evicts counts that
/// transpositions would have found, so it doubles once a generation has stored more entries
/// than it holds. Measured on perft(8) of SP 518 with a 1 GiB table, a fixed depth-2 region of
/// half the table took 1.10–1.15× the time of a sixteenth; on perft(9) with 2 GiB, a sixteenth
/// took 1.07× the time of a half.
struct Region {
    /// The region's first bucket in the table's memory.
    offset: usize,
    /// Its buckets when fully grown.
    full: usize,
    /// The bounds of `bits`: 2^`min_bits` buckets to start (or fewer in a small table), and
    /// `max_bits + 1` meaning all `full` buckets when `full` is not a power of two.
    min_bits: u32,
    max_bits: u32,
    bits: AtomicU32,
    /// Entries per bucket.
    entries: u64,
    /// Stores in this generation, sampled: one in `STORE_SAMPLE`.
    stores: AtomicU64,
}

impl Region {
    fn new(offset: usize, full: usize, entries: usize) -> Region {
        let largest = full.ilog2();
        let max_bits = largest + u32::from(full != 1 << largest);
        let min_bits = MIN_REGION_BITS.min(largest);
        Region {
            offset,
            full,
            min_bits,
            max_bits,
            bits: AtomicU32::new(min_bits),
            entries: entries as u64,
            stores: AtomicU64::new(0),
        }
    }

    /// The buckets in use at `bits`.
    fn buckets(&self, bits: u32) -> usize {
        if 1usize.checked_shl(bits).is_none_or(|n| n > self.full) {
            self.full
        } else {
            1 << bits
        }
    }

    /// The fewest bits (within the bounds) whose buckets hold `entries` entries.
    fn bits_for(&self, entries: u64) -> u32 {
        let mut bits = self.min_bits;
        while bits < self.max_bits && (self.buckets(bits) as u64) * self.entries < entries {
            bits += 1;
        }
        bits
    }

    /// Grows the region to hold `entries` entries, if it is smaller.
    fn reserve(&self, entries: u64) {
        self.bits
            .fetch_max(self.bits_for(entries), Ordering::Relaxed);
    }

    /// A new generation starts at the size the last one needed.
    fn new_generation(&self) {
        let stores = self.stores.swap(0, Ordering::Relaxed) * STORE_SAMPLE;
        self.bits.store(self.bits_for(stores), Ordering::Relaxed);
    }

    /// Counts a store (one in `STORE_SAMPLE`, judged by key bits, so that threads rarely
    /// write the shared counter) and doubles the region once this generation has stored more
    /// entries than it holds.
    #[inline(always)]
    fn count_store(&self, key: ZobristKey) {
        if !((key >> 120) as u64).is_multiple_of(STORE_SAMPLE) {
            return;
        }
        let stores = (self.stores.fetch_add(1, Ordering::Relaxed) + 1) * STORE_SAMPLE;
        let bits = self.bits.load(Ordering::Relaxed);
        if bits < self.max_bits && stores > self.buckets(bits) as u64 * self.entries {
            let _ =
                self.bits
                    .compare_exchange(bits, bits + 1, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The index in the table's memory of `key`'s bucket.
    #[inline(always)]
    fn bucket_index(&self, key: ZobristKey) -> usize {
        let bits = self.bits.load(Ordering::Relaxed);
        let i = if bits < usize::BITS && 1 << bits <= self.full {
            key as usize & ((1 << bits) - 1)
        } else {
            // Multiply-shift on the key's low half: any region size.
            (((key as u64 as u128) * self.full as u128) >> 64) as usize
        };
        self.offset + i
    }
}

/// A bucket of the depth-2 region.
#[repr(C, align(64))]
struct LeafBucket {
    checks: [AtomicU64; LEAF_ENTRIES],
    stored: [AtomicU16; LEAF_ENTRIES],
    /// A 4-bit generation stamp per entry (a lost update only changes which entry goes next).
    stamps: AtomicU32,
}

/// A bucket of the deep region: four entries of (`check`, `data`) words.
#[repr(C, align(64))]
struct DeepBucket {
    words: [AtomicU64; 2 * DEEP_ENTRIES],
}

const BUCKET_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<LeafBucket>() == BUCKET_BYTES);
const _: () = assert!(std::mem::size_of::<DeepBucket>() == BUCKET_BYTES);

const LEAF_ENTRIES: usize = 6;
const STAMP_BITS: u32 = 4;
const DEEP_ENTRIES: usize = 4;
const COUNT_BITS: u32 = 52;
const GEN_BITS: u32 = 6;
const DEPTH_SHIFT: u32 = COUNT_BITS + GEN_BITS;
/// Remaining depths are keyed modulo 64 (see `ZobristKeys::depth`) and stored in 6 bits.
const MAX_TABLE_DEPTH: u32 = 63;
/// The remaining depth whose entries have a region of their own.
const LEAF_DEPTH: u32 = 2;
/// A region starts at 2^17 buckets (8 MiB) and doubles as a generation needs it.
const MIN_REGION_BITS: u32 = 17;
/// One store in this many (judged by key bits) is counted towards a region's growth.
const STORE_SAMPLE: u64 = 256;

const fn mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

/// A depth-2 entry's stored count spread over 64 bits, to bind it to its `check` word.
#[inline(always)]
fn spread(stored: u16) -> u64 {
    u64::from(stored).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl PerftTable {
    /// A zeroed table of about `mib` MiB (at least one bucket per region).
    pub fn new(mib: usize) -> PerftTable {
        let buckets = ((mib << 20) / BUCKET_BYTES).max(2);
        // The largest power of two at most half the table.
        let leaf_buckets = 1 << (buckets / 2).ilog2();
        PerftTable {
            memory: TableMemory::zeroed(buckets),
            leaf: Region::new(0, leaf_buckets, LEAF_ENTRIES),
            deep: Region::new(leaf_buckets, buckets - leaf_buckets, DEEP_ENTRIES),
            generation: AtomicU64::new(0),
        }
    }

    /// Number of entries (with both regions at their largest).
    pub fn entries(&self) -> usize {
        self.leaf.full * LEAF_ENTRIES + self.deep.full * DEEP_ENTRIES
    }

    /// Starts a new generation: entries stored from now on are kept in preference to older
    /// ones, which stay readable until replaced. Each region starts the generation at the size
    /// the previous one needed (see [`Region`]).
    pub fn new_generation(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
        self.leaf.new_generation();
        self.deep.new_generation();
    }

    /// Makes both regions large enough (within their bounds) for a job expected to count
    /// `leaf_parents` distinct leaf parents: growing from the start avoids the doublings, each
    /// of which loses half a region's entries. The deep region gets room for twice the
    /// entries such a job stores (about one per nine leaf parents: a tenth at depth 3, a
    /// hundredth at depth 4, …): its entries are the dearest to lose and the fewest.
    pub fn reserve_leaf_parents(&self, leaf_parents: u64) {
        self.leaf.reserve(leaf_parents);
        self.deep.reserve(leaf_parents / 9 * 2);
    }

    #[inline(always)]
    fn leaf_bucket(&self, key: ZobristKey) -> &LeafBucket {
        // SAFETY: the region's indices are its own, which only depth-2 buckets use.
        unsafe { self.memory.bucket(self.leaf.bucket_index(key)) }
    }

    #[inline(always)]
    fn deep_bucket(&self, key: ZobristKey) -> &DeepBucket {
        // SAFETY: the region's indices are its own, which only deep buckets use.
        unsafe { self.memory.bucket(self.deep.bucket_index(key)) }
    }

    /// The stored count for `key` (which includes the remaining depth `depth`), if present and
    /// intact.
    #[inline(always)]
    pub fn probe(&self, key: ZobristKey, depth: u32) -> Option<u64> {
        let high = (key >> 64) as u64;
        if depth == LEAF_DEPTH {
            let bucket = self.leaf_bucket(key);
            for e in 0..LEAF_ENTRIES {
                let stored = bucket.stored[e].load(Ordering::Relaxed);
                if stored != 0 && bucket.checks[e].load(Ordering::Relaxed) ^ spread(stored) == high
                {
                    return Some(u64::from(stored) - 1);
                }
            }
        } else if depth > LEAF_DEPTH && depth <= MAX_TABLE_DEPTH {
            let bucket = self.deep_bucket(key);
            for e in 0..DEEP_ENTRIES {
                let check = bucket.words[2 * e].load(Ordering::Relaxed);
                let data = bucket.words[2 * e + 1].load(Ordering::Relaxed);
                if data != 0 && check ^ data == high {
                    return Some(data & mask(COUNT_BITS));
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
            let p: *const i8 = if depth == LEAF_DEPTH {
                (self.leaf_bucket(key) as *const LeafBucket).cast()
            } else {
                (self.deep_bucket(key) as *const DeepBucket).cast()
            };
            // SAFETY: a prefetch is only a hint; `p` points into the table.
            unsafe { std::arch::x86_64::_mm_prefetch(p, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (key, depth);
    }

    /// Stores the count of a subtree of remaining depth `depth` (see the type's doc for the
    /// entry replaced). Depths 0, 1 and over 63, and counts too large for their entry (never
    /// for depth 2; 2^52 or more deeper) are not kept.
    #[inline(always)]
    pub fn store(&self, key: ZobristKey, depth: u32, count: u64) {
        let high = (key >> 64) as u64;
        let generation = self.generation.load(Ordering::Relaxed);
        // The key's low bits pick the bucket: ties start from higher ones.
        let start = (key >> 32) as usize;
        if depth == LEAF_DEPTH {
            let Some(stored) = count.checked_add(1).and_then(|s| u16::try_from(s).ok()) else {
                return;
            };
            self.leaf.count_store(key);
            let bucket = self.leaf_bucket(key);
            let current = generation as u32 & mask(STAMP_BITS) as u32;
            let stamps = bucket.stamps.load(Ordering::Relaxed);
            // Worth keeping: empty 0, older generation 1, current 2.
            let mut victim = start % LEAF_ENTRIES;
            let mut victim_worth = 2;
            for e in 0..LEAF_ENTRIES {
                let old = bucket.stored[e].load(Ordering::Relaxed);
                if old != 0 && bucket.checks[e].load(Ordering::Relaxed) ^ spread(old) == high {
                    victim = e;
                    break;
                }
                let stamp = (stamps >> (STAMP_BITS * e as u32)) & mask(STAMP_BITS) as u32;
                let worth = if old == 0 {
                    0
                } else if stamp != current {
                    1
                } else {
                    2
                };
                if worth < victim_worth {
                    victim = e;
                    victim_worth = worth;
                }
            }
            bucket.checks[victim].store(high ^ spread(stored), Ordering::Relaxed);
            bucket.stored[victim].store(stored, Ordering::Relaxed);
            let shift = STAMP_BITS * victim as u32;
            let stamps = stamps & !((mask(STAMP_BITS) as u32) << shift) | current << shift;
            bucket.stamps.store(stamps, Ordering::Relaxed);
        } else if depth > LEAF_DEPTH && depth <= MAX_TABLE_DEPTH && count <= mask(COUNT_BITS) {
            self.deep.count_store(key);
            let bucket = self.deep_bucket(key);
            let current = generation & mask(GEN_BITS);
            let mut victim = 0;
            let mut victim_worth = u64::MAX;
            for i in 0..DEEP_ENTRIES {
                let e = (start + i) % DEEP_ENTRIES;
                let check = bucket.words[2 * e].load(Ordering::Relaxed);
                let old = bucket.words[2 * e + 1].load(Ordering::Relaxed);
                if old != 0 && check ^ old == high {
                    victim = e;
                    break;
                }
                // Worth keeping: empty 0, older generations by depth, then the current one's.
                let worth = if old == 0 {
                    0
                } else if (old >> COUNT_BITS) & mask(GEN_BITS) == current {
                    (old >> DEPTH_SHIFT) + 64
                } else {
                    old >> DEPTH_SHIFT
                };
                if worth < victim_worth {
                    victim = e;
                    victim_worth = worth;
                }
            }
            let data = (depth as u64) << DEPTH_SHIFT | current << COUNT_BITS | count;
            bucket.words[2 * victim].store(high ^ data, Ordering::Relaxed);
            bucket.words[2 * victim + 1].store(data, Ordering::Relaxed);
        }
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        for i in 0..self.leaf.full {
            // SAFETY: `i` is in the depth-2 region.
            let bucket: &LeafBucket = unsafe { self.memory.bucket(self.leaf.offset + i) };
            for e in 0..LEAF_ENTRIES {
                bucket.checks[e].store(0, Ordering::Relaxed);
                bucket.stored[e].store(0, Ordering::Relaxed);
            }
            bucket.stamps.store(0, Ordering::Relaxed);
        }
        for i in 0..self.deep.full {
            // SAFETY: `i` is in the deep region.
            let bucket: &DeepBucket = unsafe { self.memory.bucket(self.deep.offset + i) };
            for w in &bucket.words {
                w.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// Zeroed memory for a [`PerftTable`]: `len` buckets of 64 bytes, aligned to 64.
///
/// On Linux the table is mapped directly and marked for transparent huge pages (`madvise`
/// `MADV_HUGEPAGE`, only a hint: without them the table works the same, slower): probes land at
/// random across the table, and with 4 KiB pages nearly every probe also misses the TLB.
/// Elsewhere, or if the mapping fails, it is an ordinary zeroed allocation.
struct TableMemory {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    mapped: bool,
}

// SAFETY: the memory is owned by this value and only reached as shared references to buckets
// of atomics, which are Sync.
unsafe impl Send for TableMemory {}
// SAFETY: as above.
unsafe impl Sync for TableMemory {}

impl TableMemory {
    fn zeroed(len: usize) -> TableMemory {
        let bytes = len * BUCKET_BYTES;
        #[cfg(target_os = "linux")]
        // SAFETY: an anonymous private mapping of `bytes` bytes, checked for failure; fresh
        // anonymous pages read as zero, and the mapping is page-aligned.
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
                libc::madvise(p, bytes, libc::MADV_HUGEPAGE);
                return TableMemory {
                    ptr: std::ptr::NonNull::new_unchecked(p.cast()),
                    len,
                    mapped: true,
                };
            }
        }
        // SAFETY: the layout has a non-zero size (at least two buckets).
        let p = unsafe { std::alloc::alloc_zeroed(Self::layout(len)) };
        let Some(ptr) = std::ptr::NonNull::new(p) else {
            std::alloc::handle_alloc_error(Self::layout(len));
        };
        TableMemory {
            ptr,
            len,
            mapped: false,
        }
    }

    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len * BUCKET_BYTES, BUCKET_BYTES)
            .expect("a table size that fits in memory")
    }

    /// Bucket `i` seen as a `T`.
    ///
    /// # Safety
    /// `i < len`, `T` is one of the 64-byte bucket types (atomics only, valid when zeroed), and
    /// bucket `i` is only ever seen as that one type.
    #[inline(always)]
    unsafe fn bucket<T>(&self, i: usize) -> &T {
        debug_assert!(i < self.len);
        // SAFETY: as the caller vouches; the memory is zeroed or written through `T` only.
        unsafe { &*self.ptr.as_ptr().add(i * BUCKET_BYTES).cast::<T>() }
    }
}

impl Drop for TableMemory {
    fn drop(&mut self) {
        if self.mapped {
            #[cfg(target_os = "linux")]
            // SAFETY: unmaps exactly the mapping made in `zeroed`.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.len * BUCKET_BYTES);
            }
        } else {
            // SAFETY: `ptr` came from `alloc_zeroed` with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_grows_by_doublings_then_to_its_whole_size() {
        // 3·2^20 buckets: not a power of two, so the last step takes the whole region.
        let region = Region::new(5, 3 << 20, DEEP_ENTRIES);
        assert_eq!(region.bits.load(Ordering::Relaxed), MIN_REGION_BITS);
        assert_eq!((region.min_bits, region.max_bits), (17, 22));
        assert_eq!(region.buckets(21), 1 << 21);
        assert_eq!(region.buckets(22), 3 << 20);
        assert_eq!(region.bits_for(0), 17);
        assert_eq!(region.bits_for(4 << 20), 20);
        assert_eq!(region.bits_for(u64::MAX), 22);
        // Indices stay inside the region at every size.
        for bits in 17..=22 {
            region.bits.store(bits, Ordering::Relaxed);
            for key in [0, u128::MAX, 0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210] {
                let i = region.bucket_index(key);
                assert!(
                    (5..5 + region.buckets(bits)).contains(&i),
                    "bits {bits}: {i}"
                );
            }
        }
    }

    #[test]
    fn a_generation_that_stores_more_than_the_region_holds_doubles_it() {
        let region = Region::new(0, 1 << 20, LEAF_ENTRIES);
        let holds = (LEAF_ENTRIES as u64) << MIN_REGION_BITS;
        // Only sampled keys count: those whose top byte is a multiple of STORE_SAMPLE.
        for _ in 0..=holds / STORE_SAMPLE {
            region.count_store(0);
        }
        assert_eq!(region.bits.load(Ordering::Relaxed), MIN_REGION_BITS + 1);
        // Keys outside the sample never touch the counter.
        region.count_store(1 << 120);
        assert_eq!(
            region.stores.load(Ordering::Relaxed),
            holds / STORE_SAMPLE + 1
        );
        // The next generation starts at the size this one needed; one that stores nothing at
        // the smallest.
        region.new_generation();
        assert_eq!(region.bits.load(Ordering::Relaxed), MIN_REGION_BITS + 1);
        region.new_generation();
        assert_eq!(region.bits.load(Ordering::Relaxed), MIN_REGION_BITS);
        // A reservation never shrinks it.
        region.reserve(holds * 4);
        region.reserve(0);
        assert_eq!(region.bits.load(Ordering::Relaxed), MIN_REGION_BITS + 2);
    }

    #[test]
    fn an_eight_gib_table_reserves_a_fraction_of_itself_for_perft_9() {
        let table = PerftTable::new(8 << 10);
        table.reserve_leaf_parents(96_400_068);
        let used = |r: &Region| r.buckets(r.bits.load(Ordering::Relaxed)) * BUCKET_BYTES;
        // 1 GiB of depth-2 buckets (six entries each) and 512 MiB of deep ones, of 8 GiB.
        assert_eq!(used(&table.leaf), 1 << 30);
        assert_eq!(used(&table.deep), 512 << 20);
        assert_eq!(table.entries(), (64 << 20) * 6 + (64 << 20) * 4);
    }
}
