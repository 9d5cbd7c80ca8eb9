//! `c960-worker boinc-app`: one workunit as a BOINC application (issue 33,
//! docs/boinc-design.md §5). The stock BOINC client starts it in a slot directory; it computes
//! the assignment there exactly as `work` would and leaves the submission for the client to
//! upload, which the coordinator judges like any other.
//!
//! The contract with the coordinator's BOINC side:
//! - input, open name [`INPUT`] (`wu.json`): `serde_json` of a [`wire::Assignment`];
//! - output, open name [`OUTPUT`] (`result.json`): `serde_json` of the [`wire::SubmitRequest`]
//!   `work` would submit for it (same result, same digest: [`crate::assignment::submit_request`]).
//!
//! And with the client: names resolve through the slot's link files ([`resolve`]), the thread
//! count is the top-level `<ncpus>` of `init_data.xml` ([`init_data_threads`]), the output is
//! written where its link points (never over the link file), and success is the file
//! [`FINISH_FILE`] holding `0` written last, then exit status 0. Bad input is one line on
//! stderr and a non-zero exit without that file: the client reports a compute error with the
//! line.
//!
//! The client controls a running task only through the shared-memory channels of
//! `boinc_mmap_file` ([`shm`]): it asks for suspend, resume, quit and abort there and never
//! signals the app itself. So `boinc-app` is a small supervisor ([`supervisor`], BOINC's own
//! wrapper works the same way): it runs the computation as a child process (itself again, as
//! `boinc-app --compute`: [`compute`]), stops and continues it on suspend and resume, kills it
//! and exits on quit, abort or when the client is gone, and reports the child's CPU time and
//! the fraction done. There is no checkpoint: a task quit (the client exiting, or preempted
//! out of memory) is recomputed from the beginning when the client restarts it, so a restart
//! can never change a result.
//!
//! [`wire::Assignment`]: c960_common::wire::Assignment
//! [`wire::SubmitRequest`]: c960_common::wire::SubmitRequest

pub mod shm;
#[cfg(unix)]
pub mod supervisor;

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use c960_common::wire::{AnalysisEngine, Assignment, WorkUnitKind};
use c960_common::{PerftEngine, PerftOptions};
use c960_compute::compute::compute_any;

use crate::assignment::submit_request;
use crate::machine;
use crate::report::{self, thousands};

/// The open name of the workunit's input file.
pub const INPUT: &str = "wu.json";
/// The open name of the result's output file.
pub const OUTPUT: &str = "result.json";
/// What the client writes into the slot for the app (`write_init_data_file`).
pub const INIT_DATA: &str = "init_data.xml";
/// Written last, holding `0`: tells the client the app finished (`boinc_finish`); an exit
/// without it is a premature exit, and the task is restarted rather than reported.
pub const FINISH_FILE: &str = "boinc_finish_called";
/// The most threads `<ncpus>` is taken for (a garbled huge value must not spawn thousands).
const MAX_THREADS: u32 = 1024;
/// How much of a link file's first line the client reads (`resolve_soft_link`'s buffer).
const LINK_LINE_BYTES: u64 = 512;

/// Runs the workunit of the slot `slot` (the current directory when the client starts it)
/// under the client's control: the computation in a child process ([`supervisor::run`]), and
/// [`FINISH_FILE`] written when it succeeded. `Ok` holds the exit status (a failed child's,
/// whose stderr already said why); `Err` is one line for stderr.
#[cfg(unix)]
pub fn run(slot: &Path) -> Result<ExitCode> {
    supervisor::run(slot)
}

/// Runs the workunit of the slot `slot` in this process (no process control off Unix).
#[cfg(not(unix))]
pub fn run(slot: &Path) -> Result<ExitCode> {
    compute(slot, |_, _| {})?;
    finish(slot)?;
    Ok(ExitCode::SUCCESS)
}

