//! c960-coordinator: hands out Chess960 perft workunits over HTTP and accepts a value only when
//! a quorum of independent replicas agree (BOINC's model).
//!
//! - [`store`]: everything persistent, behind the [`store::Store`] trait (SQLite implementation).
//! - [`scheduler`]: the transitioner and leasing rules, pure functions.
//! - [`validator`]: quorum by digest and result sanity checks, pure functions.
//! - [`http`]: the axum router ([`http::app`]) with thin handlers and the one error type.
//! - [`export`]: the table as CSV or JSON.
//! - [`assembly`]: split campaigns' per-position totals and the reference/OEIS checks.
//! - [`run`]: the one-machine main job: coordinator + in-process workers over 127.0.0.1.

#![warn(missing_docs)]

pub mod assembly;
pub mod campaign;
pub mod export;
pub mod http;
pub mod run;
pub mod scheduler;
pub mod store;
pub mod validator;
