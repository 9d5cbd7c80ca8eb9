//! c960-coordinator: hands out Chess960 workunits — perft of a start or a split sub-position,
//! analysis searches, self-play games — over HTTP and to stock BOINC clients, and accepts a value
//! only when independent, anchored replicas agree (BOINC's quorum).
//!
//! The rooms, each a floor of the architecture (ARCHITECTURE.md; the tidy tests keep imports
//! running down the floors):
//!
//! - [`model`]: the vocabulary — records, states, the store's error. Imports nothing of the
//!   coordinator.
//! - [`work`]: the pure rules of the work — campaign plans and their workunits, the
//!   transitioner, hand-out, validation, a result's verdict, split assembly, sizing, why work
//!   waits.
//! - [`integrity`]: the pure rules against hostile volunteers (trust, probation, audits,
//!   labels, secrets, enrolment tokens), and the coordinator's own checker.
//! - [`store`]: everything persistent behind the [`store::Store`] trait, on SQLite or
//!   PostgreSQL.
//! - [`explorer`]: the position explorer's data — every start with its published values, the
//!   index's sorting and search (pure).
//! - [`export`]: the tables as CSV, JSON, PGN and reports.
//! - [`net`]: the front doors — the HTTP API and pages ([`net::api`]), BOINC's protocol
//!   ([`net::boinc`]), connections, TLS, proxies and metrics.
//! - [`clock`]: the wall clock; `run`: the one-machine main job.

#![warn(missing_docs)]

pub mod clock;
pub mod explorer;
pub mod export;
pub mod integrity;
pub mod model;
pub mod net;
#[cfg(feature = "run")]
pub mod run;
pub mod store;
pub mod work;
