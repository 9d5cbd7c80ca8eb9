//! Campaigns over other families than Chess960, through the real `c960-coordinator` binary:
//! `campaign add --family`, `--sample K --seed S`, `run --family`, and exports that name the
//! family and number.

use std::process::Command;

use c960_common::family::Family;
use c960_tests::bins;

fn coordinator(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(&bins().0).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_over_a_family_exports_family_and_number() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let db = db.to_str().unwrap();
    let run = [
        "run",
        "--family",
        "chess960-nc",
        "--positions",
        "0-3,479",
        "--depth",
        "2",
        "--split-ply",
        "0",
        "--local-workers",
        "2",
        "--hash",
        "1",
        "--db",
        db,
    ];
    let (code, out, err) = coordinator(&run);
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("family,number,fen,depth,nodes,status,agreeing_results,digest,audit")
    );
    let mut total = 0u64;
    for (line, n) in lines.by_ref().take(5).zip([0u32, 1, 2, 3, 479]) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!((f[0], f[1]), ("chess960-nc", n.to_string().as_str()));
        let start = Family::Chess960Nc.start(u64::from(n)).unwrap();
        assert_eq!(
            f[2],
            start.fen(),
            "the workunit carries the start's FEN, no castling"
        );
        assert!(f[2].contains(" w - - "));
        let nodes: u64 = f[4].parse().unwrap();
        assert_eq!(nodes, c960_common::perft(&start.position(), 2));
        assert_eq!(f[5], "valid");
        total += nodes;
    }
    assert_eq!(lines.next(), Some(total.to_string().as_str()));
    // Run again: the same campaign is found (family included), nothing is recomputed.
    let (code, _, err) = coordinator(&run);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("5 of 5 workunits already done"), "{err}");
    // The same numbers in Chess960 are another campaign.
    let (code, out, _) = coordinator(&[
        "run",
        "--positions",
        "0-3,479",
        "--depth",
        "1",
        "--split-ply",
        "0",
        "--local-workers",
        "2",
        "--hash",
        "1",
        "--db",
        db,
    ]);
    assert_eq!(code, 0);
    assert!(out.starts_with("sp,fen,depth,nodes"), "{out}");
}

#[test]
fn campaign_add_takes_a_reproducible_sample_of_a_huge_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    // `campaign add` refuses a database that does not exist; `serve` (or this) creates it.
    drop(c960_coordinator::store::SqliteStore::open(&db).unwrap());
    let db = db.to_str().unwrap();
    let add = |seed: &str| {
        coordinator(&[
            "campaign",
            "add",
            "--db",
            db,
            "--family",
            "transcendental",
            "--sample",
            "4",
            "--seed",
            seed,
            "--depth",
            "3",
            "--split-ply",
            "0",
        ])
    };
    let (code, id, err) = add("7");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("transcendental"), "{err}");
    let (_, id2, _) = add("7");
    let (code, csv, err) = coordinator(&["export", "--db", db, "--campaign", id.trim()]);
    assert_eq!(code, 0, "{err}");
    let (_, csv2, _) = coordinator(&["export", "--db", db, "--campaign", id2.trim()]);
    let numbers = |csv: &str| -> Vec<String> {
        csv.lines()
            .skip(1)
            .map(|l| l.split(',').nth(1).unwrap().to_string())
            .collect()
    };
    assert_eq!(numbers(&csv).len(), 4);
    assert_eq!(numbers(&csv), numbers(&csv2), "same seed, same sample");
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let n: u64 = f[1].parse().unwrap();
        assert_eq!(f[2], Family::Transcendental.start(n).unwrap().fen());
        assert_eq!(f[5], "open");
    }
    // Refusals: a huge family needs a list or a sample; a sample and a list together; split;
    // a number out of the family's range.
    let base = ["campaign", "add", "--db", db, "--depth", "3"];
    for extra in [
        &["--family", "dfrc"][..],
        &["--family", "dfrc", "--sample", "2", "--positions", "1"],
        &["--family", "shuffle", "--split-ply", "1"],
        &["--family", "shuffle", "--positions", "5040"],
    ] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let args = &args[..];
        let (code, out, err) = coordinator(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}
