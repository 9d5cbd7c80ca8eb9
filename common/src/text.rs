//! Numbers as people read them, shared by the coordinator's pages and the worker's terminal;
//! and text cells as CSV files hold them safely, shared by every CSV export.

/// `1234567` → `1,234,567` (exact for any u128).
///
/// # Examples
///
/// ```
/// use c960_common::text::thousands;
///
/// assert_eq!(thousands(2_439_530_234_167), "2,439,530,234,167");
/// assert_eq!(thousands(999), "999");
/// assert_eq!(thousands(u128::from(u64::MAX) * 960).len(), 30);
/// ```
pub fn thousands(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A CSV cell of text (engine ids, names, moves: never a number column): quoted when it holds a
/// comma, quote or line break, and prefixed with `'` when it begins with a character a
/// spreadsheet evaluates (`=`, `+`, `-`, `@`, tab, carriage return; OWASP's CSV injection
/// advice), so an engine id such as `=HYPERLINK(…)` stays text when the table is opened.
/// Number columns are written as they are: a negative score is a number, not a formula.
pub fn csv_text(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn groups_of_three_from_the_right() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(1_234_567), "1,234,567");
        assert_eq!(
            super::thousands(u128::MAX),
            "340,282,366,920,938,463,463,374,607,431,768,211,455"
        );
    }

    #[test]
    fn csv_text_is_quoted_and_never_a_formula() {
        use super::csv_text;
        assert_eq!(csv_text("Stockfish 17.1"), "Stockfish 17.1");
        assert_eq!(csv_text(""), "");
        assert_eq!(csv_text("a,b"), "\"a,b\"");
        assert_eq!(csv_text("say \"hi\""), r#""say ""hi""""#);
        for lead in ['=', '+', '-', '@', '\t'] {
            assert_eq!(csv_text(&format!("{lead}1+1")), format!("'{lead}1+1"));
        }
        // A carriage return both leads (quote prefix) and breaks the line (CSV quoting).
        assert_eq!(csv_text("\rx"), "\"'\rx\"");
        assert_eq!(
            csv_text("=HYPERLINK(\"http://x\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""
        );
        // Only the first character counts.
        assert_eq!(csv_text("a=1"), "a=1");
        assert_eq!(csv_text(" =1"), " =1");
    }
}
