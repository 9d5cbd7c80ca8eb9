//! What the explorer says of one start and of the index, as one serializable shape: the pages
//! draw it, `/api/v1/positions…` sends it as JSON (docs/protocol.md, "Position explorer"; the
//! field names are the stable schema). Built by pure functions from the published values and
//! the campaigns' [`Overlay`].

use std::collections::BTreeMap;

use c960_common::family::{Family, Start, mirror};
use c960_common::{CastlingNotation, StartPosition};
use serde::Serialize;

use super::query::{Column, Order, Paging, Search, select};
use super::{
    BalanceTable, MAX_DEPTH, Overlay, PerftSource, PerftValue, SHUFFLE_DEPTHS, SHUFFLE_FILE,
    SelfPlay, perft_value, published, ranks, shuffle_perft, tables,
};

/// The family the explorer has tables for.
pub const FAMILY: &str = "chess960";

/// How a number encodes the pieces (`c960_common::Scharnagl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScharnaglView {
    /// `A`, the light-square bishop's index among b, d, f, h.
    pub light_bishop: u8,
    /// `B`, the dark-square bishop's index among a, c, e, g.
    pub dark_bishop: u8,
    /// `C`, the queen's index among the six squares left.
    pub queen: u8,
    /// `KN`, the knights' pair's index (0–9).
    pub knights: u8,
    /// The knights' indices among the five squares left.
    pub knight_pair: (u8, u8),
    /// Where each digit puts its pieces: the light bishop, the dark bishop, the queen, the
    /// knights, and the rook, king, rook that fill what is left, as squares (`h1`).
    pub squares: ScharnaglSquares,
}

/// The squares of [`ScharnaglView`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScharnaglSquares {
    /// The light-square bishop's.
    pub light_bishop: String,
    /// The dark-square bishop's.
    pub dark_bishop: String,
    /// The queen's.
    pub queen: String,
    /// The knights'.
    pub knights: [String; 2],
    /// Rook, king, rook, left to right.
    pub rook_king_rook: [String; 3],
}

/// The squares on the first rank that hold `letter` in `arrangement`, a to h.
fn squares_of(arrangement: &str, letter: char) -> Vec<String> {
    arrangement
        .chars()
        .zip('a'..='h')
        .filter(|(c, _)| *c == letter)
        .map(|(_, f)| format!("{f}1"))
        .collect()
}

fn placed(arrangement: &str, s: &c960_common::Scharnagl) -> ScharnaglSquares {
    let file = |i: u8| format!("{}1", (b'a' + i) as char);
    let pair = |v: Vec<String>| -> [String; 2] {
        let mut it = v.into_iter();
        [it.next().unwrap_or_default(), it.next().unwrap_or_default()]
    };
    let rkr: Vec<String> = arrangement
        .chars()
        .zip('a'..='h')
        .filter(|(c, _)| matches!(c, 'R' | 'K'))
        .map(|(_, f)| format!("{f}1"))
        .collect();
    let mut rkr = rkr.into_iter();
    ScharnaglSquares {
        light_bishop: file(2 * s.light_bishop + 1),
        dark_bishop: file(2 * s.dark_bishop),
        queen: squares_of(arrangement, 'Q').concat(),
        knights: pair(squares_of(arrangement, 'N')),
        rook_king_rook: [(); 3].map(|_| rkr.next().unwrap_or_default()),
    }
}

/// A start by number and arrangement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StartRef {
    /// Its number in the family.
    pub number: u32,
    /// White's back rank.
    pub arrangement: String,
}

/// A perft value with its rank.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankedPerft {
    /// The value and its source.
    #[serde(flatten)]
    pub value: PerftValue,
    /// 1 = the most nodes of the 960.
    pub rank: u16,
}

/// A balance value with its rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankedEval {
    /// The table.
    pub table: BalanceTable,
    /// Whether c960 computed the table (the published SF18 d25 table is not c960's).
    pub c960: bool,
    /// The shipped file.
    pub file: &'static str,
    /// Where this start's row of it is served.
    pub row_url: String,
    /// White's edge in centipawns (a mate: ±10000).
    pub cp: f64,
    /// Mate in moves, when a mate.
    pub mate: Option<i32>,
    /// The engine's best move, where the table has it.
    pub best_move: Option<String>,
    /// 1 = best for White of the 960.
    pub rank: u16,
}

/// A self-play score and where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelfPlayView {
    /// The score.
    #[serde(flatten)]
    pub score: SelfPlay,
    /// The shipped file.
    pub file: &'static str,
    /// Where this start's row of it is served.
    pub row_url: String,
}

