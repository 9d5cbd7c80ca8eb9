//! Keeps ARCHITECTURE.md true and the files small (rust-analyzer's tidy tests): every Rust
//! source file of the crates is named in the code map (by its file name, the folder it sits
//! in written `folder/`, or a pattern like `cli_*.rs`), every file the map names exists, and no
//! source file grows past the size the style guide allows without a reason recorded here.

use std::path::{Path, PathBuf};

/// The longest a source file may be, in lines ("no file grows past ~800 lines without a
/// reason": a little slack, so that the test fails at a real overgrowth, not a doc comment).
const MAX_LINES: usize = 900;

/// Files allowed past [`MAX_LINES`], each with its reason.
const LONG_FILES: &[(&str, &str)] = &[];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` files under `dir`, recursively, relative to the workspace root.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("target") {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root()).unwrap().to_path_buf());
        }
    }
}

fn crate_sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for krate in ["common", "compute", "coordinator", "worker", "tests"] {
        sources(&root().join(krate).join("src"), &mut out);
    }
    out.sort();
    out
}

/// The code-quoted names of ARCHITECTURE.md (`` `name` ``) that look like files or folders.
fn quoted(map: &str) -> Vec<&str> {
    map.split('`')
        .skip(1)
        .step_by(2)
        .filter(|q| !q.contains(' ') && (q.ends_with(".rs") || q.ends_with('/')))
        .collect()
}

fn covered(file: &Path, names: &[&str]) -> bool {
    let base = file.file_name().unwrap().to_str().unwrap();
    // The folder a file sits in, below its crate's `src/` (none for a file directly in it).
    let parent = file
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|p| p.to_str());
    let folder = parent.filter(|p| *p != "src");
    names.iter().any(|n| {
        let n = n.trim_start_matches("api/");
        if let Some((prefix, suffix)) = n.split_once('*') {
            base.starts_with(prefix) && base.ends_with(suffix)
        } else if let Some(named) = n.strip_suffix('/') {
            folder.is_some_and(|f| f == named.rsplit('/').next().unwrap())
        } else {
            base == n.rsplit('/').next().unwrap()
        }
    })
}

/// Every `.rs` file of the crates: sources, tests, benches, examples, build scripts.
fn all_rust_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for krate in [
        "common",
        "compute",
        "coordinator",
        "worker",
        "tests",
        "fuzz",
    ] {
        if root().join(krate).is_dir() {
            sources(&root().join(krate), &mut out);
        }
    }
    out
}

#[test]
fn every_source_file_is_in_the_code_map() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let names = quoted(&map);
    let missing: Vec<_> = crate_sources()
        .into_iter()
        .filter(|f| !covered(f, &names))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name {missing:?}: add a line saying what each is"
    );
}

#[test]
fn every_file_the_code_map_names_exists() {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let bases: Vec<String> = all_rust_files()
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    let gone: Vec<&str> = quoted(&map)
        .into_iter()
        .filter(|n| n.ends_with(".rs") && !n.contains('*'))
        .filter(|n| {
            let base = n.rsplit('/').next().unwrap();
            !bases.iter().any(|b| b == base) && !root().join(n).is_file()
        })
        .collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files that are not there: {gone:?}"
    );
}

#[test]
fn no_source_file_outgrows_the_style_guide() {
    let mut long = Vec::new();
    for f in crate_sources() {
        let lines = std::fs::read_to_string(root().join(&f))
            .unwrap()
            .lines()
            .count();
        let allowed = LONG_FILES.iter().any(|(name, _)| Path::new(name) == f);
        if lines > MAX_LINES && !allowed {
            long.push(format!("{} ({lines} lines)", f.display()));
        }
    }
    assert!(
        long.is_empty(),
        "past {MAX_LINES} lines: {long:?} — split by what the parts do, or record why in LONG_FILES"
    );
}
