//! Keeps ARCHITECTURE.md true and the code's shape as the map states it (rust-analyzer's tidy
//! tests):
//!
//! - every Rust source file of the crates is named in the code map, in its crate's section, by a
//!   path that identifies it (a base name only where it is unique in the crate, or under a folder
//!   named earlier in the same bullet; a pattern like `cli_*.rs`; a folder `name/` for the files
//!   directly in it), and every file and folder the map names exists where it says;
//! - the crates depend on each other only downwards (the layers of the map);
//! - no import circle between the modules of a crate (a module may use its parent: that is
//!   nesting, not a circle), and no import up the coordinator's floors — both read from whole
//!   files with a Rust parser (`rust_source.rs`), test-only items aside;
//! - no SQL outside the coordinator's `store/`; `net/api/` imported only by the binaries and `run`;
//! - no literal state code in the store's SQL (`store/codes.rs` names them: `tidy_sql.rs`);
//! - no source file past 800 lines without a reason recorded here; no two sources of a crate
//!   with one base name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::rust_source;

/// The longest a source file may be, in lines (the style guide's ~800).
const MAX_LINES: usize = 800;

/// Files allowed past [`MAX_LINES`], each with its reason.
const LONG_FILES: &[(&str, &str)] = &[];

/// The crates, lowest layer first, each with the workspace crates it may depend on (normal
/// dependencies; an optional one is listed too).
const LAYERS: &[(&str, &[&str])] = &[
    ("common", &[]),
    ("compute", &["c960-common"]),
    ("cli", &["c960-common"]),
    ("worker", &["c960-common", "c960-compute", "c960-cli"]),
    (
        "coordinator",
        &["c960-common", "c960-compute", "c960-cli", "c960-worker"],
    ),
];

/// Crates whose sources the map covers.
const MAPPED: &[&str] = &["common", "compute", "cli", "coordinator", "worker", "tests"];

pub(super) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub(super) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `.rs` files under `dir`, recursively, relative to `base`, with `/` separators.
fn rust_files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("target") {
            rust_files(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(base).unwrap();
            out.push(rel.to_str().unwrap().replace('\\', "/"));
        }
    }
}

/// Every `.rs` file of a crate, relative to the crate's folder (`src/store/sql/leases.rs`,
/// `tests/tidy.rs`, `build.rs`).
pub(super) fn crate_files(krate: &str) -> Vec<String> {
    let dir = root().join(krate);
    let mut out = Vec::new();
    rust_files(&dir, &dir, &mut out);
    out.sort();
    out
}

/// A code-quoted name of the map that looks like a file or folder, with the crate section it
/// is in (`None` outside the crates' sections) and the folders quoted before it in its bullet
/// and the bullets around it (nearest first).
struct Named {
    name: String,
    section: Option<String>,
    folders: Vec<String>,
}

fn named_in_map(map: &str) -> Vec<Named> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    // Open bullets: indentation and the folders quoted in each.
    let mut bullets: Vec<(usize, Vec<String>)> = Vec::new();
    for line in map.lines() {
        if line.starts_with("## ") {
            section = None;
            bullets.clear();
        }
        if let Some(heading) = line.strip_prefix("### ") {
            section = heading
                .strip_prefix('`')
                .and_then(|h| h.split_once("/`"))
                .map(|(krate, _)| krate.to_string());
            bullets.clear();
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("- ") {
            let indent = line.len() - trimmed.len();
            while bullets.last().is_some_and(|(i, _)| *i >= indent) {
                bullets.pop();
            }
            bullets.push((indent, Vec::new()));
        } else if trimmed.is_empty() {
            bullets.clear();
        }
        for quoted in line.split('`').skip(1).step_by(2) {
            if quoted.contains(' ') || !(quoted.ends_with(".rs") || quoted.ends_with('/')) {
                continue;
            }
            let folders = bullets.iter().rev().flat_map(|(_, f)| f.iter().rev());
            out.push(Named {
                name: quoted.to_string(),
                section: section.clone(),
                folders: folders.cloned().collect(),
            });
            if quoted.ends_with('/')
                && let Some((_, f)) = bullets.last_mut()
            {
                f.push(quoted.to_string());
            }
        }
    }
    out
}

/// Whether `path` ends with `suffix` at a `/` boundary.
fn ends_at_component(path: &str, suffix: &str) -> bool {
    path == suffix || path.ends_with(&format!("/{suffix}"))
}