/// Everything the explorer says of one start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PositionDetail {
    /// `chess960` or `shuffle`.
    pub family: &'static str,
    /// Its number in the family (Chess960: Scharnagl's).
    pub number: u32,
    /// White's back rank.
    pub arrangement: String,
    /// Shredder-FEN.
    pub shredder_fen: String,
    /// X-FEN.
    pub x_fen: String,
    /// The number's digits (Chess960 only; other families number lexicographically).
    pub scharnagl: Option<ScharnaglView>,
    /// The a↔h mirror.
    pub mirror: StartRef,
    /// How many starts the ranks are among: the family's count.
    pub of: u32,
    /// perft d1–d9 (Chess960), d1–d6 (shuffle).
    pub perft: Vec<RankedPerft>,
    /// Every balance table's value.
    pub balance: Vec<RankedEval>,
    /// The self-play scores, where the start was played.
    pub self_play: Vec<SelfPlayView>,
}

/// Ranks of every start in a column (index: start number).
fn column_ranks(column: Column, overlay: &Overlay) -> Vec<Option<u16>> {
    let values: Vec<Option<f64>> = published()
        .iter()
        .map(|p| column.value(p, overlay))
        .collect();
    ranks(&values)
}

/// The explorer's page of a start.
pub fn detail(start: StartPosition, overlay: &Overlay) -> PositionDetail {
    let p = &published()[start.number() as usize];
    let s = start.scharnagl();
    let m = &published()[p.mirror as usize];
    PositionDetail {
        family: FAMILY,
        number: u32::from(p.sp),
        arrangement: p.arrangement.clone(),
        shredder_fen: p.shredder_fen.clone(),
        x_fen: p.x_fen.clone(),
        scharnagl: Some(ScharnaglView {
            light_bishop: s.light_bishop,
            dark_bishop: s.dark_bishop,
            queen: s.queen,
            knights: s.knights,
            knight_pair: s.knight_pair,
            squares: placed(&p.arrangement, &s),
        }),
        mirror: StartRef {
            number: u32::from(m.sp),
            arrangement: m.arrangement.clone(),
        },
        of: published().len() as u32,
        perft: (1..=MAX_DEPTH)
            .map(|d| RankedPerft {
                value: perft_value(p.sp, d, overlay),
                rank: column_ranks(Column::Perft(d), overlay)[p.sp as usize].unwrap_or(0),
            })
            .collect(),
        balance: BalanceTable::ALL
            .into_iter()
            .filter_map(|table| {
                let e = p.eval(table)?;
                Some(RankedEval {
                    table,
                    c960: table.is_c960s(),
                    file: table.file(),
                    row_url: tables::row_url(table.file(), p.sp.into()),
                    cp: e.cp,
                    mate: e.mate,
                    best_move: e.best_move.clone(),
                    rank: column_ranks(Column::Balance(table), overlay)[p.sp as usize]?,
                })
            })
            .collect(),
        self_play: p
            .self_play
            .iter()
            .map(|s| SelfPlayView {
                score: s.clone(),
                file: s.table.file(),
                row_url: tables::row_url(s.table.file(), p.sp.into()),
            })
            .collect(),
    }
}

/// The explorer's page of a shuffle start: its board, FENs, mirror and the shipped perft
/// d1–d6, ranked among the 5040 (no campaign supersedes these yet, and no balance table exists).
pub fn shuffle_detail(start: &Start) -> PositionDetail {
    let table = shuffle_perft();
    let number = start.number;
    let pos = start.position();
    let mirrored = Family::Shuffle
        .start_of(&mirror(&start.white), &mirror(&start.black))
        .map_or(number, |m| m.number);
    PositionDetail {
        family: Family::Shuffle.name(),
        number,
        arrangement: start.arrangement_string(),
        shredder_fen: pos.to_fen(CastlingNotation::Shredder),
        x_fen: pos.to_fen(CastlingNotation::XFen),
        scharnagl: None,
        mirror: StartRef {
            number: mirrored,
            arrangement: Family::Shuffle
                .start(u64::from(mirrored))
                .map(|m| m.arrangement_string())
                .unwrap_or_default(),
        },
        of: table.len() as u32,
        perft: (0..SHUFFLE_DEPTHS as usize)
            .map(|d| {
                let values: Vec<Option<f64>> =
                    table.iter().map(|row| Some(row[d] as f64)).collect();
                RankedPerft {
                    value: PerftValue {
                        depth: d as u32 + 1,
                        nodes: table[number as usize][d],
                        published_differs: None,
                        source: PerftSource::Published {
                            file: SHUFFLE_FILE,
                            row_url: tables::row_url(SHUFFLE_FILE, number),
                        },
                    },
                    rank: ranks(&values)[number as usize].unwrap_or(0),
                }
            })
            .collect(),
        balance: Vec::new(),
        self_play: Vec::new(),
    }
}

/// One row of the index.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IndexRow {
    /// Scharnagl number.
    pub number: u16,
    /// White's back rank.
    pub arrangement: String,
    /// Shredder-FEN.
    pub shredder_fen: String,
    /// perft(9), with its source.
    pub d9: PerftValue,
    /// perft at the sorted depth, when the index is sorted by a depth other than 9.
    pub sorted_perft: Option<u64>,
    /// Each balance table's value (centipawns, White's view), by table key.
    pub balance: BTreeMap<&'static str, Option<f64>>,
    /// The rank in the sorted column (1 = largest; for `sp`, the number + 1).
    pub rank: Option<u16>,
}

