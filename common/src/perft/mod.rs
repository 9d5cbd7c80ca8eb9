//! Perft: counting the leaves of the legal move tree, the standard check of a move generator.
//!
//! [`perft`] and [`divide`] are the plain single-threaded counts. [`PerftEngine`] adds the two
//! things deep counts need: a shared lock-free hash table of subtree counts, and threads.

use crate::chess_move::Move;
use crate::movegen::ChildMoveCounter;
use crate::position::Position;
use crate::types::Role;

/// More than the most legal moves any position has (218).
const MAX_MOVES: usize = 256;

/// The deepest perft anything here counts: campaigns, workunits, `c960-worker perft` and
/// [`PerftEngine`]. A count of depth 20 from any real position would take longer than anyone
/// waits; the bound is there so that a typo or a hostile workunit (depth 200) is refused with an
/// error instead of exhausting a thread's stack in the recursion.
pub const MAX_DEPTH: u32 = 20;

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
        let nodes = std::cell::Cell::new(0u64);
        let mut slot = std::mem::MaybeUninit::uninit();
        let counter = ChildMoveCounter::new_in::<$pext>(&mut slot, pos);
        // One closure per role (`SinkByRole`): the generator calls each directly. Only pawns
        // (promotions, en passant) and the king (castling) have batches with special moves.
        macro_rules! each {
            ($role:expr, $pawn:literal, $specials:literal) => {
                |batch: crate::movegen::MoveBatch| {
                    let mut n = 0;
                    if !$specials || batch.is_normal() {
                        debug_assert!(batch.is_normal());
                        // The moves that change nothing the counter watches are counted with
                        // one popcount; the rest one by one.
                        let quiet = counter.quiet_targets::<$pawn>(&batch);
                        n += u64::from(quiet.count_ones()) * counter.unchanged();
                        for to in crate::types::bb::squares(batch.to & !quiet) {
                            let from = batch.normal_origin::<$pawn>(to);
                            n += counter.count_normal_move::<$pext>(pos, $role, from, to);
                        }
                    } else {
                        batch.for_each(|m| {
                            n += counter.count::<$pext>(&pos.play_unhashed::<$pext>(m, $role))
                        });
                    }
                    nodes.set(nodes.get() + n);
                }
            };
        }
        pos.generate_with::<$pext>(&mut crate::movegen::SinkByRole {
            pawn: each!(Role::Pawn, true, true),
            knight: each!(Role::Knight, false, false),
            bishop: each!(Role::Bishop, false, false),
            rook: each!(Role::Rook, false, false),
            queen: each!(Role::Queen, false, false),
            king: each!(Role::King, false, true),
        });
        nodes.get()
    }};
}

// After the macros, which the modules use.
mod engine;
mod table;

pub use engine::PerftEngine;
pub use table::PerftTable;

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
                // Normal moves made with their kind and piece known (no `Move` encoded and
                // decoded, the make's branches on them folded away), as at the leaves' parents.
                pos.generate_with::<$pext>(&mut |batch: crate::movegen::MoveBatch| {
                    if batch.is_normal() {
                        macro_rules! each {
                            ($role:expr, $pawn:literal) => {{
                                for to in crate::types::bb::squares(batch.to) {
                                    let from = batch.normal_origin::<$pawn>(to);
                                    let child = pos.play_normal_unhashed::<$pext>($role, from, to);
                                    nodes += $name(&child, depth - 1);
                                }
                            }};
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
                            nodes += $name(&pos.play_unhashed::<$pext>(m, batch.role), depth - 1)
                        });
                    }
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
