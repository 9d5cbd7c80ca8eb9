//! Public known answers the coordinator embeds: perft of every start position at depths 1–6
//! (the reference table), 7, 8 and 9 (all 960: `data/perft_d7_all960.csv`, `data/perft_d8_all960.csv`,
//! `data/perft_d9_all960.csv`).
//! A start-position workunit whose answer is known is checked against it on receipt. Anyone can
//! look these up, so answering them right earns no trust (see [`crate::integrity::trust`]); it only catches
//! a lie.
//!
//! Also the published opening-balance table analysis campaigns are compared with
//! ([`published_balance`]): a yardstick for the dashboard, never a check on results.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// (start position, depth) → perft.
fn table() -> &'static BTreeMap<(u16, u32), u64> {
    static TABLE: OnceLock<BTreeMap<(u16, u32), u64>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = BTreeMap::new();
        for (sp, counts) in crate::work::assembly::reference_table() {
            for (i, n) in counts.iter().enumerate() {
                t.insert((sp, i as u32 + 1), *n);
            }
        }
        for (depth, text) in [
            (7, include_str!("../../../data/perft_d7_all960.csv")),
            (8, include_str!("../../../data/perft_d8_all960.csv")),
            (9, include_str!("../../../data/perft_d9_all960.csv")),
        ] {
            for line in text.lines().skip(1) {
                let f: Vec<&str> = line.split(',').collect();
                if let (Some(Ok(sp)), Some(Ok(n))) = (
                    f.first().map(|s| s.parse::<u16>()),
                    f.last().map(|s| s.parse::<u64>()),
                ) {
                    t.insert((sp, depth), n);
                }
            }
        }
        t
    })
}

/// The published perft of start position `sp` at `depth`, if c960 ships it.
pub fn perft(sp: u16, depth: u32) -> Option<u64> {
    if depth == 0 {
        return Some(1);
    }
    table().get(&(sp, depth)).copied()
}

/// The name of the published opening-balance table of [`published_balance`].
pub const PUBLISHED_BALANCE: &str = "Stockfish 18, depth 25 (bariskisir/Chess960EvalAnalyzer)";

/// The published Stockfish 18 depth-25 evaluation of every start position (White's view,
/// `common/tests/data/balance_sf18_d25.csv`, MIT), the table docs/balance.md measures every c960
/// table against.
pub fn published_balance() -> &'static [c960_common::balance::PositionScore] {
    static TABLE: OnceLock<Vec<c960_common::balance::PositionScore>> = OnceLock::new();
    TABLE.get_or_init(|| {
        c960_common::balance::parse_scores_csv(include_str!(
            "../../../common/tests/data/balance_sf18_d25.csv"
        ))
        .expect("the embedded published table parses")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        assert_eq!(perft(518, 1), Some(20));
        assert_eq!(perft(518, 6), Some(119_060_324));
        assert_eq!(perft(0, 7), Some(3_249_555_919));
        assert_eq!(perft(0, 8), Some(85_793_216_142));
        assert_eq!(perft(10, 8), Some(78_197_069_053));
        assert_eq!(perft(959, 8), Some(85_563_213_516));
        assert_eq!(table().keys().filter(|k| k.1 == 8).count(), 960);
        assert_eq!(table().keys().filter(|k| k.1 == 7).count(), 960);
        assert_eq!(perft(518, 9), Some(2_439_530_234_167));
        assert_eq!(table().keys().filter(|k| k.1 == 9).count(), 960);
        assert_eq!(perft(0, 10), None);
    }

    #[test]
    fn the_published_balance_table_is_whole() {
        let t = published_balance();
        assert_eq!(t.len(), 960);
        let classical = t.iter().find(|s| s.sp == 518).unwrap();
        assert_eq!(classical.score_cp, Some(32), "published +0.32 for RNBQKBNR");
    }
}
