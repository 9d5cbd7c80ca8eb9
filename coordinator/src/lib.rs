//! c960-coordinator: hands out Chess960 perft workunits over HTTP and accepts a value only when
//! a quorum of independent replicas agree (BOINC's model).
//!
//! - [`store`]: everything persistent, behind the [`store::Store`] trait (SQLite implementation).
//! - [`scheduler`]: the transitioner and leasing rules, pure functions.
//! - [`validator`]: quorum by digest and result sanity checks, pure functions.
//! - [`http`]: the axum router ([`http::app`]) with thin handlers and the one error type.
//! - [`auth`]: enrolment, worker API tokens, the admin token; [`enrolment`]: per-volunteer
//!   enrolment tokens.
//! - [`limits`]: rate limits and request timeouts.
//! - [`trust`]: the integrity rules against colluding sybils (trust, checks, plausibility,
//!   address blocks), pure functions; [`known`]: the public known answers;
//!   [`checker`]: the coordinator's own checks, off the async threads.
//! - [`quarantine`]: voiding a caught worker's results and re-verifying what it validated.
//! - [`admin`]: admin endpoints (campaigns, bans, raw results).
//! - [`tls`]: HTTPS with rustls.
//! - [`conn`]: `serve`'s connection loop: caps per address and in all, header and idle timeouts.
//! - [`export`]: the table as CSV or JSON.
//! - [`assembly`]: split campaigns' per-position totals and the reference/OEIS checks.
//! - [`pages`]: the public web pages (maud) and the live JSON they poll.
//! - [`reads`]: the pages' read-only store queries (leaderboard, worker history).
//! - [`metrics`]: Prometheus metrics, `/healthz`, `/readyz`, request logging.
//! - [`hygiene`]: gzip, CORS, JSON 405s.
//! - [`run`]: the one-machine main job: coordinator + in-process workers over 127.0.0.1.

#![warn(missing_docs)]

pub mod admin;
pub mod assembly;
pub mod auth;
pub mod campaign;
pub mod checker;
pub mod conn;
pub mod enrolment;
pub mod export;
pub mod http;
pub mod hygiene;
pub mod known;
pub mod limits;
pub mod metrics;
pub mod pages;
pub mod quarantine;
pub mod reads;
pub mod run;
pub mod scheduler;
pub mod stall;
pub mod store;
pub mod tls;
pub mod trust;
pub mod validator;
