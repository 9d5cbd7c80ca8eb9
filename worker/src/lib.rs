//! c960-worker as a library: the protocol client and the work loop, shared by the `c960-worker
//! work` command and by the in-process workers of `c960-coordinator run` (which therefore take the
//! same HTTP path as volunteers). What a workunit computes is `c960-compute`'s, shared with the
//! coordinator's checks.

#![warn(missing_docs)]

pub mod assignment;
pub mod backoff;
pub mod boinc_app;
pub mod client;
pub mod identity;
pub mod machine;
pub mod report;
pub mod runner;
pub mod summary;

/// The engine name reported with results.
pub const ENGINE_NAME: &str = "c960-common";
/// The engine version reported with results.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");
