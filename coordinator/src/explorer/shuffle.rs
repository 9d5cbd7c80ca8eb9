//! The shuffle family's index (issue 56): its 5040 starts with the perft d1–d6 shipped in
//! [`super::SHUFFLE_FILE`], sorted, searched and paged as the Chess960 index is (the same
//! `sort`, `order`, `q` and `page`), the sort keys being the family's: `sp` (its number) and
//! `d1`…`d6`. Pure.

use std::sync::OnceLock;

use c960_common::family::{Castling, Family};
use c960_common::{CastlingNotation, Position};
use serde::Serialize;

use super::detail::Index;
use super::query::{Column, Order, Paging, Search};
use super::{SHUFFLE_DEPTHS, ranks, shuffle_perft};

/// The family's name in paths and JSON.
pub const FAMILY: &str = "shuffle";

/// Rows to a page: the 5040 in ten pages.
pub const PER_PAGE: usize = 504;

/// One row of the shuffle index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShuffleRow {
    /// Its number in the family (docs/families.md).
    pub number: u16,
    /// White's back rank (Black mirrors it).
    pub arrangement: String,
    /// Shredder-FEN (no castling rights: the family's default).
    pub shredder_fen: String,
    /// perft d1–d6, as shipped.
    pub perft: [u64; SHUFFLE_DEPTHS as usize],
    /// The rank in the sorted column among the 5040 (1 = most nodes; for `sp`, the number + 1).
    pub rank: Option<u16>,
}

/// Every start's arrangement and Shredder-FEN, by number; made on first use.
fn starts() -> &'static [(String, String)] {
    static STARTS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    STARTS.get_or_init(|| {
        Family::Shuffle
            .starts()
            .map(|s| {
                let fen = s.position().to_fen(CastlingNotation::Shredder);
                (s.arrangement_string(), fen)
            })
            .collect()
    })
}

/// Parses the `sort` of the shuffle index: `sp` or `d1`…`d6`.
pub fn column(text: &str) -> Result<Column, String> {
    match Column::parse(text) {
        Ok(Column::Number) => Ok(Column::Number),
        Ok(Column::Perft(d)) if d <= SHUFFLE_DEPTHS => Ok(Column::Perft(d)),
        _ => Err(format!(
            "sort {text:?} is not one of sp, d1…d{SHUFFLE_DEPTHS} (the shuffle family has perft \
             to depth {SHUFFLE_DEPTHS} and no balance tables)"
        )),
    }
}

/// Parses a search of the shuffle index: empty; a number 0–5039; a FEN of a shuffle start
/// (with or without castling rights); a pattern (`B??????B`) or words, as for Chess960.
pub fn search(text: &str) -> Result<Search, String> {
    let text = text.trim();
    let count = shuffle_perft().len();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        return match text.parse::<u16>() {
            Ok(n) if usize::from(n) < count => Ok(Search::Number(n)),
            _ => Err(format!(
                "{text} is not a shuffle start number 0–{}",
                count - 1
            )),
        };
    }
    if text.contains('/') {
        let pos = Position::from_fen(text).map_err(|e| format!("not a FEN: {e}"))?;
        let of = |c| Family::Shuffle.start_of_position(&pos, c);
        return match of(Castling::Default).or_else(|e| of(Castling::Chess960).map_err(|_| e)) {
            Ok(start) => Ok(Search::Number(start.number as u16)),
            Err(e) => Err(e.to_string()),
        };
    }
    Search::parse(text)
}

/// A start's value in a column of the shuffle index.
fn value(number: usize, column: Column) -> f64 {
    match column {
        Column::Perft(d) => shuffle_perft()[number][d as usize - 1] as f64,
        _ => number as f64,
    }
}

/// The starts a search names, sorted (ties by number).
pub fn select(search: &Search, column: Column, order: Order) -> Vec<u16> {
    let keyed: Vec<(f64, u16)> = starts()
        .iter()
        .enumerate()
        .filter(|(n, (arr, _))| search.matches_start(*n as u32, arr))
        .map(|(n, _)| (value(n, column), n as u16))
        .collect();
    super::query::in_order(keyed, order)
}

