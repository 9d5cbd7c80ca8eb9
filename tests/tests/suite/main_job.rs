//! `c960-coordinator run --depth 4` over all 960 start positions, as a real process: the table
//! equals the reference, every workunit has ≥ 2 agreeing results from distinct workers, and a
//! second run on the same database recomputes nothing.

use c960_coordinator::model::ResultOutcome;
use std::collections::BTreeSet;
use std::process::Command;

use c960_coordinator::store::{SqliteStore, Store};
use c960_tests::{bins, parse_table, postgres_schema, reference};

#[test]
fn run_depth_4_all_960_matches_reference_with_quorum() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let out = dir.path().join("table.csv");
    let run = || {
        Command::new(coordinator)
            .args(["run", "--depth", "4", "--local-workers", "2"])
            .arg("--db")
            .arg(&db)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let first = run();
    assert!(
        first.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&first.stderr)
    );
    let expected_total: u128 = reference().values().map(|d| u128::from(d[3])).sum();
    let stdout = String::from_utf8(first.stdout).unwrap();
    assert_eq!(stdout.lines().last().unwrap(), expected_total.to_string());
    // The coordinator checks its own table against the reference and OEIS A157851 a(4).
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("reference table: 960 of 960 start positions agree"),
        "{stderr}"
    );
    assert!(
        stderr.contains("OEIS A157851 depth 4: 181106056 vs 181106056: agrees"),
        "{stderr}"
    );

    let table = parse_table(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(table.len(), 960);
    for (sp, (depth, nodes, status)) in &table {
        assert_eq!(*depth, 4);
        assert_eq!(status, "valid", "sp {sp}");
        assert_eq!(*nodes, Some(reference()[sp][3]), "sp {sp}");
    }

    let store = SqliteStore::open(&db).unwrap();
    let (_, rows) = store.table(1).unwrap();
    let mut results_before = 0;
    for row in &rows {
        let results = store.results(row.workunit_id).unwrap();
        results_before += results.len();
        let agreeing: Vec<_> = results
            .iter()
            .filter(|r| r.outcome == ResultOutcome::Valid)
            .collect();
        let workers: BTreeSet<u64> = agreeing.iter().map(|r| r.worker_id).collect();
        assert!(
            agreeing.len() >= 2,
            "workunit {} has {} valid results",
            row.workunit_id,
            agreeing.len()
        );
        assert_eq!(
            workers.len(),
            agreeing.len(),
            "workunit {}: results from the same worker",
            row.workunit_id
        );
        assert!(agreeing.iter().all(|r| r.digest == row.digest));
    }
    drop(store);

    // Running again resumes a finished campaign: same answer, no new results.
    let second = run();
    assert!(second.status.success());
    assert_eq!(
        String::from_utf8(second.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
        expected_total.to_string()
    );
    let store = SqliteStore::open(&db).unwrap();
    let after: usize = rows
        .iter()
        .map(|r| store.results(r.workunit_id).unwrap().len())
        .sum();
    assert_eq!(after, results_before);
}

#[test]
fn run_refuses_bad_arguments_with_one_line() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["run", "--depth", "2", "--positions", "0-960"],
        vec!["run", "--depth", "0"],
        vec!["run", "--depth", "21"],
        vec!["run", "--depth", "2", "--local-workers", "1"],
        vec!["run", "--depth", "2", "--split-ply", "two"],
        vec!["run", "--depth", "2", "--split-ply", "2"],
    ] {
        let out = Command::new(coordinator)
            .args(&args)
            .arg("--db")
            .arg(dir.path().join("x.db"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{err}");
    }
}

/// `run --db postgres://…`: the same main job on PostgreSQL (needs `C960_TEST_POSTGRES`;
/// skipped loudly without it, failing under CI), and a second run resumes it.
#[test]
fn run_on_postgres_matches_reference_and_resumes() {
    let Some((_, url)) = postgres_schema("run --db postgres://", "main_job_run") else {
        return;
    };
    let (coordinator, _) = bins();
    let run = || {
        let out = Command::new(coordinator)
            .args(["run", "--depth", "3", "--positions", "0-9,518"])
            .args(["--local-workers", "2", "--split-ply", "0", "--hash", "0"])
            .args(["--db", &url])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (first, _) = run();
    // The CSV, then the total on its last line.
    let (csv, total) = first.trim_end().rsplit_once('\n').unwrap();
    let table = parse_table(csv);
    let expected: u64 = table.keys().map(|sp| reference()[sp][2]).sum();
    assert_eq!(total, expected.to_string());
    assert_eq!(table.len(), 11);
    for (sp, (depth, nodes, status)) in &table {
        assert_eq!((*depth, status.as_str()), (3, "valid"), "sp {sp}");
        assert_eq!(*nodes, Some(reference()[sp][2]), "sp {sp}");
    }
    let (second, log) = run();
    assert_eq!(second, first);
    assert!(log.contains("11 of 11 workunits already done"), "{log}");
}
