//! The worker's state file: the id and API token each coordinator gave at registration, kept
//! so that a restarted worker is the same worker there (its votes and leases stay its own). The
//! file is a secret: it is written readable by its owner only (on Unix).
//!
//! One identity per coordinator: the file keeps an identity for each server URL the worker has
//! registered with, keyed by the URL normalised ([`server_key`]: scheme and host in lower case,
//! the scheme's default port left out, no trailing slash), so a worker pointed at a second
//! coordinator registers there and keeps the first identity beside it; back on the first it is
//! the first worker again, with its results and credit. The format is
//! `{"identities": [{"server", "worker_id", "token", "results", "nodes"}, …]}`. An older file
//! held one identity as the whole object: it is read as a file of that one identity (which
//! belongs to the server it names; one without a server is adopted by the first server it is
//! used with) and written in the new format at the next save.
//!
//! One identity belongs to one running worker: a running worker holds an advisory lock on
//! `<state file>.lock` (the state file itself is replaced by rename on every save, so it cannot
//! carry the lock). A second worker started on the same state file finds it locked and takes
//! the next free instance file instead (`worker-2.json`, `worker-3.json`, …), registering as a
//! worker of its own: two processes never share an identity, so a quorum of two is never
//! blocked by "both replicas from the same worker". A worker takes the first free instance
//! file that holds an identity for its coordinator, else the first free one ([`claim`]), so the
//! instances keep their identities per coordinator too.

use std::fs::File;
use std::path::{Path, PathBuf};

use c960_common::wire::WorkerAuth;
use serde::{Deserialize, Serialize};

/// One identity: who this worker is at one coordinator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The coordinator this identity belongs to, as [`server_key`] writes it; empty only in
    /// an old file that named none (adopted by the first server it is used with).
    #[serde(default)]
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

/// A coordinator's URL as the state file keys it: `scheme://host[:port][/path]`, scheme and
/// host in lower case, the scheme's default port left out, no trailing slash, no query. So
/// `HTTP://Example.org:80/` and `http://example.org` are one coordinator.
pub fn server_key(url: &str) -> String {
    let trimmed = url.trim();
    match reqwest::Url::parse(trimmed) {
        Ok(u) if u.has_host() => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            format!(
                "{}://{}{port}{}",
                u.scheme(),
                u.host_str().unwrap_or_default(),
                u.path().trim_end_matches('/')
            )
        }
        _ => trimmed.trim_end_matches('/').to_ascii_lowercase(),
    }
}

/// Everything a state file holds: one identity per coordinator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFile {
    /// The identities, at most one per server key, in the order they were registered.
    pub identities: Vec<Identity>,
}

impl StateFile {
    /// Reads a state file; a missing file is an empty one. An old file of one identity is read
    /// as a file of that identity; a protocol-1 file (a `key`, no `token`) as an empty one, so
    /// the worker registers afresh rather than refusing to start.
    pub fn read(path: &Path) -> anyhow::Result<StateFile> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(StateFile::default()),
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        };
        StateFile::parse(&text)
            .map_err(|e| anyhow::anyhow!("{} is not a worker state file: {e}", path.display()))
    }

    /// The state file in `text`, in the current format or an older one (see [`StateFile::read`]).
    pub fn parse(text: &str) -> Result<StateFile, String> {
        /// Which fields the top-level object has (parsed straight from the text: a
        /// `serde_json::Value` would turn nodes beyond `u64` into floats).
        #[derive(Deserialize)]
        struct Shape {
            identities: Option<serde::de::IgnoredAny>,
            key: Option<serde::de::IgnoredAny>,
            token: Option<serde::de::IgnoredAny>,
        }
        let shape: Shape = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut file = if shape.identities.is_some() {
            serde_json::from_str::<StateFile>(text).map_err(|e| e.to_string())?
        } else if shape.key.is_some() && shape.token.is_none() {
            StateFile::default()
        } else {
            let one: Identity = serde_json::from_str(text).map_err(|e| e.to_string())?;
            StateFile {
                identities: vec![one],
            }
        };
        for id in &mut file.identities {
            if !id.server.is_empty() {
                id.server = server_key(&id.server);
            }
        }
        Ok(file)
    }

    /// The identity for `server` (any spelling of its URL). An identity that names no server
    /// (from an old file) is adopted: it becomes `server`'s, here and at the next save.
    pub fn for_server(&mut self, server: &str) -> Option<&Identity> {
        let key = server_key(server);
        let at = match self.identities.iter().position(|id| id.server == key) {
            Some(i) => i,
            None => {
                let i = self.identities.iter().position(|id| id.server.is_empty())?;
                self.identities[i].server = key;
                i
            }
        };
        Some(&self.identities[at])
    }

    /// Whether the file holds an identity for `server` (or one any server may adopt).
    pub fn has(&self, server: &str) -> bool {
        let key = server_key(server);
        self.identities
            .iter()
            .any(|id| id.server == key || id.server.is_empty())
    }

    /// Puts `id` in for its server, replacing that server's identity if there was one.
    pub fn put(&mut self, mut id: Identity) {
        id.server = server_key(&id.server);
        match self.identities.iter_mut().find(|o| o.server == id.server) {
            Some(slot) => *slot = id,
            None => self.identities.push(id),
        }
    }

    /// Writes the file atomically (a temporary file, then rename), so a crash never leaves a
    /// half-written file that would lose the identities.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self)?;
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
    /// Whether it was taken because it holds an identity for the worker's coordinator (else it
    /// was the first free instance).
    pub knows_server: bool,
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