/// The files of `krate` (relative to the crate folder) that `name` names.
fn resolve(krate: &str, name: &str, files: &[String]) -> Vec<String> {
    let name = name.strip_prefix(&format!("{krate}/")).unwrap_or(name);
    let in_src = |f: &String| f.strip_prefix("src/").map(str::to_string);
    files
        .iter()
        .filter(|f| {
            let forms = [Some((*f).clone()), in_src(f)];
            forms.iter().flatten().any(|form| {
                if let Some((prefix, suffix)) = name.split_once('*') {
                    let base = form.rsplit('/').next().unwrap();
                    f.starts_with("src/") && base.starts_with(prefix) && base.ends_with(suffix)
                } else if let Some(folder) = name.strip_suffix('/') {
                    form.rsplit_once('/')
                        .is_some_and(|(dir, _)| ends_at_component(dir, folder))
                } else {
                    ends_at_component(form, name)
                }
            })
        })
        .cloned()
        .collect()
}

/// The crate a name outside the crates' sections belongs to, by its leading folder.
fn crate_of(name: &str) -> Option<&'static str> {
    MAPPED
        .iter()
        .chain(&["fuzz"])
        .find(|k| name.starts_with(&format!("{k}/")))
        .copied()
}

/// What the map covers, and what it names that is not there or not unique.
struct MapCheck {
    covered: BTreeSet<(String, String)>,
    missing: Vec<String>,
    ambiguous: Vec<String>,
}

fn check_map() -> MapCheck {
    let map = read(&root().join("ARCHITECTURE.md"));
    let files: BTreeMap<&str, Vec<String>> = MAPPED
        .iter()
        .chain(&["fuzz"])
        .map(|k| (*k, crate_files(k)))
        .collect();
    let mut check = MapCheck {
        covered: BTreeSet::new(),
        missing: Vec::new(),
        ambiguous: Vec::new(),
    };
    for n in named_in_map(&map) {
        let krate = match n.section.as_deref().filter(|s| files.contains_key(s)) {
            // A path from the workspace root may name another crate's file anywhere.
            Some(k) => crate_of(&n.name).unwrap_or(files.keys().find(|c| **c == k).unwrap()),
            None => match crate_of(&n.name) {
                Some(k) => k,
                None => {
                    // Outside the crates' sections a bare name must exist in some crate.
                    if n.name.ends_with(".rs")
                        && !files
                            .iter()
                            .any(|(k, f)| !resolve(k, &n.name, f).is_empty())
                        && !root().join(&n.name).exists()
                    {
                        check.missing.push(n.name.clone());
                    }
                    continue;
                }
            },
        };
        if n.name == format!("{krate}/") {
            continue;
        }
        let crate_files = &files[krate];
        let mut found = resolve(krate, &n.name, crate_files);
        let exact = n.name.ends_with('/') || n.name.contains('*');
        if found.len() > 1 && !exact {
            // Under a folder quoted before it in the bullet.
            if let Some(one) = n
                .folders
                .iter()
                .map(|f| resolve(krate, &format!("{f}{}", n.name), crate_files))
                .find(|r| r.len() == 1)
            {
                found = one;
            }
        }
        let folder_exists = n.name.ends_with('/') && {
            let rel = n.name.strip_prefix(&format!("{krate}/")).unwrap_or(&n.name);
            root().join(krate).join(rel).is_dir()
                || root().join(krate).join("src").join(rel).is_dir()
        };
        if found.is_empty() && !folder_exists {
            check.missing.push(format!("{krate}: {}", n.name));
        } else if found.len() > 1 && !exact {
            check
                .ambiguous
                .push(format!("{krate}: {} could be {found:?}", n.name));
        } else {
            for f in found {
                check.covered.insert((krate.to_string(), f));
            }
        }
    }
    check
}

#[test]
fn every_source_file_is_in_the_code_map_by_its_path() {
    let check = check_map();
    let mut unnamed = Vec::new();
    for krate in MAPPED {
        for f in crate_files(krate) {
            if f.starts_with("src/") && !check.covered.contains(&(krate.to_string(), f.clone())) {
                unnamed.push(format!("{krate}/{f}"));
            }
        }
    }
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's code map does not name {unnamed:?}: add a line saying what each is, in its crate's section"
    );
    assert!(
        check.ambiguous.is_empty(),
        "ARCHITECTURE.md names files whose name is not unique in their crate: {:?} — write the path",
        check.ambiguous
    );
}

