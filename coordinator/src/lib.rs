//! c960-coordinator: hands out Chess960 perft workunits over HTTP and accepts a value only when
//! a quorum of independent replicas agree (BOINC's model).
//!
//! - [`store`]: everything persistent, behind the [`store::Store`] trait (`store/sqlite/`: the
//!   embedded SQLite backend).
//! - [`scheduler`]: the transitioner and leasing rules, pure functions; [`handout`]: the
//!   decisions of each step of handing out replicas (standing, room, same-party keys,
//!   deadlines), pure.
//! - [`validator`]: quorum by digest and result sanity checks, pure functions; [`judge`]: the
//!   verdict on a submitted result against its lease, and a request's settlements (pure).
//! - [`api`]: the HTTP side ([`api::app`]): state, error, extractors and layers at the bottom,
//!   one file per route group above them (worker protocol, admin, public reads, pages, health).
//! - [`trust`]: the integrity rules against colluding sybils (trust, checks, plausibility,
//!   address blocks), pure functions; [`known`]: the public known answers;
//!   [`checker`]: the coordinator's own checks, off the async threads.
//! - `store/sql/quarantine.rs`: voiding a caught worker's results and re-verifying what it validated.
//! - [`tls`]: HTTPS with rustls.
//! - [`conn`]: `serve`'s connection loop: caps per address and in all, header and idle timeouts.
//! - [`export`]: the table as CSV or JSON; [`self_play`]: self-play tables (score, interval,
//!   Elo-style White advantage) as CSV, JSON or PGN.
//! - [`assembly`]: split campaigns' per-position totals and the reference/OEIS checks.
//! - [`reads`]: the pages' read-only store queries (leaderboard, worker history).
//! - [`metrics`]: the Prometheus registry and the request-logging middleware.
//! - [`boinc`]: the project side of the stock BOINC client (issue 33): code signing.
//! - [`clock`]: the wall clock.
//! - [`run`]: the one-machine main job: coordinator + in-process workers over 127.0.0.1.

#![warn(missing_docs)]

pub mod api;
pub mod assembly;
pub mod audit;
pub mod boinc;
pub mod campaign;
pub mod checker;
pub mod clock;
pub mod conn;
pub mod enrolment;
pub mod export;
pub mod handout;
pub mod judge;
pub mod known;
pub mod label;
pub mod metrics;
pub mod model;
pub mod proxies;
pub mod reads;
#[cfg(feature = "run")]
pub mod run;
pub mod scheduler;
pub mod secrets;
pub mod self_play;
pub mod sizing;
pub mod stall;
pub mod store;
pub mod tls;
pub mod trust;
pub mod validator;
