//! c960-compute: what a workunit computes, shared by the volunteer's worker and the coordinator's
//! own checks (which recompute results with the same code). Perft goes root move by root move with
//! the engine of `c960-common`; analysis uses the built-in searcher or a UCI engine run as a
//! process (never linked); self-play plays games with either.
//!
//! Below both programs it also holds what they share about themselves: the build's identity
//! (`build_info`) and the packaging files made from their command lines (`install_files`).
//!
//! Layers: `c960-common` (pure chess and wire types) → this crate (computation, engine
//! processes) → `c960-worker` (protocol client, work loop) and `c960-coordinator` (checks).

#![warn(missing_docs)]

pub mod build_info;
pub mod compute;
pub mod engine;
pub mod error;
pub mod install_files;
pub mod selfplay;
pub mod stdout;
pub mod uci_engine;

pub use compute::{UciSlot, compute, compute_any, compute_with, root_position};
pub use error::ComputeError;
