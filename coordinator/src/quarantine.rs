//! Quarantine: a worker caught lying (a failed check, or too many refused results) or banned by
//! the operator gets no more work, its pending results stop counting, and every workunit it
//! helped validate is re-verified without it. Losing a vote is no evidence and never
//! quarantines anyone (see [`crate::trust`]): an honest worker outvoted by colluding liars keeps
//! its standing.
//!
//! Re-verification reopens the workunit: the quarantined worker's result is voided (state
//! `error`, outcome `invalid`), the other results go back to ungraded (their workers' vote
//! counts are rolled back so the regrading does not count them twice), and the transitioner asks
//! for as many fresh replicas as the quorum needs. The honest results still vote, but the quorum
//! must now be reached without the quarantined worker (and, for perft, be anchored again: see
//! [`crate::scheduler::transition_anchored`]); a peer that had agreed with a lie loses its vote
//! in turn. Until then the table shows such a workunit as `reverifying`.
//!
//! The store runs the quarantine inside the transaction that found the evidence
//! (`store/sql/quarantine.rs`, the same on every backend), so a quarantine is all-or-nothing like every other state
//! change. This module holds the rules' documentation; their tests are in the store's
//! conformance suite (`store/conformance.rs`), run against every backend.
