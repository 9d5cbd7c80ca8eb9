//! The published tables the explorer's values come from, as shipped in the binary, served back
//! byte for byte (`/api/v1/positions/tables/{name}`) so that every value a page shows links to
//! the row it was read from: [`row_url`] names a table and a start, [`select`] answers with the
//! table's header and that start's rows. Pure.

/// A shipped table: its path in the repository and its text.
#[derive(Debug)]
pub struct Shipped {
    /// The path in the repository (`data/perft_d9_all960.csv`), as the pages cite it.
    pub file: &'static str,
    /// The CSV text, header first; the first column numbers the start.
    pub text: &'static str,
}

impl Shipped {
    /// The name it is served under: the file's base name.
    pub fn name(&self) -> &'static str {
        name_of(self.file)
    }

    /// Its data rows.
    pub fn rows(&self) -> usize {
        self.text
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .count()
    }
}

macro_rules! shipped {
    ($($file:literal),* $(,)?) => {
        [$(Shipped { file: $file, text: include_str!(concat!("../../../", $file)) }),*]
    };
}

/// Every table the explorer reads.
pub static SHIPPED: [Shipped; 12] = shipped![
    "common/tests/data/chess960_startpos_perft.csv",
    "data/perft_d7_all960.csv",
    "data/perft_d8_all960.csv",
    "data/perft_d9_all960.csv",
    "data/perft_shuffle5040_d1-6.csv",
    "data/balance_record.csv",
    "data/balance_sf18_d20.csv",
    "data/balance_sf19_d16.csv",
    "data/balance_sf15_d16.csv",
    "common/tests/data/balance_sf18_d25.csv",
    "data/selfplay_sf15_n1000.csv",
    "data/selfplay_sf15_n2000.csv",
];

fn name_of(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// The shipped table of a path (`data/…`) or of a served name (`perft_d9_all960.csv`).
pub fn find(name: &str) -> Option<&'static Shipped> {
    SHIPPED.iter().find(|t| t.file == name || t.name() == name)
}

/// The text of a shipped table (empty for a path that is not one).
pub fn text(file: &str) -> &'static str {
    find(file).map_or("", |t| t.text)
}

/// Where a start's row of a shipped table is served.
pub fn row_url(file: &str, number: u32) -> String {
    format!("/api/v1/positions/tables/{}?start={number}", name_of(file))
}

/// Where a start's rows of a campaign's CSV export are served.
pub fn campaign_row_url(campaign: u64, number: u32) -> String {
    format!("/api/v1/campaigns/{campaign}/table?format=csv&start={number}")
}

/// Why [`select`] has nothing to answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a number.
    BadStart(String),
    /// The table has no row for the start.
    NoRow(String),
}

/// A table's text for `start` (`None`: the whole table): its header and the rows whose first
/// column is that number, as shipped.
pub fn select(table: &Shipped, start: Option<&str>) -> Result<String, Refusal> {
    match start {
        None => Ok(table.text.to_string()),
        Some(start) => rows_of(table.file, table.text, start),
    }
}

/// A CSV text's header and the rows whose first column is the number `start`; `what` names the
/// table in a refusal. Also what a campaign's CSV export answers with `?start=N`.
pub fn rows_of(what: &str, text: &str, start: &str) -> Result<String, Refusal> {
    let n: u32 = start
        .trim()
        .parse()
        .map_err(|_| Refusal::BadStart(format!("start {start:?} is not a number")))?;
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let rows: Vec<&str> = lines
        .filter(|l| l.split(',').next().and_then(|c| c.parse::<u32>().ok()) == Some(n))
        .collect();
    if rows.is_empty() {
        return Err(Refusal::NoRow(format!("{what} has no row for start {n}")));
    }
    Ok(std::iter::once(header)
        .chain(rows)
        .map(|l| format!("{l}\n"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_found_by_path_and_by_name_and_numbers_its_starts_first() {
        for t in &SHIPPED {
            assert_eq!(find(t.file).map(|f| f.file), Some(t.file));
            assert_eq!(find(t.name()).map(|f| f.file), Some(t.file));
            let first = t.text.lines().next().unwrap().split(',').next().unwrap();
            assert!(first == "sp" || first == "number", "{}: {first}", t.file);
            assert!(t.rows() >= 16, "{}", t.file);
        }
        assert_eq!(find("data/perft_d9_all960.csv").unwrap().rows(), 960);
        assert_eq!(find("perft_shuffle5040_d1-6.csv").unwrap().rows(), 5040);
        assert!(find("../Cargo.toml").is_none() && find("").is_none());
        assert_eq!(
            row_url("data/perft_d9_all960.csv", 555),
            "/api/v1/positions/tables/perft_d9_all960.csv?start=555"
        );
    }

    #[test]
    fn a_start_selects_the_header_and_its_row() {
        let d9 = find("perft_d9_all960.csv").unwrap();
        let text = select(d9, Some("518")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "sp,shredder_fen,d9");
        assert!(lines[1].starts_with("518,rnbqkbnr/") && lines[1].ends_with(",2439530234167"));
        // 5 is not 51 or 555.
        let five = select(d9, Some("5")).unwrap();
        assert_eq!(five.lines().nth(1).unwrap().split(',').next(), Some("5"));
        assert_eq!(five.lines().count(), 2);
        assert_eq!(select(d9, None).unwrap(), d9.text);
        assert!(matches!(select(d9, Some("x")), Err(Refusal::BadStart(_))));
        assert!(matches!(select(d9, Some("960")), Err(Refusal::NoRow(_))));
        let played = find("selfplay_sf15_n1000.csv").unwrap();
        assert!(matches!(select(played, Some("0")), Err(Refusal::NoRow(_))));
        assert_eq!(select(played, Some("13")).unwrap().lines().count(), 2);
    }
}
