//! The position explorer's data (issue 56): every Chess960 start with the values c960 has for
//! it — perft d1–d9, the opening-balance tables, the self-play scores — and the shuffle starts'
//! perft d1–d6 ([`shuffle_perft`]), read once, lazily, from the published tables embedded in the
//! binary (`data/`), so a fresh `serve` with no campaign shows them all. A campaign of this
//! coordinator supersedes a published Chess960 perft value ([`Overlay`]); the pages say which
//! source each value has. Pure: the front door reads the store and hands the overlay in.
//! [`detail`] is what the pages and the JSON say of a start and of the index; [`query`] holds
//! the sorting, the search and the paging; [`shuffle`] the shuffle family's index; [`tables`]
//! the embedded tables, served back row by row.

pub mod detail;
pub mod query;
pub mod request;
pub mod shuffle;
pub mod tables;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use c960_common::family::mirror;
use c960_common::{CastlingNotation, StartPosition};
use serde::Serialize;

/// The deepest perft c960 ships for every start.
pub const MAX_DEPTH: u32 = 9;

/// The file of the reference table (perft 1–6 of every start, published).
pub const REFERENCE_FILE: &str = "common/tests/data/chess960_startpos_perft.csv";

/// The shipped perft table of a depth of 7–9.
pub fn perft_file(depth: u32) -> Option<&'static str> {
    match depth {
        7 => Some("data/perft_d7_all960.csv"),
        8 => Some("data/perft_d8_all960.csv"),
        9 => Some("data/perft_d9_all960.csv"),
        _ => None,
    }
}

/// The shipped perft table of the shuffle family (all 5040 starts, depths 1–6).
pub const SHUFFLE_FILE: &str = "data/perft_shuffle5040_d1-6.csv";

/// The depths [`SHUFFLE_FILE`] holds.
pub const SHUFFLE_DEPTHS: u32 = 6;

/// perft(1..=6) of every shuffle start, by its number in `c960_common::family` (the table's
/// `number` column); parsed on first use.
pub fn shuffle_perft() -> &'static [[u64; SHUFFLE_DEPTHS as usize]] {
    static TABLE: OnceLock<Vec<[u64; SHUFFLE_DEPTHS as usize]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        rows(tables::text(SHUFFLE_FILE))
            .iter()
            .map(|row| std::array::from_fn(|d| cell(row, &format!("d{}", d + 1)).unwrap_or(0)))
            .collect()
    })
}

/// An opening-balance table c960 ships (and the published yardstick it is measured against).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BalanceTable {
    /// The estimator of record (`data/balance_record.csv`, `estimate_cp`).
    Record,
    /// Stockfish 18 at depth 20.
    Sf18D20,
    /// Stockfish 19 at depth 16.
    Sf19D16,
    /// Stockfish 15.1 at depth 16.
    Sf15D16,
    /// The published Stockfish 18 depth-25 table (bariskisir/Chess960EvalAnalyzer): not c960's,
    /// shown as the yardstick docs/balance.md measures c960's tables against.
    Sf18D25,
}

impl BalanceTable {
    /// Every table, the one of record first.
    pub const ALL: [BalanceTable; 5] = [
        BalanceTable::Record,
        BalanceTable::Sf18D20,
        BalanceTable::Sf19D16,
        BalanceTable::Sf15D16,
        BalanceTable::Sf18D25,
    ];

    /// The key in query strings and JSON.
    pub fn key(self) -> &'static str {
        match self {
            BalanceTable::Record => "record",
            BalanceTable::Sf18D20 => "sf18_d20",
            BalanceTable::Sf19D16 => "sf19_d16",
            BalanceTable::Sf15D16 => "sf15_d16",
            BalanceTable::Sf18D25 => "sf18_d25",
        }
    }

    /// A short column heading.
    pub fn label(self) -> &'static str {
        match self {
            BalanceTable::Record => "balance (record)",
            BalanceTable::Sf18D20 => "SF18 d20",
            BalanceTable::Sf19D16 => "SF19 d16",
            BalanceTable::Sf15D16 => "SF15 d16",
            BalanceTable::Sf18D25 => "SF18 d25 (published)",
        }
    }

    /// Where its values come from.
    pub fn file(self) -> &'static str {
        match self {
            BalanceTable::Record => "data/balance_record.csv",
            BalanceTable::Sf18D20 => "data/balance_sf18_d20.csv",
            BalanceTable::Sf19D16 => "data/balance_sf19_d16.csv",
            BalanceTable::Sf15D16 => "data/balance_sf15_d16.csv",
            BalanceTable::Sf18D25 => "common/tests/data/balance_sf18_d25.csv",
        }
    }

    /// Whether c960 computed it (through the coordinator, at quorum 2).
    pub fn is_c960s(self) -> bool {
        self != BalanceTable::Sf18D25
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One start's value in a balance table, White's view.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Eval {
    /// Centipawns (the record's estimate has decimals); a mate counts as ±10000.
    pub cp: f64,
    /// Mate distance in moves (positive: White mates), when the score is a mate.
    pub mate: Option<i32>,
    /// The engine's best move (UCI), where the table has one.
    pub best_move: Option<String>,
}

/// A self-play table c960 ships (Stockfish 15.1 against itself, 16 starts).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SelfPlayTable {
    /// 1000 nodes a move.
    N1000,
    /// 2000 nodes a move.
    N2000,
}