/// Computes the workunit of the slot `slot` and writes the result where [`OUTPUT`] points,
/// with one summary line on stderr (the client sends stderr to the project with the result);
/// `progress` hears `(done, total)` steps as they complete (root moves of a perft, games of a
/// self-play; nothing for an analysis). The child process of [`run`] (`boinc-app --compute`).
pub fn compute(slot: &Path, progress: impl FnMut(usize, usize)) -> Result<()> {
    let mut progress = progress;
    let input = resolve(slot, INPUT);
    let bytes = fs::read(&input)
        .with_context(|| format!("cannot read the workunit {INPUT} ({})", input.display()))?;
    let assignment: Assignment = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow!("{INPUT} is not a c960 assignment: {e}"))?;
    check_kind(&assignment.kind)?;
    let threads = match fs::read_to_string(slot.join(INIT_DATA)) {
        Ok(xml) => init_data_threads(&xml),
        Err(_) => 1,
    };
    // The perft table is `work`'s default; other kinds have a table of their own per search.
    let hash_mib = match assignment.kind {
        WorkUnitKind::Perft { .. } => machine::default_hash_mib(machine::memory_mib()),
        _ => 0,
    };
    // Named with the result, as `work` names it: the table's provenance shows two seeds.
    let seed: u64 = rand::random();
    let perft = PerftEngine::new(PerftOptions {
        threads: threads as usize,
        hash_mib: hash_mib as usize,
        seed,
    });
    let started = Instant::now();
    // No UCI engine: `check_kind` refused the workunits that need one.
    let result = compute_any(
        &assignment.kind,
        &AtomicBool::new(false),
        &perft,
        None,
        |done, total, _| progress(done, total),
    )
    .map_err(|e| anyhow!("workunit {}: {e}", assignment.workunit_id))?;
    let elapsed = started.elapsed();
    let nodes = result.nodes();
    let submission = submit_request(
        &assignment,
        result,
        elapsed,
        crate::client::engine_with_seed(seed),
    );
    let json = serde_json::to_vec(&submission).context("cannot encode the result")?;
    write_whole(&resolve(slot, OUTPUT), &json)?;
    eprintln!(
        "c960-worker {} boinc-app: workunit {} ({}): {} nodes in {} with {}",
        crate::ENGINE_VERSION,
        assignment.workunit_id,
        report::workunit(&assignment.kind),
        thousands(u128::from(nodes)),
        report::duration(elapsed),
        report::count(u64::from(threads), "thread"),
    );
    Ok(())
}

/// Tells the client the task finished: [`FINISH_FILE`] holding `0`, written after the output.
pub fn finish(slot: &Path) -> Result<()> {
    write_whole(&slot.join(FINISH_FILE), b"0\n")
}

/// The line the computing child prints on stdout for its supervisor when `done` of `total`
/// steps are complete.
pub fn progress_line(done: usize, total: usize) -> String {
    format!("progress {done}/{total}")
}

/// The fraction done a [`progress_line`] says: in 0..=1, `None` for any other line.
pub fn parse_progress_line(line: &str) -> Option<f64> {
    let (done, total) = line.strip_prefix("progress ")?.split_once('/')?;
    let (done, total) = (done.parse::<usize>().ok()?, total.parse::<usize>().ok()?);
    (total > 0 && done <= total).then(|| done as f64 / total as f64)
}

/// Refuses what the app cannot compute: a slot has no UCI engine.
fn check_kind(kind: &WorkUnitKind) -> Result<()> {
    match kind {
        WorkUnitKind::Analysis {
            engine: AnalysisEngine::Uci,
            ..
        }
        | WorkUnitKind::SelfPlay {
            engine: AnalysisEngine::Uci,
            ..
        } => bail!(
            "{INPUT} asks for a UCI engine ({}); the BOINC app computes perft and built-in analysis and self-play only",
            report::workunit(kind)
        ),
        _ => Ok(()),
    }
}

