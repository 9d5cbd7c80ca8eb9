//! The adversary suite: a real coordinator on 127.0.0.1, real honest workers (the in-process
//! `c960-worker` runner) and scripted malicious clients registered as separate workers through
//! the real HTTP API. Liars collude (they all return the same wrong, self-consistent result with
//! a correctly computed digest), answer at once or with a delay, lie on a fraction of units,
//! only on units whose answer is not public, or only once trusted; sybils register many
//! identities from one address block and try to hoard leases.
//!
//! Every scenario asserts the integrity targets: no wrong value in the table, no honest worker
//! quarantined. The quick scenarios run in the default test run; `full_figures_at_10_30_50_
//! percent_liars` (ignored, release mode, `.ci/run` runs it) prints the figures recorded in
//! `docs/security-results.md`.

mod client;
mod disputes;
mod figures;
mod harness;
mod liar;
mod liars;
mod sybils;
