//! c960-compute: what a workunit computes, shared by the volunteer's worker and the coordinator's
//! own checks (which recompute results with the same code). Perft goes root move by root move with
//! the engine of `c960-common`; analysis uses the built-in searcher or a UCI engine run as a
//! process (never linked); self-play plays games with either.
//!
//! Layers: `c960-common` (pure chess and wire types) → this crate (computation, engine
//! processes) → `c960-worker` (protocol client, work loop) and `c960-coordinator` (checks).

#![warn(missing_docs)]

pub mod compute;
pub mod engine;
pub mod error;
pub mod selfplay;
pub mod uci_engine;

pub use compute::{UciSlot, compute, compute_any, compute_with, root_position};
pub use error::ComputeError;
