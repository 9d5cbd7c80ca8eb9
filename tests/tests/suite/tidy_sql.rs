//! The tidy check of the store's SQL (see `tidy.rs`): every state, outcome, check grade, trust
//! level and kind is named through `coordinator/src/store/codes.rs`, never written as a literal
//! integer in a statement, so each code has one home and a change of one cannot miss a query.

use super::tidy::{code_of, crate_files, read, root};

/// Columns whose integers are codes of `coordinator/src/store/codes.rs` (workunit, replica and
/// campaign states, outcomes, check grades, trust levels, workunit kinds).
const CODED_COLUMNS: &[&str] = &[
    "state",
    "status",
    "outcome",
    "check_state",
    "checked",
    "kind",
    "trusted",
];

/// The string literals of some code, escapes as written.
fn string_literals(code: &str) -> Vec<String> {
    let code = code.replace("'\"'", "' '");
    let mut out = Vec::new();
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let (mut text, mut escaped) = (String::new(), false);
        for c in chars.by_ref() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => break,
                _ => {
                    escaped = false;
                    text.push(c);
                }
            }
        }
        out.push(text);
    }
    out
}

/// SQL text as tokens: words, numbers, runs of `=<>!`, and single other characters (so `?2`
/// is `?`, `2` and `{CODE}` is `{`, `CODE`, `}`).
fn sql_tokens(sql: &str) -> Vec<String> {
    let cs: Vec<char> = sql.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < cs.len() {
        let start = i;
        let run = |f: &dyn Fn(char) -> bool, i: &mut usize| {
            while *i < cs.len() && f(cs[*i]) {
                *i += 1;
            }
        };
        if cs[i].is_alphanumeric() || cs[i] == '_' {
            run(&|c| c.is_alphanumeric() || c == '_', &mut i);
        } else if "=<>!".contains(cs[i]) {
            run(&|c| "=<>!".contains(c), &mut i);
        } else {
            i += 1;
            if cs[start].is_whitespace() {
                continue;
            }
        }
        out.push(cs[start..i].iter().collect());
    }
    out
}

/// The literal codes in SQL text: a coded column compared with a number (`state = 1`,
/// `r.state IN (0, 1)`, `CASE … THEN 3 ELSE w.state`) or given one by an `INSERT`.
fn literal_codes(sql: &str) -> Vec<String> {
    let t = sql_tokens(sql);
    let is = |i: usize, w: &str| t.get(i).is_some_and(|s| s == w);
    let num = |i: usize| {
        t.get(i)
            .is_some_and(|s| s.chars().all(|c| c.is_ascii_digit()))
    };
    let coded = |s: &str| CODED_COLUMNS.contains(&s);
    let mut found = Vec::new();
    for (i, col) in t.iter().enumerate().filter(|(_, s)| coded(s)) {
        let op = t.get(i + 1).map_or("", String::as_str);
        if ["=", "!=", "<>", "<", ">", "<=", ">="].contains(&op) && num(i + 2) {
            found.push(format!("{col} {op} {}", t[i + 2]));
        }
        let at = if is(i + 1, "NOT") { i + 2 } else { i + 1 };
        if is(at, "IN") && is(at + 1, "(") && num(at + 2) {
            found.push(format!("{col} IN ({} …", t[at + 2]));
        }
        let before = if i >= 2 && is(i - 1, ".") { i - 2 } else { i };
        if before >= 3 && is(before - 1, "ELSE") && num(before - 2) && is(before - 3, "THEN") {
            found.push(format!("THEN {} ELSE {col}", t[before - 2]));
        }
    }
    for i in (0..t.len()).filter(|&i| is(i, "INSERT") && is(i + 1, "INTO") && is(i + 3, "(")) {
        let close = (i + 4..t.len()).find(|&j| is(j, ")")).unwrap_or(t.len());
        let cols: Vec<&String> = t[i + 4..close].iter().filter(|s| *s != ",").collect();
        let start = match () {
            _ if is(close + 1, "VALUES") && is(close + 2, "(") => close + 3,
            _ if is(close + 1, "SELECT") => close + 2,
            _ => continue,
        };
        let (mut values, mut depth) = (vec![Vec::new()], 0);
        for s in &t[start..] {
            let end = ["FROM", "RETURNING", "ON", "WHERE"].contains(&s.as_str());
            if depth == 0 && (s == ")" || end) {
                break;
            }
            depth += i32::from(s == "(") - i32::from(s == ")");
            match (depth, s.as_str()) {
                (0, ",") => values.push(Vec::new()),
                _ => values.last_mut().unwrap().push(s),
            }
        }
        for (col, value) in cols.iter().zip(&values) {
            if coded(col) && value.len() == 1 && value[0].chars().all(|c| c.is_ascii_digit()) {
                found.push(format!("INSERT … {col} … {}", value[0]));
            }
        }
    }
    found
}

/// The store's SQL names every state, outcome, trust level and kind through
/// `store/codes.rs`, never as a literal integer, so a code has one home.
#[test]
fn sql_states_come_from_the_codes_module() {
    let mut literals = Vec::new();
    for f in crate_files("coordinator") {
        let exempt = f == "src/store/codes.rs"
            || f.starts_with("src/store/conformance/")
            || f == "src/store/sqlite/tests.rs";
        if !f.starts_with("src/store/") || exempt {
            continue;
        }
        let code = code_of(&read(&root().join("coordinator").join(&f)));
        for text in string_literals(&code) {
            literals.extend(
                literal_codes(&text)
                    .into_iter()
                    .map(|l| format!("{f}: {l}")),
            );
        }
    }
    assert!(
        literals.is_empty(),
        "{} literal codes in the store's SQL (use store/codes.rs): {literals:#?}",
        literals.len()
    );
}

#[test]
fn the_code_check_sees_a_literal_code() {
    let code = r#"let a = '"'; tx.exec("UPDATE results SET state = 1 WHERE id = ?1", p)"#;
    assert_eq!(
        string_literals(code),
        ["UPDATE results SET state = 1 WHERE id = ?1"]
    );
    for (sql, want) in [
        (
            "UPDATE results SET state = 1 WHERE id = ?1",
            &["state = 1"][..],
        ),
        (
            "WHERE r.state NOT IN (0, 1) AND w.kind IN ({codes})",
            &["state IN (0 …"],
        ),
        (
            "o.trusted != 0 AND status<>2",
            &["trusted != 0", "status <> 2"],
        ),
        (
            "CASE WHEN w.state = {OPEN} THEN 3 ELSE w.state END",
            &["THEN 3 ELSE state"],
        ),
        (
            "INSERT INTO results (workunit_id, worker_id, state) SELECT workunit_id, {w}, 0 FROM v",
            &["INSERT … state … 0"],
        ),
        ("INSERT INTO w (kind, sp) VALUES (?1, 0)", &[]),
        (
            "INSERT INTO w (sp, kind) VALUES (COALESCE(?1, 2), 0)",
            &["INSERT … kind … 0"],
        ),
        (
            "SET state = ?2, outcome = {VALID} WHERE needed > 0 LIMIT 1",
            &[],
        ),
    ] {
        assert_eq!(literal_codes(sql), want, "{sql}");
    }
}
