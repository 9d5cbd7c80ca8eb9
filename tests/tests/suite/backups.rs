//! Backups an operator can trust (issue 55): `c960-coordinator backup` takes checked copies of
//! the SQLite store while `serve` (default flags) and two default workers write to it, keeps the
//! newest `--keep`, and `restore` (refused while `serve` has the database open) puts one back:
//! `serve` resumes from it, the work accepted after the copy is earned again from the workers,
//! and the campaign completes with an exact table.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use c960_tests::{ServeProcess, bins};

use super::first_hour::{SECRET, assert_export_is_reference, status, wait_complete, work_with};

fn coordinator(args: &[&str]) -> Output {
    Command::new(&bins().0).args(args).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Two workers, in small batches: at default batches they settle this campaign within a
/// second of their ramp-up, before copies a second apart could be taken mid-campaign.
fn two_slow_workers(url: &str, dir: &std::path::Path, tag: &str) -> Vec<super::first_hour::Worker> {
    (0..2)
        .map(|i| {
            let home = dir.join(format!("home{i}"));
            std::fs::create_dir_all(&home).unwrap();
            let log = dir.join(format!("w{i}{tag}.log"));
            work_with(url, &home, &log, &["--max-batch", "32"])
        })
        .collect()
}

async fn valid(url: &str) -> u64 {
    status(url).await["campaigns"][0]["valid"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_taken_while_serve_writes_restore_and_the_campaign_completes_exact() {
    c960_worker::client::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    let copies = dir.path().join("backups");
    std::fs::create_dir(&copies).unwrap();
    let server = ServeProcess::start(&db, &["--enrol-secret", SECRET], Stdio::null());
    let db_arg = db.to_str().unwrap();
    ok(coordinator(&[
        "campaign",
        "add",
        "--db",
        db_arg,
        "--depth",
        "4",
        "--quorum",
        "2",
        "--positions",
        "0-959",
    ]));
    let first = two_slow_workers(&server.url, dir.path(), "-a");
    let until = Instant::now() + Duration::from_secs(120);
    while valid(&server.url).await < 100 {
        assert!(Instant::now() < until, "no progress");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Three copies while the workers submit, a second apart (the names are per second).
    let mut said = Vec::new();
    for _ in 0..3 {
        said.push(ok(coordinator(&[
            "backup",
            "--db",
            db_arg,
            "--out",
            copies.to_str().unwrap(),
            "--keep",
            "2",
        ])));
        tokio::time::sleep(Duration::from_millis(1_100)).await;
    }
    assert!(said.iter().all(|s| s.contains("integrity ok")), "{said:?}");
    assert!(said[2].contains("deleted"), "{said:?}");
    let mut kept: Vec<_> = std::fs::read_dir(&copies)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let copy = kept[0].to_str().unwrap().to_string();
    // A copy never overwrites, and a restore under a running serve is refused.
    let again = coordinator(&["backup", "--db", db_arg, "--out", &copy]);
    assert!(!again.status.success());
    let busy = coordinator(&["restore", "--from", &copy, "--db", db_arg]);
    let err = String::from_utf8_lossy(&busy.stderr);
    assert!(
        !busy.status.success() && err.contains("in use") && err.lines().count() == 1,
        "{err}"
    );
    wait_complete(&server.url, Duration::from_secs(240)).await;
    drop(first);
    drop(server);

    // Back to the copy: what was accepted after it is earned again.
    let restored = ok(coordinator(&["restore", "--from", &copy, "--db", db_arg]));
    assert!(
        restored.contains("earned again") && restored.contains("before-restore"),
        "{restored}"
    );
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("c960.sqlite.before-restore-"))
        .collect();
    assert!(!aside.is_empty(), "the database there is kept aside");
    let server = ServeProcess::start(&db, &["--enrol-secret", SECRET], Stdio::null());
    let at_restore = valid(&server.url).await;
    assert!(at_restore < 960, "the copy was taken mid-campaign");
    let second = two_slow_workers(&server.url, dir.path(), "-b");
    let took = wait_complete(&server.url, Duration::from_secs(240)).await;
    drop(second);
    drop(server);
    eprintln!("restored at {at_restore} of 960 valid; complete {took:.1?} later");
    assert_export_is_reference(&db, 4, 960);
}