impl SelfPlayTable {
    /// Both tables.
    pub const ALL: [SelfPlayTable; 2] = [SelfPlayTable::N1000, SelfPlayTable::N2000];

    /// Where its values come from.
    pub fn file(self) -> &'static str {
        match self {
            SelfPlayTable::N1000 => "data/selfplay_sf15_n1000.csv",
            SelfPlayTable::N2000 => "data/selfplay_sf15_n2000.csv",
        }
    }

    /// As shown.
    pub fn label(self) -> &'static str {
        match self {
            SelfPlayTable::N1000 => "SF15.1 self-play, 1000 nodes/move",
            SelfPlayTable::N2000 => "SF15.1 self-play, 2000 nodes/move",
        }
    }
}

/// One start's self-play score: White's score with its 95 % interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelfPlay {
    /// The table.
    pub table: SelfPlayTable,
    /// Games played.
    pub games: u32,
    /// White wins, draws, Black wins.
    pub wdl: (u32, u32, u32),
    /// White's score (0–1).
    pub score: f64,
    /// Its 95 % interval.
    pub score_lo: f64,
    /// Its 95 % interval's top.
    pub score_hi: f64,
    /// Workers whose results agreed.
    pub agreeing_results: u32,
}

/// One start as published: what the shipped tables say of it.
#[derive(Clone, Debug)]
pub struct Published {
    /// Scharnagl number.
    pub sp: u16,
    /// White's back rank, a to h.
    pub arrangement: String,
    /// Shredder-FEN.
    pub shredder_fen: String,
    /// X-FEN.
    pub x_fen: String,
    /// The a↔h mirror's number.
    pub mirror: u16,
    /// perft(1..=9).
    pub perft: [u64; MAX_DEPTH as usize],
    /// By [`BalanceTable`] order.
    pub balance: [Option<Eval>; 5],
    /// The self-play scores, where the start was played.
    pub self_play: Vec<SelfPlay>,
}

impl Published {
    /// Its value in a balance table.
    pub fn eval(&self, table: BalanceTable) -> Option<&Eval> {
        self.balance[table.index()].as_ref()
    }
}

/// A CSV text's rows as maps from column name to cell (the shipped tables quote nothing).
fn rows(text: &str) -> Vec<BTreeMap<&str, &str>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    lines
        .map(|l| header.iter().copied().zip(l.split(',')).collect())
        .collect()
}

fn cell<T: std::str::FromStr>(row: &BTreeMap<&str, &str>, column: &str) -> Option<T> {
    row.get(column).and_then(|s| s.trim().parse().ok())
}

/// A balance table's values by start: `value` is the column that table ranks by.
fn evals(text: &str, value: &str) -> BTreeMap<u16, Eval> {
    let mut out = BTreeMap::new();
    for row in rows(text) {
        let Some(sp) = cell::<u16>(&row, "sp") else {
            continue;
        };
        let mate = cell::<i32>(&row, "mate");
        // A mate ranks beyond every centipawn score, as in `c960_common::balance`.
        let cp = match (cell::<f64>(&row, value), mate) {
            (_, Some(m)) => 10_000.0 * f64::from(m.signum()),
            (Some(cp), None) => cp,
            (None, None) => continue,
        };
        let best_move = row
            .get("best_move")
            .filter(|m| !m.is_empty())
            .map(|m| m.to_string());
        out.insert(
            sp,
            Eval {
                cp,
                mate,
                best_move,
            },
        );
    }
    out
}

