//! Backups of a SQLite store, taken while `serve` runs, and their restore (issue 55).
//!
//! A copy is SQLite's `VACUUM INTO` on a read-only connection: one read transaction, so the
//! copy is the database as one commit left it, whatever `serve` writes meanwhile (WAL: the
//! copy never blocks it). It is written beside its destination under a temporary name,
//! checked (`PRAGMA integrity_check`, its schema version, the row counts it reports) and only
//! then renamed into place, so a copy under its final name is a checked one. The copy records
//! when it was taken (`backup_taken_ms` in its settings).
//!
//! A restore puts a checked copy in the database's place, moving what was there aside (never
//! deleting it) with its WAL files, which belong to the old database and would corrupt the new
//! one. What the coordinator accepted after the copy was taken is not in it and is earned again
//! from workers, never silently lost: a worker's result for a lease the copy does not know is
//! refused (`unknown_lease`) and the worker fetches again; a worker registered after the copy
//! is `unknown_worker` and registers again; the workunits the copy had in flight lapse at their
//! renewal deadline (their workers no longer renew them) and are handed out again.
//!
//! PostgreSQL stores are backed up with `pg_dump`/`pg_restore` (docs/operators.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use rusqlite::{Connection, OpenFlags};

use super::migrations::MIGRATIONS;

/// What a checked copy holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyReport {
    /// The copy.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Its schema version (migrations run).
    pub schema: u32,
    /// When it was taken (ms since the epoch), if it says.
    pub taken_ms: Option<i64>,
    /// Rows of the tables that hold the campaigns' work, in this order.
    pub rows: Vec<(&'static str, u64)>,
}

impl std::fmt::Display for CopyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|(table, n)| format!("{n} {table}"))
            .collect();
        write!(
            f,
            "{} ({:.1} MiB, schema {}): {}; integrity ok",
            self.path.display(),
            self.bytes as f64 / (1u64 << 20) as f64,
            self.schema,
            rows.join(", ")
        )
    }
}

/// The tables whose row counts a report gives.
const COUNTED: [&str; 5] = ["campaigns", "workunits", "results", "workers", "disputes"];

/// Checks a copy: it opens read-only, passes `PRAGMA integrity_check`, and its schema is one
/// this program knows.
pub fn check(copy: &Path) -> Result<CopyReport> {
    let c = Connection::open_with_flags(copy, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open {}", copy.display()))?;
    let verdict: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .with_context(|| format!("{} is not a SQLite database", copy.display()))?;
    if verdict != "ok" {
        bail!(
            "{} fails SQLite's integrity check: {verdict}",
            copy.display()
        );
    }
    let schema: u32 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if schema == 0 {
        bail!("{} is not a c960 database (schema 0)", copy.display());
    }
    if schema as usize > MIGRATIONS.len() {
        bail!(
            "{}: {}",
            copy.display(),
            super::migrations::newer_database(i64::from(schema), None)
        );
    }
    let mut rows = Vec::new();
    for table in COUNTED {
        let exists: bool = c.query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )?;
        if exists {
            let n: i64 = c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
            rows.push((table, n as u64));
        }
    }
    let taken_ms = c
        .query_row(
            "SELECT value FROM settings WHERE key = 'backup_taken_ms'",
            [],
            |r| r.get(0),
        )
        .ok();
    Ok(CopyReport {
        path: copy.to_path_buf(),
        bytes: std::fs::metadata(copy)?.len(),
        schema,
        taken_ms,
        rows,
    })
}

/// Where a copy goes: `out` itself, or in the directory `out` a file named for `now_ms`.
pub fn destination(out: &Path, now_ms: i64) -> PathBuf {
    if out.is_dir() {
        out.join(format!("c960-{}.sqlite", stamp(now_ms)))
    } else {
        out.to_path_buf()
    }
}

/// `YYYYMMDDTHHMMSSZ` of a time in ms since the epoch (UTC), which sorts as the times do.
fn stamp(ms: i64) -> String {
    let mut s: String = crate::clock::utc(ms)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == ' ')
        .map(|c| if c == ' ' { 'T' } else { c })
        .collect();
    s.push('Z');
    s
}

