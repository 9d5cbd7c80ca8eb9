//! The coordinator's command line as a real process: `worker list` and `worker show` over a
//! campaign run by real workers, and every command but `serve` and `run` refusing a `--db`
//! that does not exist (one line on stderr, non-zero exit, no file created).

use std::path::Path;
use std::process::{Command, Output};

use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, quick_config};

fn coordinator(args: &[&str], db: &Path) -> Output {
    Command::new(&bins().0)
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_list_and_show_print_the_stores_credit() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-4");
    server.finish_with_honest_workers(c.id, 2).await;
    let db = server.dir.path().join("c960.db");
    let store = &server.store;

    let list = stdout(&coordinator(&["worker", "list"], &db));
    let mut lines = list.lines();
    assert_eq!(
        lines.next().unwrap(),
        "id\tname\tstate\tvalid_results\tcredit_nodes\tlost_votes\trefused\tlast_seen"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 2);
    let mut total_results = 0;
    for r in &rows {
        let id: u64 = r[0].parse().unwrap();
        let w = store.worker(id).unwrap().unwrap();
        assert_eq!(r[1], w.name);
        assert_eq!(r[2], "active");
        assert_eq!(r[3], w.valid.to_string());
        // Credit nodes recomputed from the raw results.
        let (_, table) = store.table(c.id).unwrap();
        let nodes: u64 = table
            .iter()
            .flat_map(|t| store.results(t.workunit_id).unwrap())
            .filter(|res| res.worker_id == id && res.outcome == "valid")
            .map(|res| res.nodes.unwrap())
            .sum();
        assert_eq!(r[4], nodes.to_string());
        total_results += w.valid;
    }
    // Quorum 2 over 5 workunits: 10 agreeing results in all.
    assert_eq!(total_results, 10);

    let id = rows[0][0];
    let show = stdout(&coordinator(&["worker", "show", id], &db));
    assert!(
        show.starts_with(&format!("worker {id} ({})", rows[0][1])),
        "{show}"
    );
    assert!(show.contains("state          active"), "{show}");
    let results = show
        .lines()
        .skip_while(|l| !l.starts_with("result\t"))
        .count()
        - 1;
    assert_eq!(results as u64, rows[0][3].parse::<u64>().unwrap());

    let missing = coordinator(&["worker", "show", "999"], &db);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.trim(), "error: unknown worker 999");
}

#[test]
fn commands_refuse_a_database_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("c960.sqlit");
    for args in [
        &["campaign", "list"][..],
        &["campaign", "add", "--depth", "2", "--positions", "518"],
        &["worker", "list"],
        &["worker", "show", "1"],
        &["worker", "ban", "1"],
        &["worker", "unban", "1"],
        &["export", "--campaign", "1"],
    ] {
        let out = coordinator(args, &typo);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("no database at"), "{args:?}: {err}");
        assert!(!typo.exists(), "{args:?} created the database");
    }
}
