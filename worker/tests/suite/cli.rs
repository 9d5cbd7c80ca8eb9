//! The `c960-worker` command line, run as a real process.

use std::process::Command;

fn worker(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_c960-worker"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

#[test]
fn perft_by_number_and_fen() {
    let (code, out, _) = worker(&["perft", "--sp", "518", "--depth", "4"]);
    assert_eq!(code, 0);
    assert_eq!(last_line(&out), "197281");
    let kiwi = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1";
    let (code, out, _) = worker(&[
        "perft",
        "--fen",
        kiwi,
        "--depth",
        "3",
        "--threads",
        "2",
        "--hash",
        "1",
    ]);
    assert_eq!(code, 0);
    assert_eq!(last_line(&out), "97862");
}

#[test]
fn divide_lists_root_moves_in_uci_with_castling_as_king_takes_rook() {
    // King b1 castles short with the c1 rook (king to g1, rook to f1): printed as b1c1. The
    // long castle is blocked by the c1 rook standing on the king's path.
    let fen = "rkr5/pppppppp/8/8/8/8/PPPPPPPP/RKR5 w CAca - 0 1";
    let (code, out, _) = worker(&["perft", "--fen", fen, "--depth", "1", "--divide"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.contains(&"b1c1: 1"),
        "castling with the c1 rook: {out}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("b1a1")),
        "long castling is blocked: {out}"
    );
    let count: u64 = lines.last().unwrap().parse().unwrap();
    assert_eq!(count as usize, lines.len() - 1);
}

#[test]
fn perft_file_keeps_input_order_and_fens() {
    let dir = std::env::temp_dir().join(format!("c960-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("in.epd");
    std::fs::write(
        &path,
        "# comment\n\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 ;D1 20\n\
         bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1\n",
    )
    .unwrap();
    let (code, out, _) = worker(&["perft", "--depth", "3", "--file", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1;3;8902\n\
         bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1;3;9006\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn position_lookups() {
    let (code, out, _) = worker(&["position", "518"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("sp: 518\narrangement: RNBQKBNR\n"));
    assert!(
        out.contains("shredder-fen: rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1\n")
    );
    assert!(out.contains("x-fen: rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n"));
    assert!(out.contains("1  R N B Q K B N R"));
    let (_, out, _) = worker(&["position", "--arrangement", "BBQNNRKR"]);
    assert_eq!(out, "sp: 0\n");
    let (_, out, _) = worker(&[
        "position",
        "--fen",
        "rkrnnqbb/pppppppp/8/8/8/8/PPPPPPPP/RKRNNQBB w KQkq - 0 1",
    ]);
    assert_eq!(out, "sp: 959\n");
}

#[test]
fn position_board_draws_the_start_in_a_frame() {
    let (code, out, err) = worker(&["position", "555", "--board"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "sp 555 · RNKNBQRB · 555 = 3 + 4·2 + 16·4 + 96·5");
    assert_eq!(lines[3], "8 │ r │ n │ k │ n │ b │ q │ r │ b │ 8");
    assert_eq!(lines[17], "1 │ R │ N │ K │ N │ B │ Q │ R │ B │ 1");
    assert_eq!(lines.len(), 20);
    let (_, by_arrangement, _) = worker(&["position", "--arrangement", "RNKNBQRB", "--board"]);
    assert_eq!(by_arrangement, out);
}

#[test]
fn bad_input_is_one_line_on_stderr_and_a_failure() {
    let cases: &[&[&str]] = &[
        &["perft", "--sp", "960", "--depth", "1"],
        &[
            "perft",
            "--fen",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
            "--depth",
            "1",
        ],
        &[
            "perft",
            "--fen",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e6 0 1",
            "--depth",
            "1",
        ],
        &["perft", "--depth", "1", "--file", "/nonexistent/c960.epd"],
        // Deeper than anything is counted: refused, not a stack overflow in the recursion.
        &["perft", "--sp", "518", "--depth", "99"],
        &[
            "perft",
            "--fen",
            "8/8/8/8/8/8/8/K6k w - - 0 1",
            "--depth",
            "200",
        ],
        &["position", "--arrangement", "RNBQKNBR"],
        &["position", "--arrangement", "KRNBBQNR"],
        &["position", "--fen", "4k3/8/8/8/8/8/8/4K3 w - - 0 1"],
        &["position", "1000"],
        &["position", "960", "--board"],
        &["position", "x", "--board"],
        &["position", "--arrangement", "RNBQKNBR", "--board"],
    ];
    for args in cases {
        let (code, out, err) = worker(args);
        assert_ne!(code, 0, "{args:?} should fail");
        assert!(out.is_empty(), "{args:?} printed to stdout: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
    let (_, _, err) = worker(&["position", "--arrangement", "RNBQKNBR"]);
    assert!(err.contains("opposite colours"), "{err}");
    let (_, _, err) = worker(&["perft", "--sp", "518", "--depth", "99"]);
    assert_eq!(err.trim_end(), "error: --depth 99 is out of range 0..20");
    // The reason an illegal FEN is refused is said once, not again as the error's source.
    let (_, _, err) = worker(&[
        "perft",
        "--fen",
        "8/8/8/8/8/8/8/8 w - - 0 1",
        "--depth",
        "1",
    ]);
    assert_eq!(err.matches("exactly one king").count(), 1, "{err}");
}

#[test]
fn bench_prints_nodes_per_second() {
    let (code, out, _) = worker(&["bench"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("sp 518       depth 5      4865609 nodes"),
        "{out}"
    );
    assert!(last_line(&out).ends_with(" nodes/s"));
}

/// Runs the worker with its stdout a pipe whose reader is already gone: every write fails with
/// a broken pipe, as under `c960-worker … | head -1`.
fn with_closed_stdout(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_c960-worker"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_broken_pipe_ends_every_subcommand_quietly_with_success() {
    for args in [
        &["position", "5"][..],
        &["position", "--arrangement", "RNBQKBNR"],
        &["perft", "--sp", "518", "--depth", "3", "--divide"],
        &["perft", "--sp", "518", "--depth", "2", "--threads", "1"],
        &["analyse", "--sp", "518", "--depth", "2"],
        &["analyse", "--sp", "518", "--depth", "2", "--json"],
        &["--version"],
        &["--help"],
    ] {
        let (code, err) = with_closed_stdout(args);
        assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
    }
    // And through a real shell pipe.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' position 5 | head -1",
            env!("CARGO_BIN_EXE_c960-worker")
        ))
        .output()
        .expect("sh runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sp: 5\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn version_names_the_build_the_protocol_and_the_cpu_features() {
    let (code, out, _) = worker(&["--version"]);
    assert_eq!(code, 0);
    let line = out.trim();
    assert!(
        line.starts_with(&format!(
            "c960-worker {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{line}"
    );
    // The commit of this checkout, as git names it (the build script's fallback without git).
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    assert!(
        line.contains(&format!("(commit {head}, ")),
        "{line} (HEAD {head})"
    );
    assert!(
        line.contains(&format!("protocol {}", c960_common::wire::PROTOCOL_VERSION)),
        "{line}"
    );
    let kernel = c960_common::perft::cpu_features();
    assert!(line.ends_with(&format!("perft: {kernel})")), "{line}");
}