/// Where the logical name `logical` of the slot `slot` lives, as the client's
/// `boinc_resolve_filename` finds it: a real symlink is used as it is; a file whose first line
/// holds `<soft_link>PATH</soft_link>` stands for PATH (relative to the slot); anything else,
/// a missing file included, is the file itself.
pub fn resolve(slot: &Path, logical: &str) -> PathBuf {
    let link = slot.join(logical);
    if fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
        return link;
    }
    let mut first = Vec::new();
    let read = fs::File::open(&link).and_then(|f| f.take(LINK_LINE_BYTES).read_to_end(&mut first));
    if read.is_err() {
        return link;
    }
    let line = first.split(|&b| b == b'\n').next().unwrap_or_default();
    match soft_link_target(&String::from_utf8_lossy(line)) {
        Some(target) => slot.join(target),
        None => link,
    }
}

/// The PATH of a line holding `<soft_link>PATH</soft_link>` (white space around it trimmed).
fn soft_link_target(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("<soft_link>")?;
    let (target, _) = rest.split_once("</soft_link>")?;
    let target = target.trim();
    (!target.is_empty()).then(|| target.to_string())
}

/// The threads to use: the top-level `<ncpus>` of `init_data.xml` (the app version's
/// `avg_ncpus`, written as `2.000000`), rounded up, at least 1; 1 when there is none.
pub fn init_data_threads(xml: &str) -> u32 {
    top_level_text(xml, "ncpus")
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|n| n.is_finite() && *n > 0.0)
        .map_or(1, |n| (n.ceil() as u32).clamp(1, MAX_THREADS))
}

/// The process id of the client that started the app: the top-level `<client_pid>` of
/// `init_data.xml`; `None` when there is none (or it is 0, "unknown").
pub fn init_data_client_pid(xml: &str) -> Option<u32> {
    top_level_text(xml, "client_pid")
        .and_then(|t| t.trim().parse::<u32>().ok())
        .filter(|&pid| pid > 0)
}

/// The text of the first element `name` directly inside the root element, skipping nested
/// blocks (`<host_info>` has `<p_ncpus>`, the preferences copied in may have anything),
/// comments, processing instructions and CDATA.
fn top_level_text<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(open) = xml[at..].find('<').map(|i| at + i) {
        let rest = &xml[open..];
        let skip_to = |end: &str| rest.find(end).map(|i| open + i + end.len());
        if rest.starts_with("<!--") {
            at = skip_to("-->")?;
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            at = skip_to("]]>")?;
            continue;
        }
        let close = open + rest.find('>')?;
        let tag = &xml[open + 1..close];
        at = close + 1;
        if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        if tag.starts_with('/') {
            depth = depth.saturating_sub(1);
            continue;
        }
        let tag_name = tag.split_whitespace().next().unwrap_or_default();
        if depth == 1 && tag_name == name {
            let end = at + xml[at..].find('<')?;
            return xml[end..]
                .starts_with(&format!("</{name}>"))
                .then(|| &xml[at..end]);
        }
        depth += 1;
    }
    None
}

