//! Assembling split campaigns (issue 5): a start position's perft is Σ multiplicity × result over
//! its workunits, and its divide at ply 1 is the same sum per root move. Also the checks against
//! the published figures: per-position values at depth ≤ 6 against the reference table, and the
//! sum over all 960 at depths 7 and 8 against OEIS A157851. Pure functions.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::RowStatus;

/// One workunit of a split campaign as assembly needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitUnit {
    /// The start position it belongs to.
    pub origin_sp: u16,
    /// Where it stands.
    pub state: RowStatus,
    /// Canonical node count when valid.
    pub nodes: Option<u64>,
    /// Paths from the start position to this unit's position.
    pub multiplicity: u64,
    /// Paths per root move of the start position.
    pub first_moves: Vec<(String, u64)>,
}

/// Where a split start position stands: the `status` of the split exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitStatus {
    /// Every workunit valid: the total is known.
    Valid,
    /// Some workunits still open.
    Partial,
    /// A workunit failed.
    Failed,
}

impl SplitStatus {
    /// The name in exports and on the pages.
    pub fn as_str(self) -> &'static str {
        match self {
            SplitStatus::Valid => "valid",
            SplitStatus::Partial => "partial",
            SplitStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for SplitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One start position of a split campaign, assembled from its workunits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SplitRow {
    /// Start position.
    pub sp: u16,
    /// Shredder-FEN of the start position.
    pub fen: String,
    /// Depth of the whole perft.
    pub depth: u32,
    /// Perft once every workunit is valid (a JSON integer like every node count).
    pub nodes: Option<u128>,
    /// Σ multiplicity × nodes over the valid workunits so far.
    pub nodes_so_far: u128,
    /// Valid (complete), partial or failed (a workunit failed).
    pub status: SplitStatus,
    /// Valid workunits / workunits.
    pub share_done: f64,
    /// Workunits of this start position.
    pub workunits: u64,
    /// Ply-1 divide assembled so far (complete when `status` is `valid`), by UCI move.
    pub divide: Vec<(String, u128)>,
}

/// Assembles per start position. `fen_of` gives a start position's FEN.
pub fn assemble(depth: u32, units: &[SplitUnit], fen_of: impl Fn(u16) -> String) -> Vec<SplitRow> {
    let mut a = Assembler::default();
    for u in units {
        a.add(u);
    }
    a.finish(depth, fen_of)
}

/// Per start position: the running total and divide of its workunits.
struct Acc {
    total: u128,
    valid: u64,
    failed: u64,
    count: u64,
    divide: BTreeMap<String, u128>,
}

/// Assembles a split campaign one workunit at a time, so that a campaign of millions of
/// workunits is streamed from the store, never held in memory: the state is one accumulator
/// per start position.
#[derive(Default)]
pub struct Assembler {
    by_sp: BTreeMap<u16, Acc>,
}

impl Assembler {
    /// Counts one workunit.
    pub fn add(&mut self, u: &SplitUnit) {
        let acc = self.by_sp.entry(u.origin_sp).or_insert_with(|| Acc {
            total: 0,
            valid: 0,
            failed: 0,
            count: 0,
            divide: BTreeMap::new(),
        });
        acc.count += 1;
        for (m, _) in &u.first_moves {
            acc.divide.entry(m.clone()).or_insert(0);
        }
        match (u.state, u.nodes) {
            (RowStatus::Valid, Some(n)) => {
                acc.valid += 1;
                acc.total += u128::from(u.multiplicity) * u128::from(n);
                for (m, paths) in &u.first_moves {
                    *acc.divide.entry(m.clone()).or_insert(0) += u128::from(*paths) * u128::from(n);
                }
            }
            (RowStatus::Failed, _) => acc.failed += 1,
            _ => {}
        }
    }

    /// The table, one row per start position seen.
    pub fn finish(self, depth: u32, fen_of: impl Fn(u16) -> String) -> Vec<SplitRow> {
        self.by_sp
            .into_iter()
            .map(|(sp, a)| {
                let complete = a.valid == a.count;
                SplitRow {
                    sp,
                    fen: fen_of(sp),
                    depth,
                    nodes: complete.then_some(a.total),
                    nodes_so_far: a.total,
                    status: if a.failed > 0 {
                        SplitStatus::Failed
                    } else if complete {
                        SplitStatus::Valid
                    } else {
                        SplitStatus::Partial
                    },
                    share_done: a.valid as f64 / a.count.max(1) as f64,
                    workunits: a.count,
                    divide: a.divide.into_iter().collect(),
                }
            })
            .collect()
    }
}

/// The CSV header of split tables; the first five columns match the unsplit table's.
pub const SPLIT_CSV_HEADER: &str = "sp,fen,depth,nodes,status,share_done,workunits";

/// A split table as CSV; `nodes` is empty until the start position is complete.
pub fn split_csv(rows: &[SplitRow]) -> String {
    let mut out = String::from(SPLIT_CSV_HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{:.4},{}\n",
            r.sp,
            r.fen,
            r.depth,
            r.nodes.map(|n| n.to_string()).unwrap_or_default(),
            r.status,
            r.share_done,
            r.workunits
        ));
    }
    out
}

/// Perft(7) summed over all 960 start positions (OEIS A157851).
pub const OEIS_D7: u128 = 2_854_198_413_886;
/// Perft(8) summed over all 960 start positions (OEIS A157851).
pub const OEIS_D8: u128 = 75_006_431_287_937;

