//! The transposition table: a fixed number of slots indexed by the Zobrist key, always-replace
//! except that a deeper entry for the same position survives a shallower one.
//!
//! The table is allocated (and therefore empty) at the start of every search, so a fixed-depth
//! search never sees results of an earlier one and stays reproducible.

use crate::chess_move::Move;

/// How a stored score relates to the true value of the position.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Bound {
    /// The score is exact (a PV node).
    Exact,
    /// The true value is at least the score (a fail-high).
    Lower,
    /// The true value is at most the score (a fail-low).
    Upper,
}

/// One slot: the full key guards against index collisions.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Entry {
    pub key: u64,
    pub best_move: Option<Move>,
    pub score: i32,
    pub depth: i32,
    pub bound: Bound,
}

/// Bytes per slot for sizing the table. A constant rather than `size_of`, so that the number of
/// slots (and with it the node count of a search) does not depend on how a compiler lays out
/// [`Entry`]; it matches the layout of current compilers.
const SLOT_BYTES: usize = 24;

/// A fixed-size table of [`Entry`] slots.
pub(crate) struct TranspositionTable {
    slots: Vec<Option<Entry>>,
}

impl TranspositionTable {
    /// A table that uses about `bytes` of memory (at least one slot).
    pub fn with_bytes(bytes: usize) -> TranspositionTable {
        let count = (bytes / SLOT_BYTES).max(1);
        TranspositionTable {
            slots: vec![None; count],
        }
    }

    fn index(&self, key: u64) -> usize {
        // Multiply-shift maps the key onto 0..len without the bias of a modulo on the low bits.
        ((key as u128 * self.slots.len() as u128) >> 64) as usize
    }

    /// The entry stored for `key`, if the slot holds that position.
    pub fn probe(&self, key: u64) -> Option<Entry> {
        self.slots[self.index(key)].filter(|e| e.key == key)
    }

    /// Stores an entry, keeping a deeper result for the same position.
    pub fn store(&mut self, entry: Entry) {
        let i = self.index(entry.key);
        if let Some(old) = self.slots[i]
            && old.key == entry.key
            && old.depth > entry.depth
            && entry.bound != Bound::Exact
        {
            return;
        }
        self.slots[i] = Some(entry);
    }
}