/// Takes an instance of `path` that no running worker holds, and checks that its state file
/// can be written (before any registration, so a worker never registers an identity it cannot
/// keep): the first free instance that holds an identity for `server`, else the first free
/// instance. Fails with one line when the directory or file is not writable.
pub fn claim(path: &Path, server: &str) -> anyhow::Result<StateLock> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    // Instances that know this coordinator first (read without the lock: saves are atomic
    // renames, and a file is read again under the lock before it is used).
    for n in 1..=MAX_INSTANCES {
        let state = instance_path(path, n);
        if !state.exists() {
            continue;
        }
        if StateFile::read(&state).is_ok_and(|f| f.has(server))
            && let Some(lock) = try_claim(&state)?
        {
            return Ok(StateLock {
                knows_server: true,
                ..lock
            });
        }
    }
    for n in 1..=MAX_INSTANCES {
        if let Some(lock) = try_claim(&instance_path(path, n))? {
            return Ok(lock);
        }
    }
    anyhow::bail!(
        "{} and its {MAX_INSTANCES} instance files are all in use by running workers",
        path.display()
    )
}

/// Locks one instance's state file if no running worker holds it; `None` if one does.
fn try_claim(state: &Path) -> anyhow::Result<Option<StateLock>> {
    let lock = lock_path(state);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", lock.display()))?;
    match file.try_lock() {
        Ok(()) => {
            check_writable(state)?;
            Ok(Some(StateLock {
                path: state.to_path_buf(),
                knows_server: false,
                _file: file,
            }))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            anyhow::bail!("cannot lock {}: {e}", lock.display())
        }
    }
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

/// Loads the identity for `server`; `None` if the file is missing or holds none for it. An
/// old file's identity that names no server is adopted by `server` and saved so at once.
pub fn load(path: &Path, server: &str) -> anyhow::Result<Option<Identity>> {
    let mut file = StateFile::read(path)?;
    let before = file.clone();
    let found = file.for_server(server).cloned();
    if file != before {
        file.write(path)?;
    }
    Ok(found)
}

/// Saves `id` as the identity for its server, keeping the other coordinators' identities in
/// the file. The caller holds the file's [`StateLock`], so nobody else writes it meanwhile.
pub fn save(path: &Path, id: &Identity) -> anyhow::Result<()> {
    let mut file = StateFile::read(path)?;
    file.put(id.clone());
    file.write(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(server: &str, worker_id: u64) -> Identity {
        Identity {
            server: server.into(),
            worker_id,
            token: format!("{worker_id}.k"),
            results: 7,
            nodes: u128::from(u64::MAX) * 3,
        }
    }

    #[test]
    fn round_trip_and_other_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/w.json");
        assert_eq!(load(&path, "http://a").unwrap(), None);
        let a = id("http://a", 3);
        save(&path, &a).unwrap();
        assert_eq!(load(&path, "http://a").unwrap(), Some(a));
        assert_eq!(load(&path, "http://b").unwrap(), None);
        std::fs::write(&path, "nonsense").unwrap();
        assert!(load(&path, "http://a").is_err());
        std::fs::write(&path, "[1, 2]").unwrap();
        assert!(load(&path, "http://a").is_err());
    }

    #[test]
    fn server_urls_are_keyed_by_scheme_host_port_and_path() {
        for (url, key) in [
            ("http://127.0.0.1:8960", "http://127.0.0.1:8960"),
            ("http://127.0.0.1:8960/", "http://127.0.0.1:8960"),
            ("HTTP://Example.ORG:80/", "http://example.org"),
            ("https://example.org:443", "https://example.org"),
            (
                "https://example.org:8443/c960/",
                "https://example.org:8443/c960",
            ),
            ("http://[::1]:8960/", "http://[::1]:8960"),
        ] {
            assert_eq!(server_key(url), key, "{url}");
        }
        assert_ne!(server_key("http://a:1"), server_key("http://a:2"));
        assert_ne!(server_key("http://a"), server_key("https://a"));
    }

    #[test]
    fn each_coordinator_keeps_its_own_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        save(&path, &id("http://a:1", 3)).unwrap();
        save(&path, &id("http://b:1/", 9)).unwrap();
        // Any spelling of a URL finds its identity; the other is kept beside it.
        assert_eq!(load(&path, "HTTP://A:1/").unwrap().unwrap().worker_id, 3);
        assert_eq!(load(&path, "http://b:1").unwrap().unwrap().worker_id, 9);
        // A new registration with one coordinator replaces its identity only.
        save(&path, &id("http://a:1/", 4)).unwrap();
        let file = StateFile::read(&path).unwrap();
        let ids: Vec<(&str, u64)> = file
            .identities
            .iter()
            .map(|i| (i.server.as_str(), i.worker_id))
            .collect();
        assert_eq!(ids, [("http://a:1", 4), ("http://b:1", 9)]);
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["identities"][1]["token"], "9.k", "{text}");
        // Nodes beyond u64 are written as a JSON integer, exactly.
        let nodes = (u128::from(u64::MAX) * 3).to_string();
        assert!(text.contains(&format!("\"nodes\": {nodes}")), "{text}");
    }

    #[test]
    fn an_old_file_of_one_identity_is_read_and_kept_for_its_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        // The format before one identity per coordinator: the identity is the whole file.
        let old = r#"{"server": "http://a:8960/", "worker_id": 17, "token": "17.s", "results": 417, "nodes": 5}"#;
        std::fs::write(&path, old).unwrap();
        assert_eq!(load(&path, "http://b:8960").unwrap(), None);
        let a = load(&path, "http://a:8960").unwrap().unwrap();
        assert_eq!(
            (a.worker_id, a.token.as_str(), a.results),
            (17, "17.s", 417)
        );
        // Registering with another coordinator keeps the old identity beside the new one.
        save(&path, &id("http://b:8960", 2)).unwrap();
        assert_eq!(load(&path, "http://a:8960").unwrap(), Some(a));
        assert_eq!(load(&path, "http://b:8960").unwrap().unwrap().worker_id, 2);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("identities")
        );
    }

    #[test]
    fn an_old_identity_without_a_server_is_adopted_by_the_first_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        std::fs::write(&path, r#"{"worker_id": 5, "token": "5.s"}"#).unwrap();
        let first = load(&path, "http://a:1").unwrap().unwrap();
        assert_eq!((first.worker_id, first.server.as_str()), (5, "http://a:1"));
        // Adopted for good: written at once, and another coordinator does not get it.
        assert_eq!(load(&path, "http://b:1").unwrap(), None);
        assert_eq!(load(&path, "http://a:1").unwrap(), Some(first));
    }

    #[test]
    fn a_protocol_1_file_is_an_empty_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        std::fs::write(
            &path,
            r#"{"server": "http://a", "worker_id": 1, "key": "k"}"#,
        )
        .unwrap();
        assert_eq!(load(&path, "http://a").unwrap(), None);
        save(&path, &id("http://a", 2)).unwrap();
        assert_eq!(load(&path, "http://a").unwrap().unwrap().worker_id, 2);
    }

    #[test]
    fn a_worker_takes_the_free_instance_that_knows_its_coordinator() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c960/worker.json");
        // Two workers ran at once, one on each coordinator: worker.json knows a, worker-2 b.
        let first = claim(&path, "http://a").unwrap();
        let second = claim(&path, "http://b").unwrap();
        save(&first.path, &id("http://a", 1)).unwrap();
        save(&second.path, &id("http://b", 2)).unwrap();
        drop((first, second));
        // Alone on b, a worker takes worker-2.json (its identity there), not worker.json.
        let on_b = claim(&path, "http://b/").unwrap();
        assert_eq!(on_b.path, dir.path().join("c960/worker-2.json"));
        assert!(on_b.knows_server);
        // Meanwhile a worker on a takes worker.json, and a second one on a the next free file.
        let on_a = claim(&path, "http://a").unwrap();
        assert_eq!(on_a.path, path);
        let again_a = claim(&path, "http://a").unwrap();
        assert_eq!(again_a.path, dir.path().join("c960/worker-3.json"));
        assert!(!again_a.knows_server);
        // A coordinator nobody knows: the first free instance.
        drop(on_a);
        assert_eq!(claim(&path, "http://c").unwrap().path, path);
        drop((on_b, again_a));
    }

    #[test]
    fn a_held_state_file_gives_the_next_instance_and_is_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c960/worker.json");
        let first = claim(&path, "http://a").unwrap();
        assert_eq!(first.path, path);
        let second = claim(&path, "http://a").unwrap();
        assert_eq!(second.path, dir.path().join("c960/worker-2.json"));
        let third = claim(&path, "http://a").unwrap();
        assert_eq!(third.path, dir.path().join("c960/worker-3.json"));
        drop(second);
        assert_eq!(
            claim(&path, "http://a").unwrap().path,
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
        let err = claim(&ro.join("worker.json"), "http://a")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot write"), "{err}");
    }
}
