//! What a random probe of a large table costs on this machine, apart from perft (issue 35):
//! the latency of a dependent random read, and the time a prefetched random read adds to a
//! loop of independent work (as the hashed perft's leaf-parent probes are), per region size.
//!
//!   cargo bench -p c960-common --bench prefetch_cost [-- MIB...]
//!
//! A prefetched read's cost growing with the region, while the DRAM latency does not, is the
//! price of translating its address (TLB misses and page walks; on a virtual machine two
//! levels of them). The region is marked for transparent huge pages on Linux, like the perft
//! table.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Cache lines read per measurement.
const READS: usize = 4_000_000;
/// Independent work between two reads: about as much as a leaf parent's probe has around it.
const WORK: usize = 800;

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .map(|a| a.parse().expect("region sizes in MiB"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![8, 64, 256, 1024]
    } else {
        sizes
    };
    println!("region_mib dependent_read_ns work_only_ns work_and_prefetched_read_ns added_ns");
    for mib in sizes {
        let region = Region::new(mib << 20);
        let chase = region.dependent_read_ns();
        let work = region.work_loop_ns(false);
        let with_reads = region.work_loop_ns(true);
        println!(
            "{mib} {chase:.1} {work:.1} {with_reads:.1} {:.1}",
            with_reads - work
        );
    }
}

struct Region {
    ptr: *mut u8,
    bytes: usize,
}

impl Region {
    /// The region in 2 MiB-aligned memory marked for transparent huge pages (as the perft
    /// table's is) before its pages are first touched, then zeroed, so that no measurement pays
    /// for first touches.
    fn new(bytes: usize) -> Region {
        let layout = Region::layout(bytes);
        // SAFETY: the layout's size is not zero (the sizes are whole MiB).
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        #[cfg(target_os = "linux")]
        // SAFETY: only advice about memory this process owns.
        unsafe {
            libc::madvise(ptr.cast(), bytes, libc::MADV_HUGEPAGE);
        }
        // SAFETY: the whole allocation, written once.
        unsafe { ptr.write_bytes(0, bytes) };
        Region { ptr, bytes }
    }

    fn layout(bytes: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(bytes, 2 << 20).expect("a region size in MiB")
    }

    fn lines(&self) -> usize {
        self.bytes / 64
    }

    /// Nanoseconds per read of a chain through a random cyclic permutation of the lines.
    fn dependent_read_ns(&self) -> f64 {
        let lines = self.lines();
        let mut order: Vec<usize> = (0..lines).collect();
        let mut rng = StdRng::seed_from_u64(0xC960);
        for i in (1..lines).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        for i in 0..lines {
            // SAFETY: both offsets are line starts inside the region.
            unsafe {
                self.ptr
                    .add(order[i] * 64)
                    .cast::<usize>()
                    .write(order[(i + 1) % lines] * 64)
            };
        }
        let start = Instant::now();
        let mut offset = 0usize;
        for _ in 0..READS {
            // SAFETY: every stored offset is a line start inside the region.
            offset = unsafe { self.ptr.add(offset).cast::<usize>().read() };
        }
        std::hint::black_box(offset);
        start.elapsed().as_secs_f64() * 1e9 / READS as f64
    }

    /// Nanoseconds per iteration of independent work, with or without a random line
    /// prefetched each iteration and read 16 iterations later.
    fn work_loop_ns(&self, reads: bool) -> f64 {
        let mask = self.lines() - 1;
        let table: Vec<u64> = (0..256u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        // Addresses drawn before the clock starts: the loop measures the work and the reads.
        let mut rng = StdRng::seed_from_u64(1);
        let lines: Vec<usize> = (0..READS)
            .map(|_| rng.random_range(0..=mask) * 64)
            .collect();
        let seeds: Vec<u64> = (0..READS).map(|_| rng.random()).collect();
        let mut ring = [0usize; 16];
        let mut acc = 0u64;
        let start = Instant::now();
        for i in 0..READS {
            let s = seeds[i];
            let (mut a, mut b, mut c) = (0u64, 0u64, 0u64);
            for w in (0..WORK).step_by(4) {
                a += u64::from((table[(w + i) & 255] ^ s).count_ones());
                b += u64::from((table[(w + 1 + i) & 255].wrapping_add(s)).count_ones());
                c ^= table[(w + 2 + i) & 255] >> 3;
            }
            acc = acc.wrapping_add(a + b + c);
            let line = lines[i];
            if reads {
                // SAFETY: `line` and the ring's offsets are inside the region; a prefetch
                // is only a hint.
                unsafe {
                    #[cfg(target_arch = "x86_64")]
                    std::arch::x86_64::_mm_prefetch(
                        self.ptr.add(line).cast::<i8>(),
                        std::arch::x86_64::_MM_HINT_T0,
                    );
                    acc = acc.wrapping_add(u64::from(self.ptr.add(ring[i & 15]).read()));
                }
                ring[i & 15] = line;
            }
            std::hint::black_box(&mut acc);
        }
        start.elapsed().as_secs_f64() * 1e9 / READS as f64
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the allocation made in `new`, with its layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, Region::layout(self.bytes)) };
    }
}
