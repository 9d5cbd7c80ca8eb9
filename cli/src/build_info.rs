//! What this build is: the crate version, the git commit (found by `build.rs`; `unknown` in a
//! build without git) and the protocol it speaks. Both programs print it with `--version`; the
//! worker names it in its User-Agent ([`WorkerBuild::user_agent`]), the coordinator in
//! `/api/v1/status` and `/metrics`. The workspace's crates share one version and one commit.

use std::sync::LazyLock;

use c960_common::wire::{PROTOCOL_VERSION, WorkerBuild};

/// The crate version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The short git commit of the build, or `unknown`.
pub const COMMIT: &str = env!("C960_GIT_COMMIT");

/// This build, as the worker names it to a coordinator.
pub fn worker_build() -> WorkerBuild {
    WorkerBuild {
        version: VERSION.to_string(),
        commit: COMMIT.to_string(),
    }
}

/// The `--version` text after the program's name: `0.2.0 (commit 1a2b3c4d5e6f, protocol 5)`
/// (`'static`: clap keeps it).
pub fn version_line() -> &'static str {
    static LINE: LazyLock<String> =
        LazyLock::new(|| format!("{VERSION} (commit {COMMIT}, protocol {PROTOCOL_VERSION})"));
    &LINE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_names_version_commit_and_protocol() {
        let line = version_line();
        assert!(line.starts_with(env!("CARGO_PKG_VERSION")), "{line}");
        assert!(line.contains(&format!("commit {COMMIT}")), "{line}");
        assert!(
            line.contains(&format!("protocol {PROTOCOL_VERSION}")),
            "{line}"
        );
        assert!(!COMMIT.is_empty());
        let b = worker_build();
        assert_eq!(WorkerBuild::from_user_agent(&b.user_agent()), Some(b));
    }
}
