//! The index's questions, parsed and answered by pure functions: which column to sort by, in
//! which order, and which starts a search names (a number, a FEN, an arrangement pattern such as
//! `B??????B`, or words: "bishops on a and h; queen on d").

use c960_common::{Position, Role, StartPosition};
use serde::Serialize;

use super::{BalanceTable, MAX_DEPTH, Overlay, Published, perft_value, published};

/// A column the index sorts by.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Column {
    /// The Scharnagl number.
    Number,
    /// perft at a depth 1–9.
    Perft(u32),
    /// A balance table's value.
    Balance(BalanceTable),
}

impl Column {
    /// Parses a query's `sort` value: `sp`, `d1`…`d9`, or a balance table's key.
    pub fn parse(text: &str) -> Result<Column, String> {
        if text == "sp" {
            return Ok(Column::Number);
        }
        if let Some(d) = text.strip_prefix('d').and_then(|d| d.parse::<u32>().ok())
            && (1..=MAX_DEPTH).contains(&d)
        {
            return Ok(Column::Perft(d));
        }
        BalanceTable::ALL
            .into_iter()
            .find(|t| t.key() == text)
            .map(Column::Balance)
            .ok_or_else(|| {
                format!(
                    "sort {text:?} is not one of sp, d1…d9, {}",
                    BalanceTable::ALL.map(|t| t.key()).join(", ")
                )
            })
    }

    /// The key [`Column::parse`] reads.
    pub fn key(self) -> String {
        match self {
            Column::Number => "sp".into(),
            Column::Perft(d) => format!("d{d}"),
            Column::Balance(t) => t.key().into(),
        }
    }

    /// The order it sorts in unless asked: numbers up, values down (largest, or best for White,
    /// first: the rank order).
    pub fn default_order(self) -> Order {
        match self {
            Column::Number => Order::Asc,
            _ => Order::Desc,
        }
    }

    /// The value of a start in this column (campaign values included).
    pub fn value(self, p: &Published, overlay: &Overlay) -> Option<f64> {
        match self {
            Column::Number => Some(f64::from(p.sp)),
            Column::Perft(d) => Some(perft_value(p.sp, d, overlay).nodes as f64),
            Column::Balance(t) => p.eval(t).map(|e| e.cp),
        }
    }
}

/// Up or down.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Smallest first.
    Asc,
    /// Largest first.
    Desc,
}

impl Order {
    /// `asc` or `desc`.
    pub fn parse(text: &str) -> Result<Order, String> {
        match text {
            "asc" => Ok(Order::Asc),
            "desc" => Ok(Order::Desc),
            _ => Err(format!("order {text:?} is not asc or desc")),
        }
    }

    /// The key [`Order::parse`] reads.
    pub fn key(self) -> &'static str {
        match self {
            Order::Asc => "asc",
            Order::Desc => "desc",
        }
    }
}

/// Which starts a search names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Search {
    /// Every start.
    All,
    /// One start, by number or by its FEN.
    Number(u16),
    /// The starts with these pieces on these files (`None`: any piece).
    Pattern([Option<Role>; 8]),
}

impl Search {
    /// Parses a search: empty; a number 0–959; a FEN of a start; eight letters of
    /// `KQRBN` or `?` (`B??????B`); or clauses of a piece word and files, "bishops on a and h,
    /// king on f".
    pub fn parse(text: &str) -> Result<Search, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Search::All);
        }
        if text.chars().all(|c| c.is_ascii_digit()) {
            return match text.parse::<u32>().ok().map(StartPosition::new) {
                Some(Ok(sp)) => Ok(Search::Number(sp.number())),
                _ => Err(format!("{text} is not a start number 0–959")),
            };
        }
        if text.contains('/') {
            let pos = Position::from_fen(text).map_err(|e| format!("not a FEN: {e}"))?;
            return StartPosition::from_position(&pos)
                .map(|sp| Search::Number(sp.number()))
                .map_err(|e| e.to_string());
        }
        if text.len() == 8 && text.chars().all(|c| c == '?' || piece_letter(c).is_some()) {
            let mut pattern = [None; 8];
            for (slot, c) in pattern.iter_mut().zip(text.chars()) {
                *slot = piece_letter(c);
            }
            return Ok(Search::Pattern(pattern));
        }
        words(text).map(Search::Pattern)
    }

    /// Whether a Chess960 start matches.
    pub fn matches(&self, p: &Published) -> bool {
        self.matches_start(u32::from(p.sp), &p.arrangement)
    }

    /// Whether a start of any family matches, by its number and White's back rank.
    pub fn matches_start(&self, number: u32, arrangement: &str) -> bool {
        match self {
            Search::All => true,
            Search::Number(n) => u32::from(*n) == number,
            Search::Pattern(pattern) => pattern
                .iter()
                .zip(arrangement.chars())
                .all(|(want, c)| want.is_none_or(|r| piece_letter(c) == Some(r))),
        }
    }
}

