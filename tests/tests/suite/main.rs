//! The integration tests: real `serve`, `run` and `c960-worker` processes on 127.0.0.1 (port 0), real SQLite files and PostgreSQL, real engines.
//!
//! One test binary for the crate (ripgrep's layout): each file of this folder is a module, so
//! CI builds and links one binary instead of one per file. Run one file's tests with a filter:
//! `cargo test --test suite FILE::`.

mod adversary;
mod analysis;
mod backups;
mod balance_tables;
mod batch;
mod big_submissions;
mod boinc;
mod boinc_client;
mod boinc_limits;
mod boinc_protocol;
mod campaigns;
mod cli;
mod crash_resume;
mod devtools;
mod exports;
mod family;
mod family_pages;
mod first_hour;
mod flood;
mod full_disk;
mod hardening;
mod hardening_figures;
mod hostile_text;
mod lying_worker;
mod main_job;
mod malformed;
mod metrics;
mod overhead;
mod packaging;
mod pages;
mod position_rows;
mod positions;
mod quiet_defaults;
mod rust_source;
mod scale;
mod scale_out;
mod security;
mod selfplay;
mod shuffle_index;
mod soak;
mod split;
mod throughput;
mod tidy;
mod tidy_errors;
mod tidy_sql;
mod tls;
mod upgrades;
mod versions;
mod volunteer;
mod worker_killed;
