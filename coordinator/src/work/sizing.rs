//! The size of a campaign before it is created: how many workunits, how many nodes and how much
//! CPU time, which split ply `auto` picks, and the bound beyond which `campaign add` (and the
//! admin endpoint) refuses it unless forced. Everything here is an estimate from the published
//! mean perft (OEIS A157851) and measured transposition shares: nothing is enumerated, so even
//! an absurd request (`--depth 20`) is refused at once instead of enumerating millions of split
//! positions first.

use c960_common::error_code::ErrorCode;
use std::fmt;

use c960_common::text::thousands;
use serde::Serialize;

/// The deepest split: ply 6 already means ~10⁸ paths per start position to enumerate.
pub const MAX_SPLIT_PLY: u32 = 6;

/// Perft nodes one core counts per second with a hash table, about: BENCHMARKS.md's main job
/// counts 0.6–3.5 G a core-second at depths 5–7 (both replicas, overhead included), and
/// perft(7) of a start position takes 1–2 s on the development machine.
pub const NODES_PER_CORE_SECOND: f64 = 2e9;

/// The longest a workunit should take on one core: what `--split-ply auto` aims for.
const LONGEST_WORKUNIT_SECS: f64 = 600.0;

/// The most workunits a campaign may have without `--force`: past a million, creating it
/// alone takes minutes and the store's tables grow by gigabytes.
pub const MAX_WORKUNITS: u64 = 1_000_000;

/// The longest one workunit may take on one core without `--force`: a day. Longer ones hold a
/// worker's every thread for hours and are lost whole when it stops.
pub const MAX_WORKUNIT_CORE_SECS: f64 = 86_400.0;

/// Distinct positions per path k plies below a Chess960 start (transposition merging,
/// [`c960_common::split`]), indexed by k. Measured with `split::split`: plies 1–3 over all 960
/// starts, ply 4 over every 20th start (70,427 distinct of 189,331 paths on average), ply 5
/// over six starts (826,647 of 4,781,172); ply 6 is the classical start's share (9,417,681
/// positions of 119,060,324 paths, OEIS A083276 / A048987), the other plies agreeing with it
/// to within 2 %.
const DISTINCT_SHARE: [f64; MAX_SPLIT_PLY as usize + 1] =
    [1.0, 1.0, 1.0, 0.606, 0.372, 0.173, 0.079];

/// The mean perft of a start position at `depth`: OEIS A157851 / 960 up to depth 8, then
/// extrapolated by the depth-7 → depth-8 growth (×26.3 per ply).
pub fn mean_perft(depth: u32) -> f64 {
    let sums = &crate::work::assembly::OEIS_A157851;
    let sum = |d: usize| sums[d] as f64;
    let d = depth as usize;
    if d < sums.len() {
        return sum(d) / 960.0;
    }
    let last = sums.len() - 1;
    let growth = sum(last) / sum(last - 1);
    sum(last) / 960.0 * growth.powi((d - last) as i32)
}

/// The split ply `auto` picks: the smallest k for which a workunit (a position k plies deep,
/// searched to depth − k, about [`mean_perft`] of depth − k nodes) takes at most ten minutes on
/// one core. Depth 8 and below are not split: a whole start position is minutes at most. When
/// no ply does, the deepest allowed (and [`estimate`] says how long its workunits take).
pub fn auto_split_ply(depth: u32) -> u32 {
    (0..depth.min(MAX_SPLIT_PLY + 1))
        .find(|&k| core_secs(depth - k) <= LONGEST_WORKUNIT_SECS)
        .unwrap_or(depth.saturating_sub(1).min(MAX_SPLIT_PLY))
}

/// One core's seconds for a mean start position's perft at `depth`.
fn core_secs(depth: u32) -> f64 {
    mean_perft(depth) / NODES_PER_CORE_SECOND
}

/// What a campaign will hold and cost, estimated before any workunit is made.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Start positions.
    pub starts: u64,
    /// The split ply (0: one workunit per start).
    pub split_ply: u32,
    /// Workunits: exact unsplit, estimated split (starts × distinct positions at the ply).
    pub workunits: u64,
    /// Perft: the table's total, the nodes of every start summed (Chess960's mean perft per
    /// start, for every family). `None` for analysis and self-play.
    pub nodes: Option<f64>,
    /// Perft: one core's seconds for one replica of a mean workunit.
    pub workunit_core_secs: Option<f64>,
    /// Perft: one core's seconds for every replica the quorum needs (transpositions merged, so
    /// less than `nodes` at a split).
    pub core_secs: Option<f64>,
}

