//! `c960-worker analyse` and `balance` as a user runs them: the built-in engine, a real UCI engine
//! (Debian's Stockfish, when installed), and fake engines that hang, crash or talk nonsense.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_c960-worker");
const STOCKFISH: &str = "/usr/games/stockfish";
/// White mates in one only by castling long, king b1 takes rook a1 (the rook lands on d1, a
/// square it cannot reach past its own king by a rook move).
const CASTLE_MATE: &str = "2rkr3/2p1p3/8/8/8/8/8/RK6 w A - 0 1";

fn worker(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the worker binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The value text of `"key":` in a flat JSON object (enough for these assertions).
fn json_field<'a>(json: &'a str, key: &str) -> &'a str {
    let start = json
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        + key.len()
        + 3;
    let rest = &json[start..];
    let end = if rest.starts_with('[') {
        rest.find(']').unwrap() + 1
    } else if let Some(stripped) = rest.strip_prefix('"') {
        stripped.find('"').unwrap() + 2
    } else {
        rest.find([',', '}']).unwrap()
    };
    &rest[..end]
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("analyse-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes an executable shell script that plays a UCI engine.
fn fake_engine(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("engine.sh");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho $$ > \"$C960_FAKE_PIDFILE\"\n{body}"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A handshake that satisfies the worker, then `on_go` when the search starts.
fn scripted_engine(on_go: &str) -> String {
    format!(
        "while read -r line; do\n  case \"$line\" in\n    uci) echo 'id name Fake 1'; \
         echo 'option name UCI_Chess960 type check default false'; echo uciok;;\n    isready) echo readyok;;\n    \
         go*) {on_go};;\n  esac\ndone\n"
    )
}

/// Runs the worker against a fake engine; returns its output and the engine's process id.
fn run_fake(name: &str, body: &str) -> (Output, u32) {
    let dir = scratch_dir(name);
    let engine = fake_engine(&dir, body);
    let pidfile = dir.join("pid");
    let out = Command::new(BIN)
        .args([
            "analyse",
            "--sp",
            "518",
            "--depth",
            "5",
            "--timeout",
            "2",
            "--uci",
        ])
        .arg(&engine)
        .env("C960_FAKE_PIDFILE", &pidfile)
        .output()
        .unwrap();
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (out, pid)
}

fn process_gone(pid: u32) -> bool {
    // The worker kills and reaps its engine, so nothing with that id remains (a live process or
    // an unreaped zombie would still have a /proc entry).
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn assert_one_line_error(o: &Output) {
    assert!(!o.status.success(), "expected failure, got {}", stdout(o));
    let err = stderr(o);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one-line error expected: {err}"
    );
    assert!(err.starts_with("error: "), "{err}");
    assert!(stdout(o).is_empty(), "no result on failure: {}", stdout(o));
}

#[test]
fn builtin_json_has_every_field() {
    let o = worker(&["analyse", "--sp", "518", "--depth", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    assert_eq!(json_field(&json, "sp"), "518");
    assert_eq!(
        json_field(&json, "fen"),
        "\"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1\""
    );
    assert_eq!(json_field(&json, "depth"), "5");
    assert!(
        json_field(&json, "score_cp").parse::<i32>().unwrap().abs() < 150,
        "{json}"
    );
    assert_eq!(json_field(&json, "mate"), "null");
    assert_eq!(json_field(&json, "wdl"), "null");
    assert_eq!(json_field(&json, "best_move").len(), 6);
    assert!(json_field(&json, "pv").starts_with("[\""));
    assert!(json_field(&json, "nodes").parse::<u64>().unwrap() > 0);
    assert!(json_field(&json, "engine").starts_with("\"c960-builtin "));
}

#[test]
fn builtin_results_repeat_exactly() {
    let args = ["analyse", "--sp", "100", "--depth", "6", "--json"];
    let a = worker(&args);
    let b = worker(&args);
    assert!(a.status.success());
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn builtin_human_summary_and_mate_from_whites_view() {
    let o = worker(&[
        "analyse",
        "--fen",
        "r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1",
        "--depth",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("score: #-1"), "{text}");
    assert!(text.contains("best move: a8a1"), "{text}");

    let o = worker(&["analyse", "--fen", CASTLE_MATE, "--depth", "3", "--json"]);
    let json = stdout(&o);
    assert_eq!(json_field(&json, "best_move"), "\"b1a1\"", "{json}");
    assert_eq!(json_field(&json, "mate"), "1", "{json}");
}

#[test]
fn bad_input_is_a_one_line_error() {
    assert_one_line_error(&worker(&["analyse", "--sp", "960", "--depth", "3"]));
    assert_one_line_error(&worker(&["analyse", "--sp", "1", "--depth", "0"]));
    assert_one_line_error(&worker(&["analyse", "--fen", "not a fen", "--depth", "3"]));
    assert_one_line_error(&worker(&[
        "analyse",
        "--sp",
        "1",
        "--depth",
        "3",
        "--uci",
        "/nonexistent/engine",
    ]));
    assert_one_line_error(&worker(&[
        "analyse",
        "--all",
        "--positions",
        "5-2",
        "--depth",
        "3",
    ]));
    assert!(!worker(&["analyse", "--depth", "3"]).status.success());
}

#[test]
fn all_positions_write_csv() {
    let dir = scratch_dir("all");
    let csv = dir.join("out.csv");
    let o = worker(&[
        "analyse",
        "--all",
        "--positions",
        "0-2,518",
        "--depth",
        "3",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "sp,fen,depth,score_cp,mate,best_move,engine");
    assert_eq!(lines.len(), 5);
    assert!(
        lines[4].starts_with("518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1,3,"),
        "{}",
        lines[4]
    );

    // The balance report reads it back, correlates with the reference table and draws a chart.
    let svg = dir.join("chart.svg");
    let reference = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../common/tests/data/balance_sf18_d25.csv"
    );
    let o = worker(&[
        "balance",
        "--input",
        csv.to_str().unwrap(),
        "--reference",
        reference,
        "--svg",
        svg.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    assert_eq!(json_field(&json, "positions"), "4");
    assert!(json.contains("\"reference\":{\"n\":4,"), "{json}");
    assert!(
        json.contains("\"classical\":{\"sp\":518,\"arrangement\":\"RNBQKBNR\""),
        "{json}"
    );
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("518 RNBQKBNR"));

    let human = worker(&["balance", "--input", reference]);
    assert!(human.status.success());
    assert!(
        stdout(&human).contains("positions: 960"),
        "{}",
        stdout(&human)
    );
    assert_one_line_error(&worker(&["balance", "--input", "/nonexistent.csv"]));
}

/// The npm `stockfish` 19.0.0 single-threaded full-network WASM build, run by node (`.ci/run`
/// installs it into `.ci/engines/`; `C960_STOCKFISH_JS` names another copy).
fn wasm_stockfish() -> Option<String> {
    let js = std::env::var_os("C960_STOCKFISH_JS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../.ci/engines/node_modules/stockfish/bin/stockfish-19-single.js")
        });
    let node = Command::new("node").arg("--version").output();
    (js.is_file() && node.is_ok_and(|o| o.status.success()))
        .then(|| format!("node \"{}\"", js.display()))
}

#[test]
fn wasm_stockfish_runs_as_a_command_with_arguments() {
    let Some(command) = wasm_stockfish() else {
        println!(
            "note: node or the npm stockfish package is absent (.ci/run installs them); skipping"
        );
        return;
    };
    let args = [
        "analyse", "--sp", "518", "--depth", "8", "--uci", &command, "--hash", "16", "--json",
    ];
    let o = worker(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    // The id names the build: UCI id name, the script's and the network's SHA-256 prefixes.
    let engine = json_field(&json, "engine");
    assert!(engine.starts_with("\"Stockfish"), "{json}");
    assert!(
        engine.contains(" [sha256:") && engine.contains(" net:"),
        "{json}"
    );
    assert_eq!(json_field(&json, "depth"), "8");
    // Every completed depth 1..=8 is recorded, and the last one is the result.
    let depths = json.split("{\"depth\":").count() - 1;
    assert_eq!(depths, 8, "{json}");
    let last = json.rsplit("{\"depth\":").next().unwrap();
    assert!(last.starts_with("8,"), "{json}");
    assert_eq!(
        json_field(last, "score_cp"),
        json_field(&json, "score_cp"),
        "{json}"
    );
    // Deterministic: the same search again gives the same numbers.
    assert_eq!(stdout(&worker(&args)), json);

    // A command that is not there, or with unbalanced quotes: one line on stderr.
    for bad in ["node-nonexistent-c960 x.js", "node \"unclosed"] {
        assert_one_line_error(&worker(&[
            "analyse", "--sp", "518", "--depth", "2", "--uci", bad,
        ]));
    }
}

#[test]
fn real_uci_engine_in_chess960_mode() {
    if !Path::new(STOCKFISH).exists() {
        println!(
            "note: {STOCKFISH} is absent (apt-get install stockfish); skipping the real-engine test"
        );
        return;
    }
    let args = [
        "analyse", "--sp", "518", "--depth", "10", "--uci", STOCKFISH, "--hash", "8", "--json",
    ];
    let o = worker(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    assert!(
        json_field(&json, "engine").starts_with("\"Stockfish"),
        "{json}"
    );
    assert!(
        json_field(&json, "score_cp").parse::<i32>().unwrap().abs() < 150,
        "{json}"
    );
    assert_eq!(json_field(&json, "depth"), "10");
    // Debian's Stockfish offers UCI_ShowWDL; the expectation sums to about 1000.
    let wdl: Vec<u32> = json_field(&json, "wdl")
        .trim_matches(['[', ']'])
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!((990..=1010).contains(&wdl.iter().sum::<u32>()), "{json}");
    // Single thread, fixed hash, ucinewgame: the same search again gives the same numbers.
    assert_eq!(stdout(&worker(&args)), json);

    // Black to move mates in one: the score is reported from White's point of view.
    let o = worker(&[
        "analyse",
        "--fen",
        "r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1",
        "--depth",
        "5",
        "--uci",
        STOCKFISH,
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    assert_eq!(json_field(&json, "mate"), "-1", "{json}");
    assert_eq!(json_field(&json, "best_move"), "\"a8a1\"");

    // Castling comes back in Chess960 form, king takes rook: O-O is the only mate here.
    let o = worker(&[
        "analyse",
        "--fen",
        CASTLE_MATE,
        "--depth",
        "4",
        "--uci",
        STOCKFISH,
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    assert_eq!(json_field(&json, "best_move"), "\"b1a1\"", "{json}");
    assert_eq!(json_field(&json, "mate"), "1", "{json}");

    // Several positions through one engine process.
    let dir = scratch_dir("stockfish-all");
    let csv = dir.join("sf.csv");
    let o = worker(&[
        "analyse",
        "--all",
        "--positions",
        "0,959",
        "--depth",
        "8",
        "--uci",
        STOCKFISH,
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(text.lines().nth(2).unwrap().starts_with("959,"));
}

#[test]
fn engine_that_never_answers_is_killed_with_a_timeout_error() {
    let (o, pid) = run_fake("silent", "exec sleep 600\n");
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("timed out"), "{}", stderr(&o));
    assert!(process_gone(pid), "engine process {pid} still running");
}

#[test]
fn engine_that_hangs_in_search_is_killed_with_a_timeout_error() {
    let (o, pid) = run_fake("hang", &scripted_engine("exec sleep 600"));
    assert_one_line_error(&o);
    assert!(
        stderr(&o).contains("timed out waiting for `bestmove`"),
        "{}",
        stderr(&o)
    );
    assert!(process_gone(pid), "engine process {pid} still running");
}

#[test]
fn engine_that_crashes_is_an_error_not_a_result() {
    let (o, pid) = run_fake("crash", &scripted_engine("exit 3"));
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("closed its output"), "{}", stderr(&o));
    assert!(process_gone(pid));
}

#[test]
fn engine_with_an_illegal_move_is_an_error_not_a_result() {
    let (o, pid) = run_fake(
        "illegal",
        &scripted_engine("echo 'info depth 1 score cp 5 pv e2e5'; echo 'bestmove e2e5'"),
    );
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("not legal"), "{}", stderr(&o));
    assert!(process_gone(pid));
}

#[test]
fn engine_without_chess960_support_is_refused() {
    let body = "while read -r line; do\n  case \"$line\" in\n    uci) echo 'id name Classic'; echo uciok;;\n  \
                esac\ndone\n";
    let (o, pid) = run_fake("no960", body);
    assert_one_line_error(&o);
    assert!(stderr(&o).contains("UCI_Chess960"), "{}", stderr(&o));
    assert!(process_gone(pid));
}
