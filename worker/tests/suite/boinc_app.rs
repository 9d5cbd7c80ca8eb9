//! `c960-worker boinc-app` as the BOINC client runs it: a real process in a slot directory laid
//! out as the client lays it (link files to the project directory, `init_data.xml`, the
//! shared-memory channel file), checked for the submission it leaves, for what it does with
//! bad input, and for how it answers the client's process control (this file plays the client:
//! it writes requests into channel 0 and reads the status channel as the client does).

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::{Duration, Instant};

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
        Slot::with_init_data(input, &format!("<ncpus>{ncpus}</ncpus>\n"))
    }

    /// A slot whose `init_data.xml` has `top` among its top-level elements.
    fn with_init_data(input: Option<&[u8]>, top: &str) -> Slot {
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
                 {top}<rsc_fpops_est>1000000000.000000</rsc_fpops_est>\n\
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
        self.command().output().unwrap()
    }

    fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_c960-worker"));
        command
            .arg0(format!(
                "../../{PROJECT}/c960-worker_100_x86_64-pc-linux-gnu"
            ))
            .arg("boinc-app")
            .current_dir(self.slot());
        command
    }

    /// Starts the app with the channel file the client maps (8 channels of 1024 zero bytes),
    /// stderr captured.
    fn start_with_channels(&self) -> App {
        fs::write(self.slot().join("boinc_mmap_file"), [0u8; 8192]).unwrap();
        let child = self
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        App {
            child,
            channels: self.slot().join("boinc_mmap_file"),
        }
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
    // Deeper than any perft is counted: refused, not a stack overflow in the recursion.
    let too_deep = serde_json::to_vec(&assignment(perft(200))).unwrap();
    let cases: [(Option<&[u8]>, &str); 6] = [
        (None, "cannot read the workunit wu.json"),
        (
            Some(b"{\"lease_id\": 1"),
            "wu.json is not a c960 assignment",
        ),
        (Some(b"[1, 2, 3]"), "wu.json is not a c960 assignment"),
        (Some(&uci), "UCI engine"),
        (Some(&no_kings), "workunit 7"),
        (Some(&too_deep), "perft depth 200 is out of range 0..20"),
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

/// A running app, and its channel file as the client sees it. Killed when dropped (a failed
/// test leaves no computation behind: the computing child dies with the app).
struct App {
    child: Child,
    channels: PathBuf,
}

/// Where channel `index` starts in the file, and its size.
const CHANNEL: usize = 1024;
/// Client → app: process control.
const PROCESS_CONTROL: usize = 0;
/// App → client: status.
const APP_STATUS: usize = 5 * CHANNEL;

/// What the app's status message said.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Status {
    cpu_seconds: f64,
    fraction_done: f64,
}

impl App {
    fn file(&self) -> Vec<u8> {
        fs::read(&self.channels).unwrap()
    }

    /// Sends a process-control message as the client's `send_msg` does: into an empty channel,
    /// the text and its NUL first, the flag last.
    fn send(&self, message: &str) {
        assert_eq!(
            self.file()[PROCESS_CONTROL],
            0,
            "the last request is unread"
        );
        self.write_at(PROCESS_CONTROL + 1, &[message.as_bytes(), &[0]].concat());
        self.write_at(PROCESS_CONTROL, &[1]);
    }

    /// Writes `bytes` at `offset` of the channel file, and nothing else: the app writes its
    /// own channel meanwhile.
    fn write_at(&self, offset: usize, bytes: &[u8]) {
        use std::os::unix::fs::FileExt as _;
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&self.channels)
            .unwrap();
        f.write_all_at(bytes, offset as u64).unwrap();
    }

    /// Whether the app took the last request (cleared its flag).
    fn request_taken(&self) -> bool {
        self.file()[PROCESS_CONTROL] == 0
    }

    /// Takes the pending status message, as the client's `get_msg` does.
    fn take_status(&self) -> Option<Status> {
        let bytes = self.file();
        if bytes[APP_STATUS] == 0 {
            return None;
        }
        let text = &bytes[APP_STATUS + 1..APP_STATUS + CHANNEL];
        let text = String::from_utf8_lossy(&text[..text.iter().position(|&b| b == 0).unwrap()])
            .into_owned();
        self.write_at(APP_STATUS, &[0]);
        let field = |tag: &str| -> f64 {
            let (_, rest) = text.split_once(&format!("<{tag}>")).unwrap();
            rest.split_once('<').unwrap().0.trim().parse().unwrap()
        };
        assert!(
            text.contains("<checkpoint_cpu_time>0</checkpoint_cpu_time>"),
            "{text}"
        );
        Some(Status {
            cpu_seconds: field("current_cpu_time"),
            fraction_done: field("fraction_done"),
        })
    }

    /// The next status message, waiting for it (the app sends one a second) as long as the app
    /// runs.
    fn next_status(&mut self) -> Status {
        loop {
            if let Some(status) = self.take_status() {
                return status;
            }
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "the app ended early"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Statuses until the computation has used some CPU: it is under way.
    fn wait_until_computing(&mut self) -> Status {
        loop {
            let status = self.next_status();
            if status.cpu_seconds > 0.0 {
                return status;
            }
        }
    }

    /// The computing child's process id (the app's only child).
    fn computing_child(&self) -> u32 {
        let parent = self.child.id().to_string();
        let children: Vec<u32> = fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    let after_name = stat.rsplit_once(')').map_or("", |(_, r)| r);
                    after_name.split_whitespace().nth(1) == Some(parent.as_str())
                })
            })
            .collect();
        assert_eq!(children.len(), 1, "{children:?}");
        children[0]
    }

    /// Waits for the app's exit, taking the statuses it sends meanwhile (the last one comes
    /// with its exit); a hang is a failure, not a wait for ever.
    fn wait(mut self, mut statuses: impl FnMut(Status)) -> (std::process::ExitStatus, String) {
        let started = Instant::now();
        let exit = loop {
            if let Some(status) = self.take_status() {
                statuses(status);
            }
            if let Some(exit) = self.child.try_wait().unwrap() {
                break exit;
            }
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "the app does not end"
            );
            thread::sleep(Duration::from_millis(50));
        };
        if let Some(status) = self.take_status() {
            statuses(status);
        }
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        (exit, stderr)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A perft of some seconds' CPU on one thread even with the app's hash table (kiwipete: 48 root
/// moves, so the fraction done moves in small steps).
fn long_perft() -> WorkUnitKind {
    WorkUnitKind::Perft {
        position: PositionSpec::Fen(
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1".into(),
        ),
        depth: 6,
    }
}

/// The perft of [`long_perft`], as the literature has it.
const LONG_PERFT_NODES: u64 = 8_031_647_685;

#[test]
fn a_suspended_task_stops_computing_and_resumes_to_the_same_result() {
    let a = assignment(long_perft());
    let slot = Slot::new(Some(&serde_json::to_vec(&a).unwrap()), "1.000000");
    let mut app = slot.start_with_channels();
    app.wait_until_computing();
    let child = app.computing_child();
    app.send("<suspend/>");
    while !app.request_taken() {
        thread::sleep(Duration::from_millis(20));
    }
    // The status sent with the request may have been read as the stop landed: skip it, then
    // three more, a second apart, all the same CPU time.
    app.next_status();
    let suspended: Vec<Status> = (0..3).map(|_| app.next_status()).collect();
    let stopped_at = suspended[0].cpu_seconds;
    assert!(
        suspended.iter().all(|s| s.cpu_seconds == stopped_at),
        "CPU time grew while suspended: {suspended:?}"
    );
    // Stopped ('T'), not merely idle: the client never sends a signal itself.
    let stat = fs::read_to_string(format!("/proc/{child}/stat")).unwrap();
    let state = stat.rsplit_once(')').unwrap().1.split_whitespace().next();
    assert_eq!(state, Some("T"), "{stat}");
    app.send("<resume/>");
    let mut seen = Vec::new();
    let (exit, stderr) = app.wait(|s| seen.push(s));
    assert!(exit.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // The computation went on after the resume, and reported its progress on the way.
    let last = *seen.last().expect("a status after the resume");
    assert!(last.cpu_seconds > stopped_at, "{seen:?}");
    assert_eq!(last.fraction_done, 1.0, "{seen:?}");
    assert!(
        seen.iter()
            .all(|s| s.fraction_done >= 0.0 && s.fraction_done <= 1.0),
        "{seen:?}"
    );
    assert!(
        seen.windows(2)
            .all(|w| w[0].cpu_seconds <= w[1].cpu_seconds
                && w[0].fraction_done <= w[1].fraction_done),
        "{seen:?}"
    );
    assert!(slot.finished());
    // The same result as the shared compute code's undisturbed run.
    let req: SubmitRequest = serde_json::from_slice(&fs::read(slot.output()).unwrap()).unwrap();
    let expected =
        c960_compute::compute::compute(&a.kind, &AtomicBool::new(false), |_, _, _| {}).unwrap();
    assert_eq!(expected.nodes, LONG_PERFT_NODES);
    assert_eq!(req.result, WorkResult::Perft(expected));
    assert_eq!(req.digest, result_digest(7, &a.kind, &req.result));
}

#[test]
fn quit_and_abort_stop_the_task_at_once_and_a_restart_computes_afresh() {
    let a = assignment(long_perft());
    let slot = Slot::new(Some(&serde_json::to_vec(&a).unwrap()), "1.000000");
    for (request, code, says) in [
        ("<abort/>", 194, "aborted"),
        ("<quit/>", 0, "asked to quit"),
    ] {
        let mut app = slot.start_with_channels();
        app.wait_until_computing();
        let child = app.computing_child();
        app.send(request);
        let (exit, stderr) = app.wait(|_| {});
        assert_eq!(exit.code(), Some(code), "{request}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{request}: {stderr}");
        // No computation left running, nothing for the client to report.
        assert!(
            !Path::new(&format!("/proc/{child}")).exists(),
            "{request}: the computation survived"
        );
        assert!(!slot.finished(), "{request}");
        assert!(!slot.output().exists(), "{request}");
    }
    // The client restarts a quit task in the same slot: computed from the beginning, right.
    let mut app = slot.start_with_channels();
    app.wait_until_computing();
    let (exit, stderr) = app.wait(|_| {});
    assert!(exit.success(), "{stderr}");
    assert!(slot.finished());
    let req: SubmitRequest = serde_json::from_slice(&fs::read(slot.output()).unwrap()).unwrap();
    let WorkResult::Perft(p) = &req.result else {
        panic!("not a perft result: {:?}", req.result);
    };
    assert_eq!(p.nodes, LONG_PERFT_NODES);
    assert_eq!(p.divide.len(), 48);
    assert_eq!(
        p.divide.iter().map(|(_, n)| n).sum::<u64>(),
        LONG_PERFT_NODES
    );
    assert_eq!(req.digest, result_digest(7, &a.kind, &req.result));
}

#[test]
fn the_task_ends_when_the_client_is_gone() {
    // Minutes of work (Kiwipete's perft(7)), so that only the client's end can end the task:
    // the depth-6 workunit of the other tests once finished first on a fast machine.
    let a = assignment(WorkUnitKind::Perft {
        position: PositionSpec::Fen(
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1".into(),
        ),
        depth: 7,
    });
    let mut client = Command::new("sleep").arg("600").spawn().unwrap();
    let slot = Slot::with_init_data(
        Some(&serde_json::to_vec(&a).unwrap()),
        &format!(
            "<ncpus>1</ncpus>\n<client_pid>{}</client_pid>\n",
            client.id()
        ),
    );
    let mut app = slot.start_with_channels();
    app.wait_until_computing();
    let child = app.computing_child();
    client.kill().unwrap();
    client.wait().unwrap();
    let (exit, stderr) = app.wait(|_| {});
    assert_eq!(exit.code(), Some(0), "{stderr}");
    assert!(stderr.contains("client is gone"), "{stderr}");
    assert!(!Path::new(&format!("/proc/{child}")).exists());
    assert!(!slot.finished());
    assert!(!slot.output().exists());
}