/// Why a campaign is refused unless forced: which bound its estimate passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refusal {
    /// Each workunit would take longer than [`MAX_WORKUNIT_CORE_SECS`] on one core.
    WorkunitTooLong(Estimate),
    /// More than [`MAX_WORKUNITS`] workunits.
    TooManyWorkunits(Estimate),
}

/// What sizing needs to know of a campaign (`NewCampaign::shape`): sizing sits below the
/// campaign module, which asks it for an estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Start positions (numbers and FENs).
    pub starts: u64,
    /// Perft or search depth.
    pub depth: u32,
    /// The split ply, already chosen (0: not split).
    pub split_ply: u32,
    /// A perft campaign (analysis and self-play have no node estimate).
    pub perft: bool,
    /// Agreeing results per workunit.
    pub quorum: u32,
}

/// The estimate of a campaign of this shape.
pub fn estimate(c: Shape) -> Estimate {
    let starts = c.starts;
    let k = c.split_ply.min(MAX_SPLIT_PLY);
    let per_start = if k == 0 {
        1.0
    } else {
        mean_perft(k) * DISTINCT_SHARE[k as usize]
    };
    let workunits = (starts as f64 * per_start).round().min(u64::MAX as f64) as u64;
    let perft = c.perft;
    let unit_secs = core_secs(c.depth.saturating_sub(k));
    Estimate {
        starts,
        split_ply: k,
        workunits,
        nodes: perft.then(|| starts as f64 * mean_perft(c.depth)),
        workunit_core_secs: perft.then_some(unit_secs),
        core_secs: perft.then(|| workunits as f64 * unit_secs * f64::from(c.quorum)),
    }
}

impl Estimate {
    /// The bound this estimate passes, if any: a workunit's length first (the deeper cause: a
    /// depth no split brings under a day usually has too many workunits too), then their number.
    pub fn refusal(&self) -> Option<Refusal> {
        if self
            .workunit_core_secs
            .is_some_and(|s| s > MAX_WORKUNIT_CORE_SECS)
        {
            Some(Refusal::WorkunitTooLong(*self))
        } else if self.workunits > MAX_WORKUNITS {
            Some(Refusal::TooManyWorkunits(*self))
        } else {
            None
        }
    }

    /// What a created campaign holds and costs, one line: `workunits` is the count the store
    /// made (the estimate's is only an estimate at a split).
    pub fn summary(&self, workunits: u64, quorum: u32) -> String {
        let units = format!("{} at split ply {}", count(workunits), self.split_ply);
        match (self.nodes, self.core_secs, self.workunit_core_secs) {
            (Some(nodes), Some(all), Some(one)) => format!(
                "{units}; about {} nodes, {} of CPU time for quorum {quorum} ({} a workunit on one core)",
                about(nodes),
                about_duration(all),
                about_duration(one)
            ),
            _ => units,
        }
    }
}

impl Refusal {
    /// Machine-readable: `workunit_too_long` or `too_many_workunits`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::WorkunitTooLong(_) => ErrorCode::WorkunitTooLong,
            Refusal::TooManyWorkunits(_) => ErrorCode::TooManyWorkunits,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Refusal::WorkunitTooLong(e) | Refusal::TooManyWorkunits(e)) = self;
        let length = e
            .workunit_core_secs
            .map(|s| format!(", {} each on one core", about_duration(s)))
            .unwrap_or_default();
        let units = match e.split_ply {
            0 => count(e.workunits),
            _ => format!("about {} workunits", about(e.workunits as f64)),
        };
        let why = match self {
            Refusal::WorkunitTooLong(_) if e.split_ply >= MAX_SPLIT_PLY => format!(
                "workunits would take more than a day each, and no split ply (at most {MAX_SPLIT_PLY}) shortens them enough"
            ),
            Refusal::WorkunitTooLong(_) => {
                "workunits would take more than a day each (a deeper split ply shortens them)"
                    .to_string()
            }
            Refusal::TooManyWorkunits(_) => format!(
                "more than {} workunits",
                thousands(u128::from(MAX_WORKUNITS))
            ),
        };
        write!(
            f,
            "campaign refused: {why}: {units} at split ply {}{length}",
            e.split_ply
        )
    }
}

/// `1 workunit`, `18,882 workunits`.
fn count(workunits: u64) -> String {
    let s = if workunits == 1 { "" } else { "s" };
    format!("{} workunit{s}", thousands(u128::from(workunits)))
}

