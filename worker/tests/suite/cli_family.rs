//! `c960-worker position --family` and `c960-worker draw`, run as a real process.

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

fn field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no {name} in {out}"))
}

#[test]
fn position_by_number_arrangement_and_fen_in_every_family() {
    for (family, n) in [
        ("chess960", "518"),
        ("shuffle", "5039"),
        ("bishops", "0"),
        ("chess960-nc", "479"),
        ("shuffle-nc", "1234"),
        ("bishops-nc", "7"),
        ("transcendental", "8294399"),
        ("dfrc", "497798"),
    ] {
        let (code, out, err) = worker(&["position", "--family", family, n]);
        assert_eq!(code, 0, "{family}: {err}");
        assert_eq!(field(&out, "family"), family);
        assert_eq!(field(&out, "number"), n);
        let arrangement = field(&out, "arrangement").to_string();
        let fen = field(&out, "shredder-fen").to_string();
        let (_, by_arr, _) = worker(&[
            "position",
            "--family",
            family,
            "--arrangement",
            &arrangement,
        ]);
        assert_eq!(field(&by_arr, "number"), n, "{family} {arrangement}");
        let (_, by_fen, _) = worker(&["position", "--family", family, "--fen", &fen]);
        assert_eq!(field(&by_fen, "number"), n, "{family} {fen}");
    }
    let (_, out, _) = worker(&["position", "--family", "dfrc", "497798"]);
    assert_eq!(
        field(&out, "shredder-fen"),
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1"
    );
    // The mirror partner of an -nc start answers with the same number.
    let (_, out, _) = worker(&[
        "position",
        "--family",
        "chess960-nc",
        "--arrangement",
        "RNBKQBNR",
    ]);
    assert_eq!(field(&out, "arrangement"), "RNBQKBNR");
    assert!(field(&out, "mirror").starts_with("RNBKQBNR"));
    // Chess960 castling as an option of shuffle.
    let (_, out, _) = worker(&[
        "position",
        "--family",
        "shuffle",
        "--arrangement",
        "RNBQKBNR",
        "--chess960-castling",
    ]);
    assert!(field(&out, "shredder-fen").ends_with(" w HAha - 0 1"));
}

#[test]
fn position_refusals_are_one_line_naming_the_rule() {
    for (args, rule) in [
        (
            &[
                "position",
                "--family",
                "bishops",
                "--arrangement",
                "BNBQKNRR",
            ][..],
            "opposite colours",
        ),
        (
            &[
                "position",
                "--family",
                "chess960-nc",
                "--arrangement",
                "KRBQRBNN",
            ],
            "between the two rooks",
        ),
        (
            &[
                "position",
                "--family",
                "shuffle",
                "--arrangement",
                "RNBQKBNR/rnbkqbnr",
            ],
            "mirror",
        ),
        (&["position", "--family", "shuffle", "5040"], "out of range"),
        (&["position", "--family", "fischer", "1"], "unknown family"),
        (
            &[
                "position",
                "--family",
                "transcendental",
                "0",
                "--chess960-castling",
            ],
            "without castling",
        ),
    ] {
        let (code, out, err) = worker(args);
        assert_ne!(code, 0, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(rule), "{args:?}: {err}");
    }
}

#[test]
fn draw_prints_a_start_and_explains_it() {
    for (method, family) in [
        ("uniform", "transcendental"),
        ("cards", "chess960"),
        ("coins", "chess960"),
        ("knuth-yao", "shuffle-nc"),
    ] {
        let (code, out, err) =
            worker(&["draw", "--method", method, "--family", family, "--explain"]);
        assert_eq!(code, 0, "{method} {family}: {err}");
        assert_eq!(field(&out, "family"), family);
        let n: u64 = field(&out, "number").parse().unwrap();
        // The start printed is the one its number names.
        let (_, again, _) = worker(&["position", "--family", family, &n.to_string()]);
        assert_eq!(field(&again, "shredder-fen"), field(&out, "shredder-fen"));
    }
    let (_, out, _) = worker(&["draw", "--method", "coins", "--explain"]);
    assert!(
        out.contains("king, one of the inner empty squares"),
        "{out}"
    );
    let tosses: u64 = field(&out, "tosses").parse().unwrap();
    assert!(tosses >= 9);
}

#[test]
fn draw_analyse_reports_exact_fractions() {
    let (code, out, err) = worker(&["draw", "--method", "coins", "--analyse", "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["uniform"], false);
    assert_eq!(j["min_probability"], "1/1152");
    assert_eq!(j["max_probability"], "1/768");
    assert_eq!(j["expected_cost"], "23/2");
    let (_, out, _) = worker(&["draw", "--method", "knuth-yao", "--analyse", "--json"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["uniform"], true);
    assert_eq!(j["min_probability"], "1/960");
    assert_eq!(j["expected_cost"], "154/15");
    let (_, out, _) = worker(&["draw", "--method", "cards", "--analyse"]);
    assert!(out.contains("uniform: yes"), "{out}");
    assert!(out.contains("expected cards: 8"), "{out}");
    let (code, out, err) = worker(&["draw", "--method", "coins", "--family", "shuffle"]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("king between the rooks"), "{err}");
}
