//! `c960-worker boinc-app` as the BOINC client runs it: a real process in a slot directory laid
//! out as the client lays it (link files to the project directory, `init_data.xml`), checked
//! for the submission it leaves and for what it does with bad input.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;

use c960_common::digest::result_digest;
use c960_common::wire::{
    AnalysisEngine, Assignment, PROTOCOL_VERSION, PositionSpec, SubmitRequest, WorkResult,
    WorkUnitKind,
};

/// The client's project directory name for `http://127.0.0.1:8960/boinc/`.
const PROJECT: &str = "projects/127.0.0.1_8960_boinc";

/// A client directory with one slot: `wu.json` and `result.json` are link files into the
/// project directory, as the client writes them (`<soft_link>` lines).
struct Slot {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Slot {
    fn new(input: Option<&[u8]>, ncpus: &str) -> Slot {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        fs::create_dir_all(root.join(PROJECT)).unwrap();
        fs::create_dir_all(root.join("slots/3")).unwrap();
        if let Some(bytes) = input {
            fs::write(root.join(PROJECT).join("wu_7_in"), bytes).unwrap();
        }
        let link = |name: &str, file: &str| {
            fs::write(
                root.join("slots/3").join(name),
                format!("<soft_link>../../{PROJECT}/{file}</soft_link>\n"),
            )
            .unwrap()
        };
        link("wu.json", "wu_7_in");
        link("result.json", "wu_7_r0_out");
        link("c960-worker", "c960-worker_100_x86_64-pc-linux-gnu");
        fs::write(
            root.join("slots/3/init_data.xml"),
            format!(
                "<app_init_data>\n<major_version>7</major_version>\n<slot>3</slot>\n\
                 <wu_name>wu_7</wu_name>\n<result_name>wu_7_r0</result_name>\n\
                 <ncpus>{ncpus}</ncpus>\n<rsc_fpops_est>1000000000.000000</rsc_fpops_est>\n\
                 <host_info>\n<p_ncpus>16</p_ncpus>\n</host_info>\n\
                 <global_preferences>\n<max_ncpus_pct>100.000000</max_ncpus_pct>\n</global_preferences>\n\
                 </app_init_data>\n"
            ),
        )
        .unwrap();
        Slot { _dir: dir, root }
    }

    fn slot(&self) -> PathBuf {
        self.root.join("slots/3")
    }

    fn output(&self) -> PathBuf {
        self.root.join(PROJECT).join("wu_7_r0_out")
    }

    /// Runs the app as the client does: cwd the slot, argv[0] the project file, the workunit's
    /// command line after it.
    fn run(&self) -> Output {
        Command::new(env!("CARGO_BIN_EXE_c960-worker"))
            .arg0(format!(
                "../../{PROJECT}/c960-worker_100_x86_64-pc-linux-gnu"
            ))
            .arg("boinc-app")
            .current_dir(self.slot())
            .output()
            .unwrap()
    }

    fn finished(&self) -> bool {
        self.slot().join("boinc_finish_called").exists()
    }
}

fn assignment(kind: WorkUnitKind) -> Assignment {
    Assignment {
        lease_id: 41,
        workunit_id: 7,
        kind,
        deadline_unix_ms: 1_900_000_000_000,
    }
}

fn perft(depth: u32) -> WorkUnitKind {
    WorkUnitKind::Perft {
        position: PositionSpec::StartPosition(518),
        depth,
    }
}

#[test]
fn a_perft_workunit_leaves_the_submission_work_would_make() {
    let a = assignment(perft(4));
    let slot = Slot::new(Some(&serde_json::to_vec(&a).unwrap()), "2.000000");
    let out = slot.run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // One line for the project's stderr_out, naming the threads taken from <ncpus>.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("workunit 7")
            && stderr.contains("197,281 nodes")
            && stderr.contains("2 threads"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(slot.slot().join("boinc_finish_called")).unwrap(),
        "0\n"
    );
    // Written where the link points; the link file left as it was.
    assert_eq!(
        fs::read_to_string(slot.slot().join("result.json")).unwrap(),
        format!("<soft_link>../../{PROJECT}/wu_7_r0_out</soft_link>\n")
    );
    let req: SubmitRequest = serde_json::from_slice(&fs::read(slot.output()).unwrap()).unwrap();
    assert_eq!(req.protocol, PROTOCOL_VERSION);
    assert_eq!((req.lease_id, req.workunit_id), (41, 7));
    assert_eq!(req.engine.name, "c960-common");
    let WorkResult::Perft(p) = &req.result else {
        panic!("not a perft result: {:?}", req.result);
    };
    assert_eq!(p.nodes, 197_281);
    assert_eq!(p.divide.len(), 20);
    assert_eq!(p.divide.iter().map(|(_, n)| n).sum::<u64>(), 197_281);
    // The digest the coordinator recomputes, over the result the shared compute code gives.
    assert_eq!(req.digest, result_digest(7, &a.kind, &req.result));
    let expected =
        c960_compute::compute::compute(&a.kind, &AtomicBool::new(false), |_, _, _| {}).unwrap();
    assert_eq!(req.result, WorkResult::Perft(expected));
    // Nothing else left behind in the project directory or the slot.
    let names = |dir: &Path| {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&slot.root.join(PROJECT)), ["wu_7_in", "wu_7_r0_out"]);
    assert_eq!(
        names(&slot.slot()),
        [
            "boinc_finish_called",
            "c960-worker",
            "init_data.xml",
            "result.json",
            "wu.json"
        ]
    );
}

#[test]
fn a_builtin_analysis_runs_on_one_thread_without_init_data() {
    let a = assignment(WorkUnitKind::Analysis {
        position: PositionSpec::StartPosition(518),
        depth: 2,
        engine: AnalysisEngine::Builtin,
        hash_mib: 1,
    });
    let slot = Slot::new(Some(&serde_json::to_vec(&a).unwrap()), "1");
    fs::remove_file(slot.slot().join("init_data.xml")).unwrap();
    let out = slot.run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 thread"), "{stderr}");
    let req: SubmitRequest = serde_json::from_slice(&fs::read(slot.output()).unwrap()).unwrap();
    assert!(matches!(req.result, WorkResult::Analysis(_)));
    assert_eq!(req.digest, result_digest(7, &a.kind, &req.result));
    assert!(slot.finished());
}

#[test]
fn bad_input_is_one_line_a_failure_and_no_finish_file() {
    let uci = serde_json::to_vec(&assignment(WorkUnitKind::Analysis {
        position: PositionSpec::StartPosition(518),
        depth: 2,
        engine: AnalysisEngine::Uci,
        hash_mib: 1,
    }))
    .unwrap();
    // A position no legal game reaches: refused by the shared compute code, as `work` refuses it.
    let no_kings = serde_json::to_vec(&assignment(WorkUnitKind::Perft {
        position: PositionSpec::Fen("8/8/8/8/8/8/8/8 w - - 0 1".into()),
        depth: 2,
    }))
    .unwrap();
    let cases: [(Option<&[u8]>, &str); 5] = [
        (None, "cannot read the workunit wu.json"),
        (
            Some(b"{\"lease_id\": 1"),
            "wu.json is not a c960 assignment",
        ),
        (Some(b"[1, 2, 3]"), "wu.json is not a c960 assignment"),
        (Some(&uci), "UCI engine"),
        (Some(&no_kings), "workunit 7"),
    ];
    for (input, says) in cases {
        let slot = Slot::new(input, "1.000000");
        let out = slot.run();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{says}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{says}: {stderr}"
        );
        assert!(!slot.finished(), "{says}");
        assert!(!slot.output().exists(), "{says}");
    }
}