/// The 960 starts as the shipped tables give them, by number; parsed on first use.
pub fn published() -> &'static [Published] {
    static TABLE: OnceLock<Vec<Published>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let balance: Vec<BTreeMap<u16, Eval>> = BalanceTable::ALL
            .iter()
            .map(|t| match t {
                BalanceTable::Record => evals(tables::text(t.file()), "estimate_cp"),
                BalanceTable::Sf18D20 | BalanceTable::Sf19D16 | BalanceTable::Sf15D16 => {
                    evals(tables::text(t.file()), "score_cp")
                }
                // Published in pawns; `known` reads it into centipawns once already.
                BalanceTable::Sf18D25 => crate::work::known::published_balance()
                    .iter()
                    .filter_map(|s| {
                        let cp = f64::from(s.score_cp?);
                        let e = Eval {
                            cp,
                            mate: s.mate,
                            best_move: None,
                        };
                        Some((s.sp, e))
                    })
                    .collect(),
            })
            .collect();
        let mut self_play: BTreeMap<u16, Vec<SelfPlay>> = BTreeMap::new();
        for table in SelfPlayTable::ALL {
            let text = tables::text(table.file());
            for row in rows(text) {
                let parsed = (|| {
                    Some(SelfPlay {
                        table,
                        games: cell(&row, "games")?,
                        wdl: (
                            cell(&row, "white_wins")?,
                            cell(&row, "draws")?,
                            cell(&row, "black_wins")?,
                        ),
                        score: cell(&row, "score")?,
                        score_lo: cell(&row, "score_lo")?,
                        score_hi: cell(&row, "score_hi")?,
                        agreeing_results: cell(&row, "agreeing_results").unwrap_or(0),
                    })
                })();
                if let (Some(sp), Some(s)) = (cell::<u16>(&row, "sp"), parsed) {
                    self_play.entry(sp).or_default().push(s);
                }
            }
        }
        StartPosition::all()
            .map(|start| {
                let sp = start.number();
                let pos = start.position();
                let mirrored = StartPosition::from_arrangement(&mirror(&start.arrangement()))
                    .expect("a start's mirror is a start");
                Published {
                    sp,
                    arrangement: start.arrangement_string(),
                    shredder_fen: pos.to_fen(CastlingNotation::Shredder),
                    x_fen: pos.to_fen(CastlingNotation::XFen),
                    mirror: mirrored.number(),
                    perft: std::array::from_fn(|d| {
                        crate::work::known::perft(sp, d as u32 + 1).unwrap_or(0)
                    }),
                    balance: std::array::from_fn(|t| balance[t].get(&sp).cloned()),
                    self_play: self_play.remove(&sp).unwrap_or_default(),
                }
            })
            .collect()
    })
}

/// Where a perft value comes from: what the page says of how it was validated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PerftSource {
    /// The published reference table of depths 1–6 (and every perft program's agreement).
    Reference {
        /// The shipped file.
        file: &'static str,
        /// Where this start's row of it is served ([`tables::row_url`]).
        row_url: String,
    },
    /// c960's published table (each value agreed by a quorum of distinct workers), shipped.
    Published {
        /// The shipped file.
        file: &'static str,
        /// Where this start's row of it is served ([`tables::row_url`]).
        row_url: String,
    },
    /// A campaign of this coordinator, which supersedes the shipped value.
    Campaign {
        /// The campaign.
        campaign: u64,
        /// Workers whose results agree with the canonical one.
        agreeing_results: u32,
        /// How the value was audited (`coordinator`, `replica`, `pending`, `unaudited`, `none`).
        audit: String,
        /// Where this start's rows of the campaign's CSV export are served.
        row_url: String,
    },
}

/// A valid perft value of a campaign of this coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CampaignValue {
    /// The campaign.
    pub campaign: u64,
    /// The count.
    pub nodes: u64,
    /// Workers that agree.
    pub agreeing_results: u32,
    /// The audit, as the store records it.
    pub audit: String,
}

/// The campaigns' values by (start, depth): the newest campaign's stands.
pub type Overlay = BTreeMap<(u16, u32), CampaignValue>;

/// One perft value of a start, with its source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PerftValue {
    /// Depth 1–9.
    pub depth: u32,
    /// The count (a JSON integer with every digit).
    pub nodes: u64,
    /// The shipped value, when a campaign's value differs from it.
    pub published_differs: Option<u64>,
    /// Where it comes from.
    pub source: PerftSource,
}

/// The perft count of `sp` at `depth` as shown: the campaign's when there is one.
pub fn perft_value(sp: u16, depth: u32, overlay: &Overlay) -> PerftValue {
    let published = published()[sp as usize].perft[depth as usize - 1];
    match overlay.get(&(sp, depth)) {
        Some(c) => PerftValue {
            depth,
            nodes: c.nodes,
            published_differs: (c.nodes != published).then_some(published),
            source: PerftSource::Campaign {
                campaign: c.campaign,
                agreeing_results: c.agreeing_results,
                audit: c.audit.clone(),
                row_url: tables::campaign_row_url(c.campaign, sp.into()),
            },
        },
        None => PerftValue {
            depth,
            nodes: published,
            published_differs: None,
            source: match perft_file(depth) {
                Some(file) => PerftSource::Published {
                    file,
                    row_url: tables::row_url(file, sp.into()),
                },
                None => PerftSource::Reference {
                    file: REFERENCE_FILE,
                    row_url: tables::row_url(REFERENCE_FILE, sp.into()),
                },
            },
        },
    }
}