/// Takes a checked copy of the SQLite store `db` at `dest` (which must not exist), at `now_ms`.
pub fn backup(db: &Path, dest: &Path, now_ms: i64) -> Result<CopyReport> {
    if !db.is_file() {
        bail!("no database at {}", db.display());
    }
    if dest.exists() {
        bail!(
            "{} exists: a backup never overwrites a file",
            dest.display()
        );
    }
    let partial = with_suffix(dest, ".partial");
    let _ = std::fs::remove_file(&partial);
    let taken = (|| -> Result<()> {
        let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open {}", db.display()))?;
        c.busy_timeout(std::time::Duration::from_secs(30))?;
        let text = partial
            .to_str()
            .ok_or_else(|| anyhow!("{} is not UTF-8", partial.display()))?;
        c.execute("VACUUM INTO ?1", [text])
            .with_context(|| format!("cannot write {}", partial.display()))?;
        let copy = Connection::open(&partial)?;
        copy.execute(
            "INSERT INTO settings (key, value) VALUES ('backup_taken_ms', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [now_ms],
        )?;
        Ok(())
    })();
    let checked = taken.and_then(|()| check(&partial));
    match checked {
        Ok(mut report) => {
            std::fs::rename(&partial, dest)
                .with_context(|| format!("cannot rename to {}", dest.display()))?;
            report.path = dest.to_path_buf();
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// Deletes the oldest copies named as [`destination`] names them in `dir`, keeping `keep`.
/// Returns the deleted ones.
pub fn prune(dir: &Path, keep: usize) -> Result<Vec<PathBuf>> {
    let mut copies: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("c960-") && n.ends_with("Z.sqlite"))
        })
        .collect();
    copies.sort();
    let excess = copies.len().saturating_sub(keep);
    let old: Vec<PathBuf> = copies.into_iter().take(excess).collect();
    for p in &old {
        std::fs::remove_file(p).with_context(|| format!("cannot delete {}", p.display()))?;
    }
    Ok(old)
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The copy, checked.
    pub copy: CopyReport,
    /// Where the database that was in its place went (with its WAL files), if there was one.
    pub moved_aside: Option<PathBuf>,
}

/// Puts the checked copy `copy` in the place of the SQLite store `db` at `now_ms`, moving the
/// database there aside. Refused while a coordinator has `db` open.
pub fn restore(copy: &Path, db: &Path, now_ms: i64) -> Result<Restored> {
    let report = check(copy)?;
    let mut moved_aside = None;
    if db.exists() {
        refuse_if_open(db)?;
        let aside = with_suffix(db, &format!(".before-restore-{}", stamp(now_ms)));
        for suffix in ["", "-wal", "-shm"] {
            let from = with_suffix(db, suffix);
            if from.exists() {
                std::fs::rename(&from, with_suffix(&aside, suffix))
                    .with_context(|| format!("cannot move {} aside", from.display()))?;
            }
        }
        moved_aside = Some(aside);
    }
    let partial = with_suffix(db, ".partial");
    std::fs::copy(copy, &partial).with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, db).with_context(|| format!("cannot write {}", db.display()))?;
    Ok(Restored {
        copy: report,
        moved_aside,
    })
}

/// Refuses when another process has the database open (a `serve`): an exclusive lock on it is
/// not to be had.
fn refuse_if_open(db: &Path) -> Result<()> {
    let c = Connection::open(db).with_context(|| format!("cannot open {}", db.display()))?;
    let locked = c
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT;")
        .is_err();
    drop(c);
    if locked {
        bail!(
            "{} is in use (a running coordinator?): stop it before restoring",
            db.display()
        );
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_sort_as_times_do_and_read_as_utc() {
        assert_eq!(stamp(0), "19700101T000000Z");
        assert_eq!(stamp(1_796_601_600_000), "20261207T000000Z");
        assert_eq!(stamp(951_786_123_000), "20000229T010203Z");
        assert!(stamp(1_000) < stamp(2_000));
    }

    #[test]
    fn pruning_keeps_the_newest_copies_and_nothing_else_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        for ms in [3_000, 1_000, 2_000] {
            std::fs::write(destination(dir.path(), ms), b"x").unwrap();
        }
        std::fs::write(dir.path().join("c960.sqlite"), b"the live one").unwrap();
        let gone = prune(dir.path(), 2).unwrap();
        assert_eq!(gone, vec![destination(dir.path(), 1_000)]);
        assert!(destination(dir.path(), 3_000).exists());
        assert!(dir.path().join("c960.sqlite").exists());
    }
}