/// OEIS A157851 a(0..=8): the sum of perft(n) over all 960 start positions.
pub const OEIS_A157851: [u128; 9] = [
    960,
    18_882,
    371_766,
    8_224_968,
    181_106_056,
    4_433_048_830,
    107_637_760_217,
    OEIS_D7,
    OEIS_D8,
];

/// The reference table shipped with the sources: start position → perft(1..=6).
pub fn reference_table() -> BTreeMap<u16, [u64; 6]> {
    let text = include_str!("../../../common/tests/data/chess960_startpos_perft.csv");
    let mut map = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Some(sp), true) = (f.first().and_then(|s| s.parse().ok()), f.len() >= 9) else {
            continue;
        };
        let mut d = [0u64; 6];
        for (i, v) in d.iter_mut().enumerate() {
            *v = f[3 + i].parse().unwrap_or(0);
        }
        map.insert(sp, d);
    }
    map
}

/// The verdict of [`check`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// Start positions compared with the reference table (depth ≤ 6).
    pub compared: usize,
    /// Start positions that differ from it: (sp, ours, reference).
    pub mismatches: Vec<(u16, String, String)>,
    /// With all 960 complete at depth 7 or 8: (ours, OEIS A157851) as strings.
    pub oeis: Option<(String, String)>,
    /// No mismatch, and the OEIS sum (when applicable) agrees.
    pub ok: bool,
}

/// Checks complete start positions against the reference table (depth ≤ 6) and, when all 960
/// are complete at a depth of 1 to 8, the sum against OEIS A157851.
pub fn check(depth: u32, totals: &BTreeMap<u16, u128>) -> CheckReport {
    let mut compared = 0;
    let mut mismatches = Vec::new();
    if (1..=6).contains(&depth) {
        let table = reference_table();
        for (sp, &n) in totals {
            if let Some(r) = table.get(sp) {
                compared += 1;
                let want = u128::from(r[depth as usize - 1]);
                if n != want {
                    mismatches.push((*sp, n.to_string(), want.to_string()));
                }
            }
        }
    }
    let oeis = OEIS_A157851
        .get(depth as usize)
        .copied()
        .filter(|_| depth > 0 && totals.len() == 960)
        .map(|want| (totals.values().sum::<u128>().to_string(), want.to_string()));
    let ok = mismatches.is_empty() && oeis.as_ref().is_none_or(|(a, b)| a == b);
    CheckReport {
        compared,
        mismatches,
        oeis,
        ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(sp: u16, state: RowStatus, nodes: Option<u64>, moves: &[(&str, u64)]) -> SplitUnit {
        SplitUnit {
            origin_sp: sp,
            state,
            nodes,
            multiplicity: moves.iter().map(|m| m.1).sum(),
            first_moves: moves.iter().map(|(m, n)| (m.to_string(), *n)).collect(),
        }
    }

    #[test]
    fn assembles_totals_divide_and_status() {
        let units = vec![
            unit(5, RowStatus::Valid, Some(10), &[("a2a3", 1), ("b2b3", 2)]),
            unit(5, RowStatus::Valid, Some(7), &[("a2a3", 1)]),
            unit(6, RowStatus::Valid, Some(3), &[("a2a3", 1)]),
            unit(6, RowStatus::Open, None, &[("b2b3", 1)]),
            unit(7, RowStatus::Failed, None, &[("a2a3", 1)]),
        ];
        let rows = assemble(4, &units, |sp| format!("fen{sp}"));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].nodes, Some(37));
        assert_eq!(rows[0].status, SplitStatus::Valid);
        assert_eq!(
            rows[0].divide,
            vec![("a2a3".into(), 17), ("b2b3".into(), 20)]
        );
        assert_eq!(
            (rows[1].nodes, rows[1].nodes_so_far, rows[1].status.as_str()),
            (None, 3, "partial")
        );
        assert_eq!(rows[1].share_done, 0.5);
        assert_eq!(rows[2].status, SplitStatus::Failed);
        let csv = split_csv(&rows);
        assert!(csv.starts_with("sp,fen,depth,nodes,status,"));
        assert!(csv.contains("\n5,fen5,4,37,valid,1.0000,2\n"));
    }

    #[test]
    fn checks_against_reference_and_oeis() {
        let table = reference_table();
        assert_eq!(table.len(), 960);
        let mut totals: BTreeMap<u16, u128> = BTreeMap::new();
        totals.insert(518, 4_865_609);
        totals.insert(0, u128::from(table[&0][4]));
        assert!(check(5, &totals).ok);
        assert_eq!(check(5, &totals).compared, 2);
        totals.insert(1, 1);
        let r = check(5, &totals);
        assert!(!r.ok);
        assert_eq!(r.mismatches[0].0, 1);
        // OEIS applies only with all 960.
        assert_eq!(check(7, &totals).oeis, None);
        let all: BTreeMap<u16, u128> = (0..960u16).map(|sp| (sp, 0)).collect();
        let r = check(7, &all);
        assert_eq!(r.oeis, Some(("0".into(), OEIS_D7.to_string())));
        assert!(!r.ok);
        let mut exact = all.clone();
        exact.insert(0, OEIS_D8);
        assert!(check(8, &exact).ok);
        // Shallower depths: the reference table's sums are A157851 too.
        for depth in 1..=6u32 {
            let all: BTreeMap<u16, u128> = table
                .iter()
                .map(|(&sp, r)| (sp, u128::from(r[depth as usize - 1])))
                .collect();
            let r = check(depth, &all);
            assert!(r.ok && r.compared == 960, "depth {depth}");
            let want = OEIS_A157851[depth as usize].to_string();
            assert_eq!(r.oeis, Some((want.clone(), want)));
        }
    }
}
