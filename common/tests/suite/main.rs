//! c960-common's integration tests: reference tables, the differential oracle, properties, kernels, families, search, decoding.
//!
//! One test binary for the crate (ripgrep's layout): each file of this folder is a module, so
//! CI builds and links one binary instead of one per file. Run one file's tests with a filter:
//! `cargo test --test suite FILE::`.

mod common;

mod decode_fuzz;
mod deep_provenance;
mod differential;
mod draw;
mod family;
mod family_perft;
mod kernels;
mod perft_engine;
mod properties;
mod reference;
mod reference_deep;
mod search;
