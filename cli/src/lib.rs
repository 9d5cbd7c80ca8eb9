//! c960-cli: the plumbing both programs' command lines share (ripgrep's `grep-cli` is the
//! model), below them and beside the computation:
//!
//! - [`build_info`]: what this build is (version, git commit, protocol), for `--version`, the
//!   worker's User-Agent and the coordinator's status and metrics;
//! - [`stdout`]: output to a pipe whose reader may go away first ([`outln!`]);
//! - [`install_files`]: the man pages and shell completions made from a clap definition.

#![warn(missing_docs)]

pub mod build_info;
pub mod install_files;
pub mod stdout;
