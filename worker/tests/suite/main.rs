//! c960-worker's command line as a real process, and a real Stockfish over UCI.
//!
//! One test binary for the crate (ripgrep's layout): each file of this folder is a module, so
//! CI builds and links one binary instead of one per file. Run one file's tests with a filter:
//! `cargo test --test suite FILE::`.

mod analyse;
mod boinc_app;
mod cli;
mod cli_family;
