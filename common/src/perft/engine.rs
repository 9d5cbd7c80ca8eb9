//! [`PerftEngine`]: deep perft with threads and a shared [`PerftTable`].

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::{Kernel, MAX_MOVES, PerftOptions, PerftTable, perft_with};
use crate::chess_move::Move;
use crate::movegen::ChildMoveCounter;
use crate::position::Position;
use crate::types::Role;
use crate::zobrist::ZobristKey;

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
    ///
    /// # Panics
    ///
    /// If `depth` exceeds [`MAX_DEPTH`](super::MAX_DEPTH) (callers check it where it is input).
    pub fn perft(&self, pos: &Position, depth: u32) -> u64 {
        assert!(
            depth <= super::MAX_DEPTH,
            "perft depth {depth} over the maximum"
        );
        if depth <= 1 || (self.options.threads == 1 && self.table.is_none()) {
            return perft_with(self.kernel, pos, depth);
        }
        self.divide(pos, depth).iter().map(|(_, n)| n).sum()
    }

    /// Counts per root move, in generation order.
    ///
    /// # Panics
    ///
    /// If `depth` exceeds [`MAX_DEPTH`](super::MAX_DEPTH).
    pub fn divide(&self, pos: &Position, depth: u32) -> Vec<(Move, u64)> {
        assert!(
            depth <= super::MAX_DEPTH,
            "perft depth {depth} over the maximum"
        );
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
        if let Some(table) = &self.table {
            table.reserve_leaf_parents(expected_leaf_parents(depth));
        }
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

/// About how many distinct positions with two plies left a perft of `depth` from a start
/// position counts: the distinct positions `depth - 2` plies deep, 96,400,068 at ply 7 of
/// chess and about ten times more per ply (9,417,681 at ply 6, 822,518 at ply 5).
fn expected_leaf_parents(depth: u32) -> u64 {
    let mut n: u64 = 96_400_068;
    for _ in depth..9 {
        n /= 10;
    }
    for _ in 9..depth.min(16) {
        n = n.saturating_mul(10);
    }
    n
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

/// Children made, prefetched and probed at a time by a node with four or more plies left.
/// Small enough for a frame of a few KiB (a 256-child array made every call probe seven stack
/// pages), large enough that a child's bucket has arrived by the time it is probed.
const CHUNK: usize = 32;

/// A leaf parent in the pipeline of a node with four plies left: its key (remaining depth
/// included) and the move from its parent; `made` when the move's key needed the child, which
/// was then made at once.
#[derive(Clone, Copy)]
struct PendingLeafParent {
    key: ZobristKey,
    m: Move,
    role: Role,
    made: bool,
}

/// Defines a perft recursion that stores subtree counts in a [`PerftTable`]; see
/// `define_perft_bulk` (in `perft/mod.rs`) for why this is a macro.
///
/// The table's memory latency is the cost to hide: nearly every probe misses the caches, and
/// on a shared machine a random access takes hundreds of nanoseconds. So a node makes its
/// children and prefetches their buckets before it probes any of them, and the nodes with three
/// plies left (whose children, the leaves' parents, are the most probed entries) are worked in
/// a pipeline: a node with four plies left makes the children of its next missed child,
/// prefetching their buckets, one by one as it counts the children of the previous one. Each
/// bucket then has a whole sibling's work to arrive, and the prefetches are spread out: issued
/// in a burst, two dozen of them exhausted the core's outstanding misses and stalled (a fifth
/// of perft(9)'s time in a profile). Leaf parents (two plies left) are counted in place with
/// the fused leaf-parent count, never entered as a call of their own. A leaf parent is keyed
/// from its parent and the move (`Position::key_after`) and made only if its probe misses: six
/// in ten are found in the table at depth 9, and making them cost a twentieth of the time.
///
/// `$name(pos, depth)` probes, counts on a miss and stores; `$interior` counts a node with three
/// or more plies left whose own probe missed; `$leaf_parent` probes, counts and stores a node
/// with two plies left.
macro_rules! define_perft_hashed {
    ($(#[$attr:meta])* fn $name:ident, $interior:ident, $leaf_parent:ident, $pending_leaf_parent:ident, $pext:literal) => {
        $(#[$attr])*
        fn $name(pos: &Position, depth: u32, table: &PerftTable) -> u64 {
            if depth <= 1 {
                return if depth == 0 { 1 } else { pos.count_moves_with::<$pext>() };
            }
            if depth == 2 {
                return $leaf_parent(pos, table);
            }
            let key = pos.hash128() ^ pos.zobrist_keys().depth[depth as usize & 63];
            if let Some(n) = table.probe(key, depth) {
                return n;
            }
            let nodes = $interior(pos, depth, table);
            table.store(key, depth, nodes);
            nodes
        }

        $(#[$attr])*
        #[inline]
        fn $leaf_parent(pos: &Position, table: &PerftTable) -> u64 {
            let key = pos.hash128() ^ pos.zobrist_keys().depth[2];
            if let Some(n) = table.probe(key, 2) {
                return n;
            }
            let nodes = count_leaf_parent!(pos, $pext);
            table.store(key, 2, nodes);
            nodes
        }

        /// A leaf parent from the pipeline: probed with its key, made from `parent` only
        /// when the table does not have it.
        ///
        /// # Safety
        /// `made` must hold the leaf parent if `pending.made`.
        $(#[$attr])*
        #[inline]
        unsafe fn $pending_leaf_parent(
            pending: &PendingLeafParent,
            parent: &Position,
            made: &MaybeUninit<Position>,
            table: &PerftTable,
        ) -> u64 {
            if let Some(n) = table.probe(pending.key, 2) {
                return n;
            }
            let unmade;
            let pos: &Position = if pending.made {
                // SAFETY: the caller wrote it.
                unsafe { made.assume_init_ref() }
            } else {
                unmade = parent.play_unhashed::<$pext>(pending.m, pending.role);
                &unmade
            };
            let nodes = count_leaf_parent!(pos, $pext);
            table.store(pending.key, 2, nodes);
            nodes
        }

        $(#[$attr])*
        fn $interior(pos: &Position, depth: u32, table: &PerftTable) -> u64 {
            let child_depth = depth - 1;
            let depth_key = pos.zobrist_keys().depth[child_depth as usize & 63];
            let mut moves = [const { MaybeUninit::<(Move, Role)>::uninit() }; MAX_MOVES];
            let moves = collect_moves!(pos, moves, $pext);
            if depth == 3 {
                let mut children = [const { MaybeUninit::<Position>::uninit() }; MAX_MOVES];
                for (slot, &(m, role)) in children.iter_mut().zip(moves) {
                    let child = pos.play_with_role::<$pext>(m, role);
                    table.prefetch(child.hash128() ^ depth_key, 2);
                    slot.write(child);
                }
                // SAFETY: the first `moves.len()` children were written just above.
                let children = unsafe { init_slice(&children, moves.len()) };
                return children.iter().map(|child| $leaf_parent(child, table)).sum();
            }
            // The pipeline of children with three plies left: `ready` holds the leaf parents of
            // the previous one (`ready_parent`; how many is in `pending` with its key),
            // `filling` receives the next one's. A leaf parent is keyed without being made
            // (most are found in the table); the few moves whose key needs the child are made
            // at once.
            let mut first = [const { MaybeUninit::<PendingLeafParent>::uninit() }; MAX_MOVES];
            let mut second = [const { MaybeUninit::<PendingLeafParent>::uninit() }; MAX_MOVES];
            let mut first_made = [const { MaybeUninit::<Position>::uninit() }; MAX_MOVES];
            let mut second_made = [const { MaybeUninit::<Position>::uninit() }; MAX_MOVES];
            let (mut filling, mut ready) = (&mut first, &mut second);
            let (mut filling_made, mut ready_made) = (&mut first_made, &mut second_made);
            let mut ready_parent = MaybeUninit::<Position>::uninit();
            let mut pending: Option<(ZobristKey, usize)> = None;
            let grandchild_key = pos.zobrist_keys().depth[2];
            let mut nodes = 0;
            for chunk in moves.chunks(CHUNK) {
                let mut children = [const { MaybeUninit::<Position>::uninit() }; CHUNK];
                for (slot, &(m, role)) in children.iter_mut().zip(chunk) {
                    let child = pos.play_with_role::<$pext>(m, role);
                    table.prefetch(child.hash128() ^ depth_key, child_depth);
                    slot.write(child);
                }
                // SAFETY: the first `chunk.len()` children were written just above.
                for child in unsafe { init_slice(&children, chunk.len()) } {
                    let key = child.hash128() ^ depth_key;
                    if let Some(n) = table.probe(key, child_depth) {
                        nodes += n;
                    } else if child_depth > 3 {
                        let n = $interior(child, child_depth, table);
                        table.store(key, child_depth, n);
                        nodes += n;
                    } else {
                        let mut grand = [const { MaybeUninit::<(Move, Role)>::uninit() }; MAX_MOVES];
                        let grand = collect_moves!(child, grand, $pext);
                        let previous = pending.map_or(0, |(_, made)| made);
                        let mut counted = 0;
                        for k in 0..grand.len().max(previous) {
                            if let Some(&(m, role)) = grand.get(k) {
                                let (key, made) = match child.key_after(m, role) {
                                    Some(key) => (key ^ grandchild_key, false),
                                    None => {
                                        let g = filling_made[k]
                                            .write(child.play_with_role::<$pext>(m, role));
                                        (g.hash128() ^ grandchild_key, true)
                                    }
                                };
                                table.prefetch(key, 2);
                                filling[k].write(PendingLeafParent { key, m, role, made });
                            }
                            if k < previous {
                                // SAFETY: the previous child's first `previous` leaf parents
                                // were written into `ready` (and the made ones into
                                // `ready_made`), and that child into `ready_parent`.
                                counted += unsafe {
                                    $pending_leaf_parent(
                                        ready[k].assume_init_ref(),
                                        ready_parent.assume_init_ref(),
                                        &ready_made[k],
                                        table,
                                    )
                                };
                            }
                        }
                        if let Some((key, _)) = pending.replace((key, grand.len())) {
                            table.store(key, 3, counted);
                            nodes += counted;
                        }
                        std::mem::swap(&mut filling, &mut ready);
                        std::mem::swap(&mut filling_made, &mut ready_made);
                        ready_parent.write(*child);
                    }
                }
            }
            if let Some((key, made)) = pending {
                // SAFETY: the last swap left the last one's `made` leaf parents in `ready`.
                let counted: u64 = unsafe { init_slice(ready, made) }
                    .iter()
                    .zip(ready_made.iter())
                    // SAFETY: as in the pipeline: their made ones are in `ready_made`, their
                    // parent in `ready_parent`.
                    .map(|(p, made)| unsafe {
                        $pending_leaf_parent(p, ready_parent.assume_init_ref(), made, table)
                    })
                    .sum();
                table.store(key, 3, counted);
                nodes += counted;
            }
            nodes
        }
    };
}

/// The legal moves of `$pos` with the role of each moving piece, written into `$buffer` (an
/// array of `MaybeUninit<(Move, Role)>`), as a slice.
macro_rules! collect_moves {
    ($pos:expr, $buffer:ident, $pext:literal) => {{
        let mut count = 0;
        $pos.generate_with::<$pext>(&mut |batch: crate::movegen::MoveBatch| {
            batch.for_each(|m| {
                $buffer[count].write((m, batch.role));
                count += 1;
            });
        });
        // SAFETY: the first `count` moves were written just above.
        unsafe { init_slice(&$buffer, count) }
    }};
}

/// The first `len` elements of `items`.
///
/// # Safety
/// They must have been written.
#[inline(always)]
unsafe fn init_slice<T>(items: &[MaybeUninit<T>], len: usize) -> &[T] {
    // SAFETY: the caller vouches that the first `len` elements are initialised, and
    // `MaybeUninit<T>` has the layout of `T`.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<T>(), len) }
}

define_perft_hashed!(fn perft_hashed_portable, interior_portable, leaf_parent_portable, pending_leaf_parent_portable, false);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Popcnt`].
    #[target_feature(enable = "popcnt")]
    fn perft_hashed_popcnt, interior_popcnt, leaf_parent_popcnt, pending_leaf_parent_popcnt, false
);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Bmi1`].
    #[target_feature(enable = "popcnt,bmi1")]
    fn perft_hashed_bmi1, interior_bmi1, leaf_parent_bmi1, pending_leaf_parent_bmi1, false
);

#[cfg(target_arch = "x86_64")]
define_perft_hashed!(
    /// The hashed recursion for [`Kernel::Bmi2`].
    #[target_feature(enable = "popcnt,bmi1,bmi2,avx2")]
    fn perft_hashed_bmi2, interior_bmi2, leaf_parent_bmi2, pending_leaf_parent_bmi2, true
);