/// The rows an index page shows: which page of how many, how many to a page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Paging {
    /// This page, from 1.
    pub page: usize,
    /// Pages in all (1 when nothing is listed).
    pub pages: usize,
    /// Rows to a full page.
    pub per_page: usize,
}

impl Paging {
    /// Parses a query's `page` (absent or empty: 1).
    pub fn parse(text: Option<&str>) -> Result<usize, String> {
        match text.map(str::trim) {
            None | Some("") => Ok(1),
            Some(t) => t
                .parse::<usize>()
                .ok()
                .filter(|&p| p >= 1)
                .ok_or_else(|| format!("page {t:?} is not a number from 1")),
        }
    }

    /// Page `page` of `count` rows, `per_page` a page; `Err` past the last page.
    pub fn of(page: usize, count: usize, per_page: usize) -> Result<Paging, String> {
        let pages = count.div_ceil(per_page).max(1);
        if page > pages {
            return Err(format!(
                "page {page} is past the last, {pages} ({count} starts, {per_page} a page)"
            ));
        }
        Ok(Paging {
            page,
            pages,
            per_page,
        })
    }

    /// The rows of `all` on this page.
    pub fn slice<'a, T>(&self, all: &'a [T]) -> &'a [T] {
        let from = ((self.page - 1) * self.per_page).min(all.len());
        &all[from..(from + self.per_page).min(all.len())]
    }
}

fn piece_letter(c: char) -> Option<Role> {
    Role::from_char(c).filter(|r| *r != Role::Pawn)
}

/// "bishops on a and h, queen on d": each piece word names the files after it.
fn words(text: &str) -> Result<[Option<Role>; 8], String> {
    let mut pattern = [None; 8];
    let mut role: Option<Role> = None;
    let lower = text.to_lowercase();
    let tokens = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|t| !t.is_empty() && !["on", "and", "the", "at", "&"].contains(t));
    for token in tokens {
        let word = token.trim_end_matches('s');
        let named = match word {
            "king" => Some(Role::King),
            "queen" => Some(Role::Queen),
            "rook" => Some(Role::Rook),
            "bishop" => Some(Role::Bishop),
            "knight" => Some(Role::Knight),
            _ => None,
        };
        if named.is_some() {
            role = named;
            continue;
        }
        // A file: `a`, `a1`, `a-file`.
        let file = token.trim_end_matches("-file").trim_end_matches('1');
        let mut chars = file.chars();
        let (Some(f @ 'a'..='h'), None) = (chars.next(), chars.next()) else {
            return Err(format!(
                "{token:?}: say a piece and files, e.g. \"bishops on a and h\", a number, a FEN \
                 or a pattern like B??????B"
            ));
        };
        let Some(r) = role else {
            return Err(format!("file {f} comes before any piece"));
        };
        let slot = &mut pattern[f as usize - 'a' as usize];
        if slot.is_some_and(|s| s != r) {
            return Err(format!("two pieces named on the {f}-file"));
        }
        *slot = Some(r);
    }
    if pattern.iter().all(Option::is_none) {
        return Err(format!("{text:?} names no piece on a file"));
    }
    Ok(pattern)
}

/// The starts a search names, sorted by a column (ties by number), as indices into
/// [`published`].
pub fn select(search: &Search, column: Column, order: Order, overlay: &Overlay) -> Vec<u16> {
    let keyed: Vec<(f64, u16)> = published()
        .iter()
        .filter(|p| search.matches(p))
        .map(|p| (column.value(p, overlay).unwrap_or(f64::NAN), p.sp))
        .collect();
    in_order(keyed, order)
}