/// The index: the starts a search names, sorted, a page of them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Index<R = IndexRow> {
    /// `chess960` or `shuffle`.
    pub family: &'static str,
    /// The column sorted by.
    pub sort: String,
    /// `asc` or `desc`.
    pub order: Order,
    /// The search as given.
    pub q: String,
    /// The starts the search names, on every page.
    pub count: usize,
    /// This page (`page`, `pages`, `per_page`): the Chess960 index is one page of all 960.
    #[serde(flatten)]
    pub paging: Paging,
    /// The rows of this page.
    pub rows: Vec<R>,
}

/// The Chess960 index's page size: all of them.
pub const PER_PAGE: usize = 960;

/// The index for a search and a sort; `Err` for a page past the last.
pub fn index(
    q: &str,
    search: &Search,
    column: Column,
    order: Order,
    page: usize,
    overlay: &Overlay,
) -> Result<Index, String> {
    let ranked = column_ranks(column, overlay);
    let listed = select(search, column, order, overlay);
    let paging = Paging::of(page, listed.len(), PER_PAGE)?;
    let rows: Vec<IndexRow> = paging
        .slice(&listed)
        .iter()
        .map(|&sp| {
            let p = &published()[sp as usize];
            IndexRow {
                number: sp,
                arrangement: p.arrangement.clone(),
                shredder_fen: p.shredder_fen.clone(),
                d9: perft_value(sp, MAX_DEPTH, overlay),
                sorted_perft: match column {
                    Column::Perft(d) if d != MAX_DEPTH => Some(perft_value(sp, d, overlay).nodes),
                    _ => None,
                },
                balance: BalanceTable::ALL
                    .into_iter()
                    .map(|t| (t.key(), p.eval(t).map(|e| e.cp)))
                    .collect(),
                rank: match column {
                    Column::Number => Some(sp + 1),
                    _ => ranked[sp as usize],
                },
            }
        })
        .collect();
    Ok(Index {
        family: FAMILY,
        sort: column.key(),
        order,
        q: q.to_string(),
        count: listed.len(),
        paging,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detail_of_555_reproduces_the_worked_example() {
        let d = detail(StartPosition::new(555).unwrap(), &Overlay::new());
        assert_eq!(d.arrangement, "RNKNBQRB");
        let s = d.scharnagl.as_ref().unwrap();
        assert_eq!((s.light_bishop, s.dark_bishop), (3, 2));
        assert_eq!((s.queen, s.knights), (4, 5));
        let sq = &s.squares;
        assert_eq!(
            (sq.light_bishop.as_str(), sq.dark_bishop.as_str()),
            ("h1", "e1")
        );
        assert_eq!(
            (sq.queen.as_str(), &sq.knights),
            ("f1", &["b1".into(), "d1".into()])
        );
        assert_eq!(sq.rook_king_rook, ["a1", "c1", "g1"]);
        assert_eq!(d.perft.len(), 9);
        assert_eq!(d.perft[0].value.nodes, 20);
        assert!(d.perft.iter().all(|r| (1..=960).contains(&r.rank)));
        assert_eq!(d.balance.len(), 5);
        assert_eq!(d.mirror.arrangement, "BRQBNKNR");
    }

    #[test]
    fn a_shuffle_start_has_its_shipped_perft_and_its_mirror() {
        let start = Family::Shuffle.start(0).unwrap();
        let d = shuffle_detail(&start);
        assert_eq!((d.family, d.number, d.of), ("shuffle", 0, 5040));
        assert_eq!(d.arrangement, "BBKNNQRR");
        assert_eq!(d.perft.len(), 6);
        assert_eq!(d.perft[5].value.nodes, 123_414_611);
        assert_eq!(d.mirror.arrangement, "RRQNNKBB");
        let back = shuffle_detail(&Family::Shuffle.start(u64::from(d.mirror.number)).unwrap());
        assert_eq!(back.mirror.number, 0);
        assert!(d.scharnagl.is_none() && d.balance.is_empty());
        // Ranks among the 5040: the most d1 moves rank 1st.
        let top = shuffle_perft().iter().map(|p| p[0]).max().unwrap();
        let i = shuffle_perft().iter().position(|p| p[0] == top).unwrap();
        let best = shuffle_detail(&Family::Shuffle.start(i as u64).unwrap());
        assert_eq!(best.perft[0].rank, 1);
    }

    #[test]
    fn ranks_agree_with_the_sorted_index() {
        let overlay = Overlay::new();
        let i = index("", &Search::All, Column::Perft(9), Order::Desc, 1, &overlay).unwrap();
        assert_eq!((i.count, i.rows.len(), i.paging.pages), (960, 960, 1));
        assert_eq!(i.rows[0].rank, Some(1));
        assert!(index("", &Search::All, Column::Number, Order::Asc, 2, &overlay).is_err());
        let sp = i.rows[811].number;
        let d = detail(StartPosition::new(u32::from(sp)).unwrap(), &overlay);
        assert_eq!(d.perft[8].rank, 812);
    }
}
