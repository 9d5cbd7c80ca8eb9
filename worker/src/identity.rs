//! The worker's identity file: the id and API token the coordinator gave at registration, kept
//! so that a restarted worker is the same worker (its votes and leases stay its own). The file
//! is a secret: it is written readable by its owner only (on Unix).

use std::path::{Path, PathBuf};

use c960_common::wire::WorkerAuth;
use serde::{Deserialize, Serialize};

/// What the state file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The coordinator this identity belongs to.
    pub server: String,
    /// Worker id.
    pub worker_id: u64,
    /// API token (`<id>.<secret>`).
    pub token: String,
}

impl Identity {
    /// The credentials to send.
    pub fn auth(&self) -> WorkerAuth {
        WorkerAuth {
            worker_id: self.worker_id,
            token: self.token.clone(),
        }
    }
}

/// The default state file: `$XDG_STATE_HOME/c960/worker.json`, else `~/.local/state/c960/worker.json`,
/// else `c960-worker.json` in the current directory.
pub fn default_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("c960/worker.json");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/state/c960/worker.json");
    }
    PathBuf::from("c960-worker.json")
}

/// Loads the identity for `server`; `None` if the file is missing or for another server.
pub fn load(path: &Path, server: &str) -> anyhow::Result<Option<Identity>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    };
    // A protocol-1 file (with a `key`, no `token`) does not parse: treat it as absent, so the
    // worker registers afresh rather than refusing to start.
    let id: Identity = match serde_json::from_str(&text) {
        Ok(id) => id,
        Err(_) if text.contains("\"key\"") && !text.contains("\"token\"") => return Ok(None),
        Err(e) => anyhow::bail!("{} is not a worker state file: {e}", path.display()),
    };
    Ok((id.server == server).then_some(id))
}

/// Saves the identity atomically (write to a temporary file, then rename), so a crash never
/// leaves a half-written file that would lose the identity.
pub fn save(path: &Path, id: &Identity) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(id)?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_other_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/w.json");
        assert_eq!(load(&path, "http://a").unwrap(), None);
        let id = Identity {
            server: "http://a".into(),
            worker_id: 3,
            token: "3.k".into(),
        };
        save(&path, &id).unwrap();
        assert_eq!(load(&path, "http://a").unwrap(), Some(id));
        assert_eq!(load(&path, "http://b").unwrap(), None);
        std::fs::write(&path, "nonsense").unwrap();
        assert!(load(&path, "http://a").is_err());
    }
}
