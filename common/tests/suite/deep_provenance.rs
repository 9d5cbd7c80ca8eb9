//! The depth-9 table's provenance (issue 35 item 3), checked from the committed files alone on
//! every test run: the published table is exactly its chunks' rows and sums to the a(9) the docs
//! state, and every row was counted by two valid replicas with different perft-table Zobrist
//! seeds, each with the row's count and digest (the 80 rows counted before workers named their
//! seed were recounted with recorded seeds; `data/perft_d9_all960/README.md`).
//! (`reference_deep::the_depth_9_table` recomputes values; this reads who counted them.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// a(9) of OEIS A157851 (which stops at a(8)): perft(9) summed over the 960 starts, as c960
/// computed it (`data/perft_d9_all960.csv`).
pub(crate) const A157851_9: u128 = 2_119_437_289_659_821;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn table_dir() -> PathBuf {
    repo().join("data/perft_d9_all960")
}

/// The chunks' value exports (`spA-B.csv`, not the replicas exports): (path, `A-B`).
fn chunk_files() -> Vec<(PathBuf, String)> {
    let mut chunks = Vec::new();
    for entry in std::fs::read_dir(table_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(range) = name
            .strip_prefix("sp")
            .and_then(|n| n.strip_suffix(".csv"))
            .filter(|n| !n.ends_with(".replicas"))
        else {
            continue;
        };
        chunks.push((path, range.to_string()));
    }
    chunks
}

/// A CSV file as rows of named fields (no field of these files holds a comma).
fn records(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{}: {l}", path.display());
            header
                .iter()
                .zip(fields)
                .map(|(h, f)| (h.to_string(), f.to_string()))
                .collect()
        })
        .collect()
}

/// One valid replica's seed, count and digest.
struct Replica {
    seed: String,
    nodes: String,
    digest: String,
}

#[test]
fn every_depth_9_row_names_two_seeds() {
    let mut rows_with_seeds = 0;
    let mut builds = BTreeSet::new();
    let mut returned = BTreeSet::new();
    for (path, range) in chunk_files() {
        let name = format!("sp{range}.csv");
        let replicas_path = path.with_file_name(format!("sp{range}.replicas.csv"));
        assert!(
            replicas_path.exists(),
            "{name}: no replicas export beside it"
        );
        let rows = records(&path);
        let starts: BTreeSet<&str> = rows.iter().map(|r| r["sp"].as_str()).collect();
        let mut valid: BTreeMap<String, Vec<Replica>> = BTreeMap::new();
        for r in records(&replicas_path) {
            assert!(
                starts.contains(r["sp"].as_str()),
                "{name}: a replica of another chunk"
            );
            assert_eq!(r["depth"], "9", "{name}");
            builds.insert(r["worker_build"].clone());
            returned.insert(r["returned_utc"].clone());
            if r["outcome"] == "valid" {
                valid.entry(r["sp"].clone()).or_default().push(Replica {
                    seed: r["zobrist_seed"].clone(),
                    nodes: r["nodes"].clone(),
                    digest: r["digest"].clone(),
                });
            }
        }
        for row in &rows {
            let sp = &row["sp"];
            let replicas = valid.get(sp).map(Vec::as_slice).unwrap_or_default();
            let seeds: BTreeSet<&str> = replicas.iter().map(|r| r.seed.as_str()).collect();
            assert!(
                replicas.len() >= 2 && seeds.len() >= 2 && !seeds.contains(""),
                "{name}: start {sp} is not vouched for by two seeds: {seeds:?}"
            );
            for r in replicas {
                assert_eq!(
                    (&r.nodes, &r.digest),
                    (&row["nodes"], &row["digest"]),
                    "{name}: start {sp}"
                );
            }
            rows_with_seeds += 1;
        }
    }
    assert_eq!(rows_with_seeds, 960, "every start, once");
    println!(
        "depth 9: {rows_with_seeds} rows each counted with two Zobrist seeds; builds {builds:?}; returned {} to {}",
        returned.first().unwrap(),
        returned.last().unwrap()
    );
}

/// Every chunk `times.txt` records as completed is in the table with its exports: a chunk
/// landed without its files (it happened once: the CSVs were left untracked) fails here.
#[test]
fn every_timed_chunk_is_in_the_table() {
    let times = std::fs::read_to_string(table_dir().join("times.txt")).unwrap();
    let mut chunks = 0;
    for line in times.lines().filter(|l| !l.trim().is_empty()) {
        let range = line.split_whitespace().next().unwrap();
        let csv = table_dir().join(format!("sp{range}.csv"));
        assert!(
            csv.exists(),
            "times.txt names {range}, but {} is missing",
            csv.display()
        );
        let replicas = table_dir().join(format!("sp{range}.replicas.csv"));
        assert!(
            replicas.exists(),
            "times.txt names {range}, but {} is missing",
            replicas.display()
        );
        chunks += 1;
    }
    assert!(chunks >= 2, "the pilot's two chunks at least");
}

/// The published table (`data/perft_d9_all960.csv`, written by `scripts/join-chunks.sh`) is
/// exactly the rows of its chunks, the 960 starts in order, each once; its sum is
/// [`A157851_9`], and the README and docs/deep-results.md state that sum.
#[test]
fn the_depth_9_table_is_its_chunks_and_sums_to_the_stated_a9() {
    let mut chunked = BTreeMap::new();
    for (path, range) in chunk_files() {
        for r in records(&path) {
            let sp: u32 = r["sp"].parse().unwrap();
            assert_eq!((&*r["depth"], &*r["status"]), ("9", "valid"), "sp {sp}");
            let agreeing: u32 = r["agreeing_results"].parse().unwrap();
            assert!(agreeing >= 2, "sp{range}.csv: start {sp} not at quorum 2");
            let row = (r["fen"].clone(), r["nodes"].clone());
            assert!(
                chunked.insert(sp, row).is_none(),
                "sp{range}.csv: start {sp} twice"
            );
        }
    }
    let table = crate::reference_deep::published_table(9);
    assert_eq!(table.len(), 960, "the table must hold the 960 starts");
    let in_order = table.iter().enumerate().all(|(i, r)| r.0 == i as u32);
    assert!(in_order, "the table's starts are not 0, 1, 2, … in order");
    let sum: u128 = table.iter().map(|r| u128::from(r.2)).sum();
    let joined: BTreeMap<u32, (String, String)> = table
        .into_iter()
        .map(|(sp, fen, nodes)| (sp, (fen, nodes.to_string())))
        .collect();
    let differs = (0..960).find(|sp| joined.get(sp) != chunked.get(sp));
    assert_eq!(
        differs, None,
        "the table is not its chunks at this start: rejoin them"
    );
    assert_eq!(sum, A157851_9);
    let stated = c960_common::text::thousands(sum);
    for doc in ["README.md", "docs/deep-results.md"] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        assert!(
            text.contains(&format!("a(9) = {stated}")),
            "{doc} does not state a(9) = {stated}"
        );
    }
}
