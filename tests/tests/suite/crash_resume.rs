//! The coordinator (`run`) killed with SIGKILL in the middle of a campaign and started again on
//! the same SQLite file: the campaign completes, no valid workunit gets a new result, and the
//! table is exact.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use c960_coordinator::model::RowStatus;
use c960_coordinator::store::{SqliteStore, Store};
use c960_tests::{bins, parse_table, reference};

#[test]
fn coordinator_killed_mid_campaign_resumes_without_recomputing() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let out = dir.path().join("table.csv");
    let args = |c: &mut Command| {
        c.args(["run", "--depth", "4", "--local-workers", "2"])
            .arg("--db")
            .arg(&db)
            .arg("--out")
            .arg(&out);
    };
    let mut cmd = Command::new(coordinator);
    args(&mut cmd);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Wait until some, but not all, workunits are valid, then kill without warning.
    let mut store = None;
    let mut valid_before: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for _ in 0..6000 {
        std::thread::sleep(Duration::from_millis(10));
        if store.is_none() && db.exists() {
            store = SqliteStore::open(&db).ok();
        }
        let Some(s) = &store else { continue };
        let Some(p) = s.progress().ok().and_then(|p| p.into_iter().next()) else {
            continue;
        };
        if p.valid >= 40 {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            break;
        }
    }
    // If the loop ran out without killing, make sure the child is gone before failing.
    let _ = child.kill();
    let _ = child.wait();
    let store = store.expect("database created");
    let (_, rows) = store.table(1).unwrap();
    let valid = rows.iter().filter(|r| r.status == RowStatus::Valid).count();
    assert!(
        (40..960).contains(&valid),
        "killed at {valid} valid workunits: not in the middle"
    );
    for r in rows.iter().filter(|r| r.status == RowStatus::Valid) {
        valid_before.insert(
            r.workunit_id,
            store
                .results(r.workunit_id)
                .unwrap()
                .iter()
                .map(|x| x.id)
                .collect(),
        );
    }

    let mut cmd = Command::new(coordinator);
    args(&mut cmd);
    let second = cmd.output().unwrap();
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("already done"), "{stderr}");

    let table = parse_table(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(table.len(), 960);
    for (sp, (_, nodes, status)) in &table {
        assert_eq!(status, "valid");
        assert_eq!(*nodes, Some(reference()[sp][3]), "sp {sp}");
    }
    for (wu, ids) in &valid_before {
        let now: Vec<u64> = store.results(*wu).unwrap().iter().map(|x| x.id).collect();
        assert_eq!(
            &now, ids,
            "workunit {wu} was computed again after the restart"
        );
    }
}
