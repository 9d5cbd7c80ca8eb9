//! Upgrades across releases (issue 55): a database written by 0.1.0 with a campaign half done and
//! replicas in flight (`tests/data/upgrade/`, how it was made in its README) opened by today's
//! `serve` with default flags and two default workers: the migrations run, the leases from
//! before the upgrade lapse like unrenewed ones (within a renewal window, not their hour), the
//! campaign completes and its table is exact. A database newer than the binary is refused with
//! one line naming both versions.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use c960_tests::{ServeProcess, bins};

use super::first_hour::{SECRET, assert_export_is_reference, two_workers, wait_complete};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/upgrade/c960-0.1.0.sqlite")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_0_database_with_replicas_in_flight_completes_under_today_s_serve() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    std::fs::copy(fixture(), &db).unwrap();
    // As if 0.1.0 had stopped a moment ago: its leases in flight issued 5 s ago, with the whole
    // hour ahead of them that 0.1.0 gave every lease.
    let now = c960_coordinator::clock::now_ms();
    let c = rusqlite::Connection::open(&db).unwrap();
    let in_flight = c
        .execute(
            "UPDATE results SET issued_ms = ?1, deadline_ms = ?1 + 3600000 WHERE state = 0",
            [now - 5_000],
        )
        .unwrap();
    assert_eq!(in_flight, 8);
    drop(c);
    let log = dir.path().join("serve.log");
    let server = ServeProcess::start(
        &db,
        &["--enrol-secret", SECRET],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let workers = two_workers(&server.url, dir.path(), "");
    // The eight replicas leased under 0.1.0 kept their hour before; now one renewal window.
    let took = wait_complete(&server.url, Duration::from_secs(240)).await;
    drop(workers);
    drop(server);
    eprintln!("0.1.0 database: complete {took:.1?} after today's serve opened it");
    assert_export_is_reference(&db, 4, 100);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("ERROR"), "{log}");
}

#[test]
fn a_database_newer_than_the_binary_is_refused_naming_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    // Today's schema, then one migration more, written by a later release.
    drop(c960_coordinator::store::SqliteStore::open(&db).unwrap());
    let newer = c960_coordinator::store::migrations::MIGRATIONS.len() + 1;
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(&format!(
        "PRAGMA user_version = {newer};
         INSERT INTO program_versions VALUES ({newer}, 'c960-coordinator 9.1.0', 0);"
    ))
    .unwrap();
    drop(c);
    for args in [
        vec!["serve", "--listen", "127.0.0.1:0"],
        vec!["campaign", "list"],
    ] {
        let out = Command::new(&bins().0)
            .args(&args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        // `serve` logs its start-up first; the refusal is one line, the last.
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert_eq!(err.lines().last(), errors.first().copied(), "{err}");
        let err = errors[0];
        assert!(
            err.contains(&format!(
                "schema version {newer} (written by c960-coordinator 9.1.0)"
            )) && err.contains(&c960_coordinator::store::migrations::this_program()),
            "{args:?}: {err}"
        );
    }
}