/// Start numbers keyed by a column's value, sorted by it in `order`, ties by number (both
/// families' indexes).
pub fn in_order(mut keyed: Vec<(f64, u16)>, order: Order) -> Vec<u16> {
    keyed.sort_by(|a, b| {
        let by_value = match order {
            Order::Asc => a.0.total_cmp(&b.0),
            Order::Desc => b.0.total_cmp(&a.0),
        };
        by_value.then(a.1.cmp(&b.1))
    });
    keyed.into_iter().map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_and_orders_parse_and_print_back() {
        for key in ["sp", "d1", "d9", "record", "sf18_d25", "sf15_d16"] {
            assert_eq!(Column::parse(key).unwrap().key(), key);
        }
        for bad in ["d0", "d10", "", "SP", "fen"] {
            assert!(Column::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Order::parse("desc"), Ok(Order::Desc));
        assert!(Order::parse("up").is_err());
        assert_eq!(Column::Number.default_order(), Order::Asc);
        assert_eq!(Column::Perft(9).default_order(), Order::Desc);
    }

    #[test]
    fn searches_name_starts_by_number_fen_pattern_and_words() {
        assert_eq!(Search::parse("  "), Ok(Search::All));
        assert_eq!(Search::parse("518"), Ok(Search::Number(518)));
        assert!(Search::parse("960").is_err());
        assert!(Search::parse("99999999999999").is_err());
        assert_eq!(
            Search::parse("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"),
            Ok(Search::Number(518))
        );
        assert!(
            Search::parse("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").is_err()
        );
        assert!(Search::parse("not/a/fen").is_err());
        let corners = Search::parse("bishops on a and h").unwrap();
        assert_eq!(Search::parse("B??????B"), Ok(corners.clone()));
        assert_eq!(Search::parse("Bishops on a, h"), Ok(corners.clone()));
        let n = published().iter().filter(|p| corners.matches(p)).count();
        // Bishops on a1 and h1 (opposite colours), the other six pieces in 6!/(2!·2!) = 180
        // orders, a third of them with the king between the rooks.
        assert_eq!(n, 60);
        let two = Search::parse("king on b; queen on a").unwrap();
        assert!(
            published()
                .iter()
                .filter(|p| two.matches(p))
                .all(|p| p.arrangement.starts_with("QK"))
        );
        assert!(Search::parse("bishops on z").is_err());
        assert!(Search::parse("a and h").is_err());
        assert!(Search::parse("king on a, queen on a").is_err());
        assert!(Search::parse("dragons").is_err());
    }

    #[test]
    fn pages_count_from_one_and_refuse_past_the_last() {
        assert_eq!(Paging::parse(None), Ok(1));
        assert_eq!(Paging::parse(Some("")), Ok(1));
        assert_eq!(Paging::parse(Some("3")), Ok(3));
        for bad in ["0", "-1", "x", "1.5", "99999999999999999999999"] {
            assert!(Paging::parse(Some(bad)).is_err(), "{bad}");
        }
        let p = Paging::of(10, 5040, 504).unwrap();
        assert_eq!((p.page, p.pages), (10, 10));
        assert!(Paging::of(11, 5040, 504).is_err());
        assert_eq!(
            Paging::of(1, 0, 504).unwrap().pages,
            1,
            "an empty list is one page"
        );
        assert_eq!(Paging::of(2, 505, 504).unwrap().pages, 2);
        let all: Vec<u32> = (0..505).collect();
        assert_eq!(Paging::of(2, 505, 504).unwrap().slice(&all), [504]);
        assert_eq!(Paging::of(1, 505, 504).unwrap().slice(&all).len(), 504);
        assert_eq!(Paging::of(1, 0, 504).unwrap().slice(&all[..0]), [0u32; 0]);
    }

    #[test]
    fn select_sorts_by_the_column_and_breaks_ties_by_number() {
        let overlay = Overlay::new();
        let all = select(&Search::All, Column::Number, Order::Asc, &overlay);
        assert_eq!((all.len(), all[0], all[959]), (960, 0, 959));
        let deep = select(&Search::All, Column::Perft(9), Order::Desc, &overlay);
        let d9 = |sp: u16| published()[sp as usize].perft[8];
        assert!(deep.windows(2).all(|w| d9(w[0]) >= d9(w[1])));
        let ones = select(&Search::All, Column::Perft(1), Order::Asc, &overlay);
        let d1 = |sp: u16| published()[sp as usize].perft[0];
        assert!(
            ones.windows(2)
                .all(|w| d1(w[0]) < d1(w[1]) || d1(w[0]) == d1(w[1]) && w[0] < w[1])
        );
        let one = select(&Search::Number(555), Column::Number, Order::Asc, &overlay);
        assert_eq!(one, [555]);
    }
}