/// `x` to two significant digits with thousands separators (`4,400,000,000`); past u128,
/// scientific notation.
pub fn about(x: f64) -> String {
    if !x.is_finite() || x < 0.0 {
        return "?".into();
    }
    if x < 100.0 {
        return format!("{}", x.round() as u64);
    }
    let exponent = x.log10().floor() as u32;
    let scale = 10u128.checked_pow(exponent - 1);
    match scale.and_then(|s| ((x / s as f64).round() as u128).checked_mul(s)) {
        Some(n) if x < 1e36 => thousands(n),
        _ => format!("{x:.1e}"),
    }
}

/// A duration as an order of magnitude: `under a second`, or `about N` seconds, minutes,
/// hours, days or years, rounded ([`about`] for the count of years).
pub fn about_duration(secs: f64) -> String {
    const MIN: f64 = 60.0;
    const HOUR: f64 = 3600.0;
    const DAY: f64 = 86_400.0;
    const YEAR: f64 = 365.25 * DAY;
    let (n, unit) = match secs {
        s if s.is_nan() => return "?".into(),
        s if s < 0.5 => return "under a second".into(),
        s if s < 90.0 => (s, "s"),
        s if s < 90.0 * MIN => (s / MIN, "min"),
        s if s < 48.0 * HOUR => (s / HOUR, "h"),
        s if s < 2.0 * YEAR => (s / DAY, "days"),
        s => return format!("about {} years", about(s / YEAR)),
    };
    format!("about {} {unit}", n.round() as u64)
}

