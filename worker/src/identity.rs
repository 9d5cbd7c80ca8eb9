//! The worker's identity file: the id and API token the coordinator gave at registration, kept
//! so that a restarted worker is the same worker (its votes and leases stay its own). The file
//! is a secret: it is written readable by its owner only (on Unix).
//!
//! One identity belongs to one running worker: a running worker holds an advisory lock on
//! `<state file>.lock` (the state file itself is replaced by rename on every save, so it cannot
//! carry the lock). A second worker started on the same state file finds it locked and takes
//! the next free instance file instead (`worker-2.json`, `worker-3.json`, …), registering as a
//! worker of its own: two processes never share an identity, so a quorum of two is never
//! blocked by "both replicas from the same worker".

use std::fs::File;
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
    /// Results of this identity the coordinator accepted, over all sessions.
    #[serde(default)]
    pub results: u64,
    /// Nodes of those results.
    #[serde(default)]
    pub nodes: u128,
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

/// How many instance files a machine may use before `claim` gives up (one per running worker).
pub const MAX_INSTANCES: u32 = 256;

/// The lock a running worker holds on its state file; released when dropped (or when the
/// process ends, however it ends: the operating system drops advisory locks with the file).
#[derive(Debug)]
pub struct StateLock {
    /// The state file this lock guards.
    pub path: PathBuf,
    _file: File,
}

/// The `n`-th instance of a state file: `worker.json` itself for 1, `worker-2.json` for 2, ….
pub fn instance_path(path: &Path, n: u32) -> PathBuf {
    if n <= 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    path.with_file_name(name)
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// Takes the first instance of `path` that no running worker holds, and checks that its state
/// file can be written (before any registration, so a worker never registers an identity it
/// cannot keep). Fails with one line when the directory or file is not writable.
pub fn claim(path: &Path) -> anyhow::Result<StateLock> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    for n in 1..=MAX_INSTANCES {
        let state = instance_path(path, n);
        let lock = lock_path(&state);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", lock.display()))?;
        match file.try_lock() {
            Ok(()) => {
                check_writable(&state)?;
                return Ok(StateLock {
                    path: state,
                    _file: file,
                });
            }
            Err(std::fs::TryLockError::WouldBlock) => continue,
            Err(std::fs::TryLockError::Error(e)) => {
                anyhow::bail!("cannot lock {}: {e}", lock.display())
            }
        }
    }
    anyhow::bail!(
        "{} and its {MAX_INSTANCES} instance files are all in use by running workers",
        path.display()
    )
}

/// Checks that `path` can be saved: its temporary file can be created in the directory and an
/// existing state file can be opened for writing.
fn check_writable(path: &Path) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
    let _ = std::fs::remove_file(&tmp);
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
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
            results: 7,
            nodes: u128::from(u64::MAX) * 3,
        };
        save(&path, &id).unwrap();
        assert_eq!(load(&path, "http://a").unwrap(), Some(id));
        assert_eq!(load(&path, "http://b").unwrap(), None);
        std::fs::write(&path, "nonsense").unwrap();
        assert!(load(&path, "http://a").is_err());
    }

    #[test]
    fn a_held_state_file_gives_the_next_instance_and_is_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c960/worker.json");
        let first = claim(&path).unwrap();
        assert_eq!(first.path, path);
        let second = claim(&path).unwrap();
        assert_eq!(second.path, dir.path().join("c960/worker-2.json"));
        let third = claim(&path).unwrap();
        assert_eq!(third.path, dir.path().join("c960/worker-3.json"));
        drop(second);
        assert_eq!(
            claim(&path).unwrap().path,
            dir.path().join("c960/worker-2.json")
        );
        assert_eq!(instance_path(Path::new("w"), 4), Path::new("w-4"));
        drop(first);
        drop(third);
    }

    #[cfg(unix)]
    #[test]
    fn an_unwritable_directory_is_refused_before_registering() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).unwrap();
        // Root ignores permissions; the check only means something for other users.
        if std::fs::write(ro.join("probe"), b"").is_ok() {
            return;
        }
        let err = claim(&ro.join("worker.json")).unwrap_err().to_string();
        assert!(err.starts_with("cannot write"), "{err}");
    }
}