/// Writes `bytes` to `path` whole or not at all (a temporary file beside it, renamed), so the
/// client never uploads half a result and a restarted task starts clean.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let written = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_through_link_files_symlinks_or_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let slot = dir.path().join("slots/0");
        fs::create_dir_all(&slot).unwrap();
        fs::write(
            slot.join("wu.json"),
            "<soft_link>../../projects/p/wu_1_in</soft_link>\n",
        )
        .unwrap();
        assert_eq!(
            resolve(&slot, "wu.json"),
            slot.join("../../projects/p/wu_1_in")
        );
        // White space and text around the tag, as the client's parse_str allows.
        fs::write(
            slot.join("out"),
            "  <soft_link> /abs/r_0 </soft_link>  \nsecond line",
        )
        .unwrap();
        assert_eq!(resolve(&slot, "out"), PathBuf::from("/abs/r_0"));
        // Only the first line counts; a file that is no link is the file itself.
        fs::write(slot.join("data"), "{}\n<soft_link>x</soft_link>\n").unwrap();
        assert_eq!(resolve(&slot, "data"), slot.join("data"));
        assert_eq!(resolve(&slot, "missing"), slot.join("missing"));
        fs::write(slot.join("open"), "<soft_link>x\n").unwrap();
        assert_eq!(resolve(&slot, "open"), slot.join("open"));
        std::os::unix::fs::symlink("/somewhere", slot.join("sym")).unwrap();
        assert_eq!(resolve(&slot, "sym"), slot.join("sym"));
    }

    #[test]
    fn threads_are_the_top_level_ncpus() {
        let xml = "<app_init_data>\n<major_version>7</major_version>\n\
                   <project_preferences>\n<ncpus>9</ncpus>\n</project_preferences>\n\
                   <!-- <ncpus>8</ncpus> -->\n<slot>0</slot>\n<empty/>\n\
                   <ncpus>2.000000</ncpus>\n\
                   <host_info>\n<p_ncpus>16</p_ncpus>\n<ncpus>7</ncpus>\n</host_info>\n\
                   </app_init_data>\n";
        assert_eq!(init_data_threads(xml), 2);
        assert_eq!(
            init_data_threads(
                "<?xml version=\"1.0\"?>\n<app_init_data><ncpus>1.5</ncpus></app_init_data>"
            ),
            2
        );
        for none in [
            "",
            "<app_init_data></app_init_data>",
            "<app_init_data><ncpus>0</ncpus></app_init_data>",
            "<app_init_data><ncpus>-3</ncpus></app_init_data>",
            "<app_init_data><ncpus>many</ncpus></app_init_data>",
            "<app_init_data><host_info><ncpus>4</ncpus></host_info></app_init_data>",
            "<app_init_data><ncpus>4",
            "<app_init_data><![CDATA[<ncpus>4</ncpus>",
        ] {
            assert_eq!(init_data_threads(none), 1, "{none:?}");
        }
        assert_eq!(
            init_data_threads("<app_init_data><ncpus>1e9</ncpus></app_init_data>"),
            MAX_THREADS
        );
    }

    #[test]
    fn the_client_pid_is_the_top_level_one() {
        let xml = "<app_init_data>\n<host_info><client_pid>9</client_pid></host_info>\n\
                   <client_pid>4321</client_pid>\n</app_init_data>\n";
        assert_eq!(init_data_client_pid(xml), Some(4321));
        for none in [
            "<app_init_data></app_init_data>",
            "<app_init_data><client_pid>0</client_pid></app_init_data>",
            "<app_init_data><client_pid>-1</client_pid></app_init_data>",
            "<app_init_data><client_pid>x</client_pid></app_init_data>",
        ] {
            assert_eq!(init_data_client_pid(none), None, "{none:?}");
        }
    }

    #[test]
    fn progress_lines_say_the_fraction_done() {
        assert_eq!(parse_progress_line(&progress_line(5, 20)), Some(0.25));
        assert_eq!(parse_progress_line(&progress_line(0, 3)), Some(0.0));
        assert_eq!(parse_progress_line(&progress_line(3, 3)), Some(1.0));
        for other in [
            "",
            "progress 1/0",
            "progress 4/3",
            "progress x/3",
            "1/2",
            "progress 1/2/3",
        ] {
            assert_eq!(parse_progress_line(other), None, "{other:?}");
        }
    }

    #[test]
    fn uci_workunits_are_refused() {
        use c960_common::wire::PositionSpec;
        let position = PositionSpec::StartPosition(518);
        assert!(
            check_kind(&WorkUnitKind::Perft {
                position: position.clone(),
                depth: 3
            })
            .is_ok()
        );
        let builtin = WorkUnitKind::Analysis {
            position: position.clone(),
            depth: 3,
            engine: AnalysisEngine::Builtin,
            hash_mib: 16,
        };
        assert!(check_kind(&builtin).is_ok());
        let uci = WorkUnitKind::Analysis {
            position,
            depth: 3,
            engine: AnalysisEngine::Uci,
            hash_mib: 16,
        };
        let e = check_kind(&uci).unwrap_err().to_string();
        assert!(e.contains("UCI") && !e.contains('\n'), "{e}");
    }
}