/// The values of the listed starts in a column (the index's histogram: perft d6 when sorted by
/// number).
pub fn values(listed: &[u16], column: Column) -> Vec<f64> {
    let column = match column {
        Column::Number => Column::Perft(SHUFFLE_DEPTHS),
        c => c,
    };
    listed.iter().map(|&n| value(n.into(), column)).collect()
}

/// A page of the shuffle index for a search and a sort; `Err` for a page past the last.
pub fn index(
    q: &str,
    search: &Search,
    column: Column,
    order: Order,
    page: usize,
) -> Result<(Index<ShuffleRow>, Vec<u16>), String> {
    let listed = select(search, column, order);
    let paging = Paging::of(page, listed.len(), PER_PAGE)?;
    let ranked = match column {
        Column::Perft(_) => {
            let all: Vec<Option<f64>> = (0..starts().len())
                .map(|n| Some(value(n, column)))
                .collect();
            ranks(&all)
        }
        _ => (1..=starts().len() as u16).map(Some).collect(),
    };
    let rows = paging
        .slice(&listed)
        .iter()
        .map(|&n| {
            let (arrangement, fen) = &starts()[usize::from(n)];
            ShuffleRow {
                number: n,
                arrangement: arrangement.clone(),
                shredder_fen: fen.clone(),
                perft: shuffle_perft()[usize::from(n)],
                rank: ranked[usize::from(n)],
            }
        })
        .collect();
    let ix = Index {
        family: FAMILY,
        sort: column.key(),
        order,
        q: q.to_string(),
        count: listed.len(),
        paging,
        rows,
    };
    Ok((ix, listed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_are_the_familys_depths_and_its_number() {
        assert_eq!(column("sp"), Ok(Column::Number));
        assert_eq!(column("d6"), Ok(Column::Perft(6)));
        for bad in ["d7", "d9", "record", "sf18_d25", "x"] {
            assert!(column(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn searches_name_shuffle_starts_by_number_fen_and_pattern() {
        assert_eq!(search("5039"), Ok(Search::Number(5039)));
        assert!(search("5040").is_err() && search("99999999").is_err());
        let fen = &starts()[4000].1;
        assert_eq!(search(fen), Ok(Search::Number(4000)));
        // The classical start is shuffle start n too, with or without castling rights.
        let classical = starts().iter().position(|(a, _)| a == "RNBQKBNR").unwrap();
        let with_rights = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(search(with_rights), Ok(Search::Number(classical as u16)));
        assert!(search("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").is_err());
        // Bishops in the corners: the other six pieces in 6!/(2!·2!) = 180 orders, every one a
        // shuffle start (Chess960 keeps the 60 with the king between the rooks).
        let corners = search("bishops on a and h").unwrap();
        assert_eq!(select(&corners, Column::Number, Order::Asc).len(), 180);
        assert_eq!(search(""), Ok(Search::All));
        assert!(search("dragons").is_err());
    }

    #[test]
    fn the_index_pages_the_5040_and_ranks_among_them_all() {
        let (ix, listed) = index("", &Search::All, Column::Perft(6), Order::Desc, 1).unwrap();
        assert_eq!(
            (ix.count, listed.len(), ix.rows.len()),
            (5040, 5040, PER_PAGE)
        );
        assert_eq!((ix.paging.page, ix.paging.pages), (1, 10));
        assert_eq!(ix.rows[0].rank, Some(1));
        let d6 = |r: &ShuffleRow| r.perft[5];
        assert!(ix.rows.windows(2).all(|w| d6(&w[0]) >= d6(&w[1])));
        let (last, _) = index("", &Search::All, Column::Perft(6), Order::Desc, 10).unwrap();
        assert_eq!(last.rows.len(), 5040 - 9 * PER_PAGE);
        assert!(index("", &Search::All, Column::Number, Order::Asc, 11).is_err());
        let (one, _) = index("0", &Search::Number(0), Column::Number, Order::Asc, 1).unwrap();
        assert_eq!(one.rows[0].arrangement, "BBKNNQRR");
        assert_eq!(one.rows[0].perft[5], 123_414_611);
        assert_eq!(one.rows[0].rank, Some(1));
        assert_eq!(values(&[0], Column::Number), [123_414_611.0]);
    }
}