/// Ranks against the others, highest value first: rank 1 is the largest; equal values share a
/// rank (1 + how many are strictly larger). `None` where a value is missing.
pub fn ranks(values: &[Option<f64>]) -> Vec<Option<u16>> {
    let mut sorted: Vec<f64> = values.iter().flatten().copied().collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    values
        .iter()
        .map(|v| {
            v.map(|v| {
                let larger = sorted.partition_point(|x| x.total_cmp(&v).is_gt());
                (larger + 1) as u16
            })
        })
        .collect()
}

/// "812th" (English ordinals).
pub fn ordinal(n: u16) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_start_has_every_shipped_value() {
        let t = published();
        assert_eq!(t.len(), 960);
        let classical = &t[518];
        assert_eq!(classical.arrangement, "RNBQKBNR");
        let m = &t[classical.mirror as usize];
        assert_eq!(
            m.arrangement, "RNBKQBNR",
            "the king and queen change places"
        );
        assert_eq!(classical.perft[5], 119_060_324);
        assert_eq!(classical.perft[8], 2_439_530_234_167);
        let m = &t[t[0].mirror as usize];
        assert_eq!((m.arrangement.as_str(), m.mirror), ("RKRNNQBB", 0));
        for p in t {
            assert!(p.perft.iter().all(|&n| n > 0), "sp {}", p.sp);
            for table in BalanceTable::ALL {
                assert!(p.eval(table).is_some(), "sp {} {table:?}", p.sp);
            }
        }
        assert_eq!(t[518].eval(BalanceTable::Sf18D25).unwrap().cp, 32.0);
        assert_eq!(t[0].eval(BalanceTable::Record).unwrap().cp, 19.86);
        assert_eq!(t[0].eval(BalanceTable::Sf15D16).unwrap().cp, 14.0);
        let shuffle = shuffle_perft();
        assert_eq!(shuffle.len(), 5040);
        assert_eq!(shuffle[0], [20, 400, 9014, 202_212, 5_014_621, 123_414_611]);
        assert!(shuffle.iter().all(|p| p.iter().all(|&n| n > 0)));
        let played = t.iter().filter(|p| !p.self_play.is_empty()).count();
        assert_eq!(played, 16);
        let s = &t[13].self_play[0];
        assert_eq!((s.games, s.wdl, s.score), (32, (17, 5, 10), 0.6094));
    }

    #[test]
    fn a_campaign_value_supersedes_the_shipped_one_and_says_so() {
        let mut overlay = Overlay::new();
        assert_eq!(
            perft_value(518, 3, &overlay).source,
            PerftSource::Reference {
                file: REFERENCE_FILE,
                row_url: "/api/v1/positions/tables/chess960_startpos_perft.csv?start=518".into()
            }
        );
        assert_eq!(
            perft_value(518, 9, &overlay).source,
            PerftSource::Published {
                file: "data/perft_d9_all960.csv",
                row_url: "/api/v1/positions/tables/perft_d9_all960.csv?start=518".into()
            }
        );
        overlay.insert(
            (518, 3),
            CampaignValue {
                campaign: 4,
                nodes: 8902,
                agreeing_results: 2,
                audit: "replica".into(),
            },
        );
        let v = perft_value(518, 3, &overlay);
        assert_eq!((v.nodes, v.published_differs), (8902, None));
        assert!(matches!(
            v.source,
            PerftSource::Campaign { campaign: 4, .. }
        ));
        overlay.get_mut(&(518, 3)).unwrap().nodes = 8903;
        assert_eq!(perft_value(518, 3, &overlay).published_differs, Some(8902));
    }

    #[test]
    fn ranks_count_the_larger_values_and_share_ties() {
        let r = ranks(&[Some(3.0), Some(5.0), None, Some(3.0), Some(-1.0)]);
        assert_eq!(r, [Some(2), Some(1), None, Some(2), Some(4)]);
        assert_eq!(ordinal(1), "1st");
        assert_eq!(ordinal(812), "812th");
        assert_eq!(ordinal(22), "22nd");
        assert_eq!(ordinal(113), "113th");
        assert_eq!(ordinal(103), "103rd");
    }
}