#[test]
fn every_file_the_code_map_names_exists_where_it_says() {
    let check = check_map();
    assert!(
        check.missing.is_empty(),
        "ARCHITECTURE.md names files or folders that are not there: {:?}",
        check.missing
    );
}

#[test]
fn no_source_file_outgrows_the_style_guide() {
    let mut long = Vec::new();
    for krate in MAPPED {
        // Every source of the crate: its library and binaries, and its tests and benches too.
        for f in crate_files(krate) {
            let path = format!("{krate}/{f}");
            let lines = read(&root().join(&path)).lines().count();
            let allowed = LONG_FILES.iter().any(|(name, _)| *name == path);
            if lines > MAX_LINES && !allowed {
                long.push(format!("{path} ({lines} lines)"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "past {MAX_LINES} lines: {long:?} — split by what the parts do, or record why in LONG_FILES"
    );
}

/// No two library or binary sources of a crate share a base name, so a name says one thing
/// (`scheduler.rs` once meant the transitioner in one folder and BOINC's RPC in another).
/// `mod.rs`, `lib.rs` and `main.rs` aside, and the store's conformance suite, whose files are
/// named after the topics they test.
#[test]
fn no_two_sources_share_a_base_name() {
    for krate in ["common", "compute", "cli", "coordinator", "worker"] {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for f in crate_files(krate) {
            let Some(rel) = f.strip_prefix("src/") else {
                continue;
            };
            let base = rel.rsplit('/').next().unwrap();
            if ["mod.rs", "lib.rs", "main.rs"].contains(&base)
                || rel.starts_with("store/conformance/")
            {
                continue;
            }
            seen.entry(base.to_string())
                .or_default()
                .push(rel.to_string());
        }
        let repeated: Vec<_> = seen.values().filter(|files| files.len() > 1).collect();
        assert!(
            repeated.is_empty(),
            "{krate}: base names repeat: {repeated:?}"
        );
    }
}

/// The `c960-*` names in a manifest's `[dependencies]` table.
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && line.starts_with("c960-") {
            out.push(line.split(['.', ' ', '=']).next().unwrap().to_string());
        }
    }
    out
}

#[test]
fn crates_depend_only_on_the_layers_below() {
    for (krate, allowed) in LAYERS {
        let deps = workspace_dependencies(&read(&root().join(krate).join("Cargo.toml")));
        let above: Vec<_> = deps
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            above.is_empty(),
            "{krate} depends on {above:?}, above its layer"
        );
    }
    // The coordinator takes the worker only for `run`, an optional feature.
    let coordinator = read(&root().join("coordinator/Cargo.toml"));
    let worker_dep = coordinator
        .lines()
        .find(|l| l.starts_with("c960-worker"))
        .unwrap();
    assert!(worker_dep.contains("optional = true"), "{worker_dep}");
}

/// A crate's modules (`store::sql::leases`) and their files.
fn modules(krate: &str) -> BTreeMap<String, String> {
    crate_files(krate)
        .into_iter()
        .filter_map(|f| {
            let m = f.strip_prefix("src/")?.strip_suffix(".rs")?.to_string();
            let m = m.strip_suffix("/mod").unwrap_or(&m).replace('/', "::");
            (m != "lib" && m != "main").then(|| (m, format!("{krate}/{f}")))
        })
        .collect()
}

pub(super) use super::rust_source::code_of;

/// Module → the modules of its crate it uses (not its ancestors or descendants), read with a
/// Rust parser from whole files ([`super::rust_source`]).
fn module_graph(krate: &str) -> BTreeMap<String, BTreeSet<String>> {
    let sources = modules(krate)
        .into_iter()
        .map(|(m, file)| (m, read(&root().join(file))))
        .collect();
    rust_source::graph(&sources)
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_import_circle_between_modules() {
    for krate in ["common", "compute", "cli", "coordinator", "worker"] {
        let graph = module_graph(krate);
        assert!(
            graph.len() >= 3,
            "{krate}: the module graph was not read ({graph:?})"
        );
        let found = circles(&graph);
        assert!(found.is_empty(), "{krate}: import circles {found:?}");
    }
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"]),
        ("c", &["a"]),
        ("d", &["a"]),
    ]
    .into_iter()
    .map(|(m, deps)| (m.to_string(), deps.iter().map(|d| d.to_string()).collect()))
    .collect();
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
}

/// The reader sees paths in `use` groups, expressions, macro bodies and through `super`, and
/// nothing of a test-only item.
#[test]
fn the_reader_sees_paths_everywhere_but_in_tests() {
    let code = r#"
use crate::store::{db::{Conn, Row}, codes};
use super::sibling::Thing;
fn f() {
    let x = crate::trust::Integrity::default();
    let page = html! { (crate::label::escape(x)) };
}
#[cfg(test)]
mod tests {
    use crate::api::app;
}
#[cfg(test)]
pub(crate) mod conformance;
pub trait Store {
    fn campaign(&self) -> crate::campaign::NewCampaign;
}
"#;
    let module = ["store".to_string(), "sql".to_string()];
    let uses = rust_source::read_file(code, &module).unwrap();
    let paths: Vec<String> = uses.paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        [
            "store::db::Conn",
            "store::db::Row",
            "store::codes",
            "store::sibling::Thing",
            "trust::Integrity::default",
            "label::escape",
            "campaign::NewCampaign",
        ]
    );
    let code = rust_source::code_of(code);
    assert!(code.contains("pub trait Store"), "{code}");
    assert!(
        !code.contains("crate::api") && !code.contains("conformance"),
        "{code}"
    );
}

