//! BOINC project side (issue 33): the coordinator as a project the stock BOINC client attaches
//! to (docs/boinc-design.md).
//!
//! - [`signing`]: the code-signing key and the key and signature texts the client checks.

pub mod signing;