/// Estimated perft nodes of `pos` at `depth`: perft at up to depth 3, extrapolated with the
/// last branching factor, with a margin. Cheap (at most a few ten thousand nodes).
pub fn perft_estimate(pos: &c960_common::Position, depth: u32) -> u128 {
    let k = depth.min(3);
    let counts: Vec<u64> = (0..=k).map(|d| c960_common::perft(pos, d)).collect();
    let last = counts[k as usize];
    if depth == k || last == 0 {
        return u128::from(last);
    }
    let prev = counts[k as usize - 1].max(1);
    let branching = (last as f64 / prev as f64).max(1.0);
    let est = last as f64 * branching.powi((depth - k) as i32) * 2.0;
    if est >= u128::MAX as f64 {
        u128::MAX
    } else {
        est as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::campaign::NewCampaign;
    use c960_common::wire::AnalysisEngine;

    fn perft(depth: u32, starts: u16, split: &str) -> NewCampaign {
        NewCampaign::new(depth, 2, None, (0..starts).collect())
            .unwrap()
            .split_by(split)
            .unwrap()
    }

    #[test]
    fn auto_split_keeps_workunits_under_ten_minutes_a_core() {
        for depth in 1..=8 {
            assert_eq!(auto_split_ply(depth), 0, "depth {depth}");
        }
        assert_eq!(auto_split_ply(9), 1);
        assert_eq!(auto_split_ply(10), 2);
        assert_eq!(auto_split_ply(12), 4);
        assert_eq!(
            auto_split_ply(20),
            MAX_SPLIT_PLY,
            "the deepest when none is enough"
        );
        assert!((mean_perft(7) - 2_854_198_413_886.0 / 960.0).abs() < 1.0);
        let base = NewCampaign::new(10, 2, None, vec![518]).unwrap();
        assert_eq!(base.clone().split_by("auto").unwrap().work.split_ply(), 2);
        assert_eq!(base.clone().split_by("3").unwrap().work.split_ply(), 3);
        assert!(
            base.split_by("three")
                .unwrap_err()
                .contains("ply number or auto")
        );
    }

    #[test]
    fn the_estimate_counts_workunits_nodes_and_cpu_time() {
        // Unsplit: one workunit per start, exact; the nodes are OEIS A157851's sum.
        let e = perft(5, 960, "auto").estimate();
        assert_eq!((e.starts, e.split_ply, e.workunits), (960, 0, 960));
        assert_eq!(e.nodes.unwrap().round(), 4_433_048_830.0);
        let one = e.workunit_core_secs.unwrap();
        assert!((one - 4_433_048_830.0 / 960.0 / NODES_PER_CORE_SECOND).abs() < 1e-9);
        assert!(
            (e.core_secs.unwrap() - 960.0 * 2.0 * one).abs() < 1e-6,
            "quorum 2"
        );
        assert_eq!(e.refusal(), None);
        // Split at ply 1: the number of root moves (18,882 over all 960, no transpositions).
        assert_eq!(perft(9, 960, "auto").estimate().workunits, 18_882);
        // Ply 4 of one start: about 70,000 distinct of about 190,000 paths (74,706 for sp 0).
        let e = perft(12, 1, "auto").estimate();
        assert_eq!(e.split_ply, 4);
        assert!((65_000..80_000).contains(&e.workunits), "{}", e.workunits);
        // Analysis and self-play: one workunit per start, no node estimate, no length bound.
        let a = NewCampaign::new(20, 2, None, vec![1, 2])
            .unwrap()
            .analyse(AnalysisEngine::Builtin)
            .unwrap();
        let e = a.estimate();
        assert_eq!((e.workunits, e.nodes, e.core_secs), (2, None, None));
        assert_eq!(e.refusal(), None);
    }

    #[test]
    fn the_bound_refuses_too_many_or_too_long_workunits_only() {
        // The README's examples all pass.
        for (depth, starts, split) in [
            (6, 960, "auto"),
            (9, 960, "auto"),
            (10, 960, "auto"),
            (8, 10, "2"),
            (13, 1, "auto"),
        ] {
            let e = perft(depth, starts, split).estimate();
            assert_eq!(
                e.refusal(),
                None,
                "depth {depth} × {starts} at {split}: {e:?}"
            );
        }
        // Depth 12 over all 960 (ply 4): tens of millions of workunits.
        let r = perft(12, 960, "auto").estimate().refusal().unwrap();
        assert_eq!(r.code(), ErrorCode::TooManyWorkunits);
        assert!(
            r.to_string().contains("more than 1,000,000 workunits"),
            "{r}"
        );
        // Depth 11 over all 960 splits at ply 3: about 5 million.
        assert_eq!(
            perft(11, 960, "auto")
                .estimate()
                .refusal()
                .map(|r| r.code()),
            Some(ErrorCode::TooManyWorkunits)
        );
        // Depth 20 of one start: no split brings a workunit under a day.
        let r = perft(20, 1, "auto").estimate().refusal().unwrap();
        assert_eq!(r.code(), ErrorCode::WorkunitTooLong);
        let text = r.to_string();
        assert!(
            text.contains("no split ply") && text.contains("years"),
            "{text}"
        );
        assert!(!text.contains('\n'));
        // Depth 11 unsplit by choice: each workunit takes days; a deeper split would do.
        let r = perft(11, 1, "0").estimate().refusal().unwrap();
        assert_eq!(r.code(), ErrorCode::WorkunitTooLong);
        let text = r.to_string();
        assert!(text.contains("a deeper split ply"), "{text}");
        assert!(
            text.contains(": 1 workunit at split ply 0, about 8 days each"),
            "{text}"
        );
        // Exactly at the bound is allowed; one more is not.
        let at = Estimate {
            workunits: MAX_WORKUNITS,
            ..perft(1, 1, "0").estimate()
        };
        assert_eq!(at.refusal(), None);
        let over = Estimate {
            workunits: MAX_WORKUNITS + 1,
            ..at
        };
        assert_eq!(
            over.refusal().map(|r| r.code()),
            Some(ErrorCode::TooManyWorkunits)
        );
    }

    #[test]
    fn the_summary_names_the_count_the_ply_and_the_costs() {
        let e = perft(5, 960, "auto").estimate();
        let s = e.summary(960, 2);
        assert!(
            s.starts_with("960 workunits at split ply 0; about 4,400,000,000 nodes, about "),
            "{s}"
        );
        assert!(s.contains("a workunit on one core"), "{s}");
        assert!(s.contains("for quorum 2"), "{s}");
        assert_eq!(
            e.summary(1, 1).split(';').next(),
            Some("1 workunit at split ply 0")
        );
    }

    #[test]
    fn rough_numbers_and_durations() {
        assert_eq!(about(0.4), "0");
        assert_eq!(about(99.0), "99");
        assert_eq!(about(4_433_048_830.0), "4,400,000,000");
        assert_eq!(about(18_882.0), "19,000");
        assert_eq!(about(1e40), "1.0e40");
        assert_eq!(about(f64::INFINITY), "?");
        assert_eq!(about_duration(0.2), "under a second");
        assert_eq!(about_duration(45.0), "about 45 s");
        assert_eq!(about_duration(600.0), "about 10 min");
        assert_eq!(about_duration(7200.0), "about 2 h");
        assert_eq!(about_duration(5.0 * 86_400.0), "about 5 days");
        assert_eq!(about_duration(3e9), "about 95 years");
    }
}