/// The reader sees every item of `store/mod.rs`, past its `#[cfg(test)] mod conformance;`
/// (the string scanner it replaced stopped there, and never saw the `Store` trait), and the
/// store's module reads what its trait's signatures name.
#[test]
fn the_reader_sees_every_item_of_the_store_module() {
    let source = read(&root().join("coordinator/src/store/mod.rs"));
    let uses = rust_source::read_file(&source, &["store".to_string()]).unwrap();
    // Top-level items as the text shows them: a line at the left margin that starts one.
    let starts = [
        "pub fn ",
        "fn ",
        "pub trait ",
        "pub mod ",
        "mod ",
        "pub(crate) mod ",
        "pub use ",
        "use ",
        "pub struct ",
        "pub enum ",
        "pub const ",
        "impl",
    ];
    let in_text = source
        .lines()
        .filter(|l| starts.iter().any(|s| l.starts_with(s)))
        .count();
    assert_eq!(uses.items.len(), in_text, "{:?}", uses.items);
    assert!(
        uses.items.iter().any(|i| i == "trait Store"),
        "{:?}",
        uses.items
    );
    let graph = module_graph("coordinator");
    for below in ["model", "work::campaign", "integrity::trust"] {
        assert!(graph["store"].contains(below), "{:?}", graph["store"]);
    }
}

/// The coordinator's floors, lowest first: each module (by its first path segment) with the
/// floor it stands on. A module imports its own floor and the floors below, never one above
/// (ARCHITECTURE.md, "Floors").
const COORDINATOR_FLOORS: &[(&str, &[&str])] = &[
    ("vocabulary", &["model"]),
    // The pure rules, and the leaf utilities every floor above uses (the clock, metrics, the
    // addresses behind proxies, BOINC's XML and signatures).
    (
        "rules",
        &[
            "work",
            "integrity",
            "explorer",
            "clock",
            "export::self_play",
            "export::balance_report",
            "net::boinc",
            "net::metrics",
            "net::proxies",
        ],
    ),
    ("store", &["store"]),
    (
        "services",
        &["integrity::checker", "export", "net::conn", "net::tls"],
    ),
    ("front doors", &["net", "net::api"]),
    ("entry", &["run"]),
];

/// The floor of a module (`store::sql::leases` → the store's; `integrity::checker` → the
/// services', though the rest of `integrity` is rules), as an index into [`COORDINATOR_FLOORS`].
fn floor_of(module: &str) -> Option<usize> {
    // The longest entry that is the module or one of its ancestors.
    let covers = |entry: &str| module == entry || module.starts_with(&format!("{entry}::"));
    COORDINATOR_FLOORS
        .iter()
        .enumerate()
        .flat_map(|(floor, (_, entries))| entries.iter().map(move |e| (floor, *e)))
        .filter(|(_, e)| covers(e))
        .max_by_key(|(_, e)| e.len())
        .map(|(floor, _)| floor)
}

/// Arrows from a module to one on a higher floor, as `from -> to`.
fn arrows_up(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut up = Vec::new();
    for (from, deps) in graph {
        for to in deps {
            if floor_of(to) > floor_of(from) {
                up.push(format!("{from} -> {to}"));
            }
        }
    }
    up
}

