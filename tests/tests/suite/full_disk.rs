//! A full disk loses nothing (issue 55): `serve` with default flags keeps its SQLite store on a
//! small tmpfs this test mounts (it runs as root; `.ci/run` does), two default workers submit,
//! and the filesystem is filled to the last byte. Writes are refused with 503 `storage_full`
//! and a `Retry-After`, which the workers honour, keeping their results; reads and `/api/v1/status` still answer and say since when the disk is
//! full, the coordinator says so once at WARN (no ERROR per request or per check), the workers
//! keep their results; once space is freed the campaign completes, its table exact and the
//! store intact.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use c960_tests::ServeProcess;

use super::first_hour::{
    SECRET, assert_export_is_reference, coordinator, status, two_workers, wait_complete,
};

/// A tmpfs of `mib` MiB mounted on a temporary directory, unmounted when dropped.
pub(super) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts one; `None` (and says so) where this process may not mount, which fails under CI.
    pub(super) fn mount(mib: u32) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m"),
                "c960-full-disk",
            ])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            return Some(Tmpfs { dir });
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "cannot mount a tmpfs under CI: the full-disk test runs as root (.ci/run does)"
        );
        eprintln!(
            "\n\n*** SKIPPED: cannot mount a tmpfs (not root?); the full disk was NOT tested.\n"
        );
        None
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills the filesystem of `dir` to the last byte with the file `dir/filler`.
pub(super) fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    for chunk in [1 << 20, 4096, 1] {
        let zeros = vec![0u8; chunk];
        while f.write_all(&zeros).is_ok() {}
    }
    let _ = f.sync_all();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_with_retry_after_and_loses_nothing() {
    let Some(disk) = Tmpfs::mount(16) else {
        return;
    };
    c960_worker::client::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let db = disk.path().join("c960.sqlite");
    let log = dir.path().join("serve.log");
    let server = ServeProcess::start(
        &db,
        &["--enrol-secret", SECRET],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    coordinator(
        &[
            "campaign",
            "add",
            "--depth",
            "4",
            "--quorum",
            "2",
            "--positions",
            "0-959",
        ],
        &db,
    );
    let workers = two_workers(&server.url, dir.path(), "");
    let valid = |s: &serde_json::Value| s["campaigns"][0]["valid"].as_u64().unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while valid(&status(&server.url).await) < 50 {
        assert!(
            Instant::now() < until,
            "no progress before the disk filled: {}",
            std::fs::read_to_string(dir.path().join("w0.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let filler = fill(disk.path());
    // The next writes that need a page find none: the store notices, and says since when.
    let until = Instant::now() + Duration::from_secs(120);
    let full = loop {
        let s = status(&server.url).await;
        if !s["storage_full_since_ms"].is_null() {
            break s;
        }
        assert!(
            Instant::now() < until,
            "the coordinator never found its disk full: {}",
            s["campaigns"][0]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        valid(&full) < 960,
        "the campaign finished before the disk filled"
    );
    // Reads still answer: the table export of the campaign so far.
    let table = reqwest::get(format!(
        "{}/api/v1/campaigns/1/table?format=csv",
        server.url
    ))
    .await
    .unwrap();
    assert_eq!(table.status(), 200);
    // Nothing moves while the disk is full.
    let before = valid(&status(&server.url).await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(valid(&status(&server.url).await), before);

    // Space returns: the workers send what they kept, the campaign completes.
    std::fs::remove_file(&filler).unwrap();
    let took = wait_complete(&server.url, Duration::from_secs(240)).await;
    let after = status(&server.url).await;
    assert!(after["storage_full_since_ms"].is_null(), "{after}");
    drop(workers);
    drop(server);
    eprintln!(
        "full at {} of 960 valid; complete {took:.1?} after space returned",
        valid(&full)
    );

    let log = std::fs::read_to_string(&log).unwrap();
    let warnings = log.lines().filter(|l| l.contains("disk is full")).count();
    assert_eq!(warnings, 1, "said once at WARN:\n{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("WARN") && l.contains("storage_full") && l.contains("free")),
        "with the remedy:\n{log}"
    );
    assert!(
        !log.contains("ERROR"),
        "no ERROR per request or check:\n{log}"
    );
    assert!(log.contains("has space again"), "{log}");
    // The workers were refused with the code and kept their results for the Retry-After (30 s
    // and jitter), never gave one up.
    let workers_log: String = (0..2)
        .map(|i| std::fs::read_to_string(dir.path().join(format!("w{i}.log"))).unwrap())
        .collect();
    assert!(
        workers_log.lines().any(|l| l.contains("503 storage_full")
            && l.contains("coordinator's disk is full")
            && l.contains("retrying")
            && l.contains(" in 3")),
        "{workers_log}"
    );
    assert!(!workers_log.contains("not accepted"), "{workers_log}");
    assert_export_is_reference(&db, 4, 960);
    let check = Command::new("sqlite3")
        .arg(&db)
        .arg("PRAGMA integrity_check")
        .output();
    if let Ok(out) = check {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    }
}