/// Every module of the coordinator's library stands on a floor, and no import runs up: the
/// vocabulary imports nothing of the coordinator, the pure rules import only it and each
/// other, the store implements its contract over both, and so on up to the front doors.
#[test]
fn coordinator_imports_run_only_down_the_floors() {
    let graph = module_graph("coordinator");
    let unplaced: Vec<&String> = graph
        .keys()
        .filter(|m| !m.starts_with("cli_") && floor_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules on no floor (add them to COORDINATOR_FLOORS and the map): {unplaced:?}"
    );
    let up = arrows_up(&graph);
    assert!(up.is_empty(), "imports running up a floor: {up:#?}");
    assert!(
        graph["model"].is_empty()
            && graph["model::records"]
                .iter()
                .all(|m| m.starts_with("model")),
        "the vocabulary imports nothing of the coordinator: {:?}",
        graph["model::records"]
    );
}

#[test]
fn the_floor_check_sees_an_arrow_up() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("model::records", &["work::transitioner"][..]),
        ("work::judge", &["store", "model"]),
        ("integrity::trust", &["integrity::checker", "model"]),
        ("net::api::workers", &["store"]),
    ]
    .into_iter()
    .map(|(m, deps)| (m.to_string(), deps.iter().map(|d| d.to_string()).collect()))
    .collect();
    assert_eq!(
        arrows_up(&graph),
        [
            "integrity::trust -> integrity::checker",
            "model::records -> work::transitioner",
            "work::judge -> store"
        ]
    );
}

/// Words that start an SQL statement in a string literal.
const SQL: &[&str] = &[
    "\"SELECT ",
    "\"INSERT INTO",
    "\"UPDATE ",
    "\"DELETE FROM",
    "\"CREATE TABLE",
    "\"WITH ",
];

#[test]
fn no_sql_outside_the_store() {
    let mut outside = Vec::new();
    for krate in ["common", "compute", "cli", "coordinator", "worker"] {
        for f in crate_files(krate) {
            if !f.starts_with("src/") || (krate == "coordinator" && f.starts_with("src/store/")) {
                continue;
            }
            let code = code_of(&read(&root().join(krate).join(&f)));
            if SQL.iter().any(|s| code.contains(s)) {
                outside.push(format!("{krate}/{f}"));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "SQL outside coordinator/src/store/: {outside:?}"
    );
}

#[test]
fn only_the_binaries_and_run_import_the_api() {
    let mut importers = Vec::new();
    for f in crate_files("coordinator") {
        let Some(rel) = f.strip_prefix("src/") else {
            continue;
        };
        let entry = rel == "main.rs" || rel == "run.rs" || rel.starts_with("cli_");
        if rel.starts_with("net/api/") || entry {
            continue;
        }
        let module: Vec<String> = rel
            .trim_end_matches(".rs")
            .trim_end_matches("/mod")
            .split('/')
            .map(str::to_string)
            .collect();
        let uses = rust_source::read_file(&read(&root().join("coordinator").join(&f)), &module)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        if uses
            .paths
            .iter()
            .any(|p| p.starts_with(&["net".to_string(), "api".to_string()]))
        {
            importers.push(f);
        }
    }
    assert!(
        importers.is_empty(),
        "below the API layer but importing it: {importers:?}"
    );
}

/// docs/protocol.md's table of error codes and `ErrorCode` list the same codes: the one
/// vocabulary the coordinator answers with and the worker acts on.
#[test]
fn the_protocol_doc_lists_every_error_code_and_no_other() {
    use c960_common::error_code::ErrorCode;
    let doc = read(&root().join("docs/protocol.md"));
    let table = doc
        .split("## Error codes")
        .nth(1)
        .expect("docs/protocol.md has an Error codes section");
    let table = table.split("\n## ").next().unwrap();
    let mut documented = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| ")) {
        let code_cell = row.split('|').nth(2).unwrap_or("");
        for code in code_cell.split('`').skip(1).step_by(2) {
            documented.insert(code.to_string());
        }
    }
    let known: BTreeSet<String> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    assert!(documented.len() > 30, "{documented:?}");
    let undocumented: Vec<_> = known.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&known).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "ErrorCode without a row in docs/protocol.md: {undocumented:?}; documented codes ErrorCode lacks: {unknown:?}"
    );
}
