//! The opening-balance report: which start positions favour White, and by how much.
//!
//! Pure computation over per-position scores (from White's point of view): ranking, summary
//! statistics, correlation between two engines' tables, CSV reading, and an SVG chart. No I/O:
//! callers read and write the files.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::startpos::{CLASSICAL, StartPosition};

/// How many positions the "most / least balanced" lists hold.
pub const EXTREMES: usize = 5;

/// The centipawn stand-in for a forced mate in statistics: far beyond any real evaluation, and
/// nearer mates rank more extreme.
const MATE_CP: f64 = 10_000.0;

/// One start position's evaluation, White's point of view.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionScore {
    /// Scharnagl number 0..959.
    pub sp: u16,
    /// Centipawns, when the score is not a mate.
    pub score_cp: Option<i32>,
    /// Mate distance in moves (positive: White mates), when the score is a mate.
    pub mate: Option<i32>,
}

/// How many of the deepest completed depths [`depth_mean_cp`] averages by default: the
/// estimator of the table of record (docs/balance.md compares 1 to 8).
pub const ESTIMATOR_DEPTHS: usize = 4;

/// The estimator of a start's score from one search: the mean of the scores (centipawns, mate
/// as in [`PositionScore::value_cp`]) of its `last` deepest completed depths. A single depth's
/// score swings by several centipawns from one iteration to the next; the mean of the last few
/// is a less noisy estimate of what a deeper search would say. `None` without depth records.
pub fn depth_mean_cp(depths: &[crate::wire::DepthRecord], last: usize) -> Option<f64> {
    let tail = &depths[depths.len().saturating_sub(last.max(1))..];
    if tail.is_empty() {
        return None;
    }
    let sum: f64 = tail
        .iter()
        .map(|d| {
            PositionScore {
                sp: 0,
                score_cp: d.score_cp,
                mate: d.mate,
            }
            .value_cp()
        })
        .sum();
    Some(sum / tail.len() as f64)
}

impl PositionScore {
    /// The score as a number for statistics: centipawns, or ±10000 (less the distance) for mate.
    pub fn value_cp(&self) -> f64 {
        match (self.score_cp, self.mate) {
            (_, Some(n)) if n > 0 => MATE_CP - n as f64,
            (_, Some(n)) => -MATE_CP - n as f64,
            (Some(cp), None) => cp as f64,
            (None, None) => 0.0,
        }
    }
}

/// Why scores could not be read or summarised.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BalanceError {
    /// The CSV has no usable header.
    #[error("CSV header must have an `sp` column and `score_cp`/`mate` or `eval_pawns`: {0:?}")]
    Header(String),
    /// A data line could not be read.
    #[error("CSV line {line}: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// No scores at all.
    #[error("no scores to report on")]
    Empty,
    /// A start position appears twice.
    #[error("start position {0} appears more than once")]
    Duplicate(u16),
}

/// Splits one CSV line into fields, honouring double quotes (`""` inside quotes is a quote).
pub fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// Reads a score table: either the analysis CSV (`sp,…,score_cp,mate,…`, centipawns) or a
/// reference table with `eval_pawns` (pawns, converted to centipawns).
pub fn parse_scores_csv(text: &str) -> Result<Vec<PositionScore>, BalanceError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or(BalanceError::Empty)?;
    let columns: Vec<String> = split_csv_line(header)
        .iter()
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let find = |name: &str| columns.iter().position(|c| c == name);
    let sp_col = find("sp").ok_or_else(|| BalanceError::Header(header.to_string()))?;
    enum Layout {
        Centipawns { cp: usize, mate: Option<usize> },
        Pawns(usize),
    }
    let layout = match (find("score_cp"), find("mate"), find("eval_pawns")) {
        (Some(cp), mate, _) => Layout::Centipawns { cp, mate },
        (None, _, Some(pawns)) => Layout::Pawns(pawns),
        _ => return Err(BalanceError::Header(header.to_string())),
    };
    let mut out = Vec::new();
    for (i, line) in lines {
        let fields = split_csv_line(line);
        let err = |reason: String| BalanceError::Line {
            line: i + 1,
            reason,
        };
        let get = |col: usize| fields.get(col).map(|f| f.trim()).unwrap_or("");
        let sp: u16 = get(sp_col)
            .parse()
            .map_err(|_| err(format!("bad sp {:?}", get(sp_col))))?;
        StartPosition::new(sp as u32).map_err(|e| err(e.to_string()))?;
        let (score_cp, mate) = match layout {
            Layout::Centipawns { cp, mate } => {
                let parse = |col: usize| -> Result<Option<i32>, BalanceError> {
                    match get(col) {
                        "" => Ok(None),
                        t => t
                            .parse()
                            .map(Some)
                            .map_err(|_| err(format!("bad number {t:?}"))),
                    }
                };
                let cp = parse(cp)?;
                let mate = match mate {
                    Some(col) => parse(col)?,
                    None => None,
                };
                (cp, mate)
            }
            Layout::Pawns(col) => {
                let t = get(col);
                let pawns: f64 = t.parse().map_err(|_| err(format!("bad number {t:?}")))?;
                (Some((pawns * 100.0).round() as i32), None)
            }
        };
        if score_cp.is_none() && mate.is_none() {
            return Err(err("neither score_cp nor mate given".to_string()));
        }
        out.push(PositionScore { sp, score_cp, mate });
    }
    Ok(out)
}

/// A position's place in the ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedPosition {
    /// Rank 1 is the position best for White; equal scores share a rank.
    pub rank: usize,
    /// The score.
    pub score: PositionScore,
}

/// The balance summary of a score table.
#[derive(Clone, Debug, PartialEq)]
pub struct BalanceReport {
    /// All positions, best for White first (ties in start-position order).
    pub ranked: Vec<RankedPosition>,
    /// Mean White edge in centipawns.
    pub mean_cp: f64,
    /// Median White edge in centipawns.
    pub median_cp: f64,
    /// Spread: population standard deviation in centipawns (the table is the population).
    pub std_dev_cp: f64,
    /// How many positions score above zero for White.
    pub white_better: usize,
    /// The positions with the smallest absolute score, most balanced first.
    pub most_balanced: Vec<RankedPosition>,
    /// The positions with the largest absolute score, least balanced first.
    pub least_balanced: Vec<RankedPosition>,
    /// The classical start position (518), when it is in the table.
    pub classical: Option<RankedPosition>,
}

impl BalanceReport {
    /// The share of positions scoring strictly lower than 518 for White (0..1), when 518 is in
    /// the table: how much of the field the classical position beats.
    pub fn classical_percentile(&self) -> Option<f64> {
        let c = self.classical.as_ref()?.score.value_cp();
        let below = self
            .ranked
            .iter()
            .filter(|r| r.score.value_cp() < c)
            .count();
        Some(below as f64 / self.ranked.len() as f64)
    }
}

/// Ranks and summarises a score table.
pub fn report(scores: &[PositionScore]) -> Result<BalanceReport, BalanceError> {
    if scores.is_empty() {
        return Err(BalanceError::Empty);
    }
    let mut seen = BTreeMap::new();
    for s in scores {
        if seen.insert(s.sp, ()).is_some() {
            return Err(BalanceError::Duplicate(s.sp));
        }
    }
    let mut sorted: Vec<&PositionScore> = scores.iter().collect();
    sorted.sort_by(|a, b| b.value_cp().total_cmp(&a.value_cp()).then(a.sp.cmp(&b.sp)));
    let mut ranked = Vec::with_capacity(sorted.len());
    for (i, s) in sorted.iter().enumerate() {
        // Competition ranking: a tie takes the rank of the first of the tied positions.
        let rank = match ranked.last() {
            Some(RankedPosition { rank, score }) if score.value_cp() == s.value_cp() => *rank,
            _ => i + 1,
        };
        ranked.push(RankedPosition {
            rank,
            score: (*s).clone(),
        });
    }
    let values: Vec<f64> = scores.iter().map(PositionScore::value_cp).collect();
    let n = values.len() as f64;
    let mean_cp = values.iter().sum::<f64>() / n;
    let std_dev_cp = (values.iter().map(|v| (v - mean_cp).powi(2)).sum::<f64>() / n).sqrt();
    let mut ordered = values.clone();
    ordered.sort_by(f64::total_cmp);
    let mid = ordered.len() / 2;
    let median_cp = if ordered.len() % 2 == 1 {
        ordered[mid]
    } else {
        (ordered[mid - 1] + ordered[mid]) / 2.0
    };
    let white_better = values.iter().filter(|&&v| v > 0.0).count();
    let mut by_balance = ranked.clone();
    by_balance.sort_by(|a, b| {
        a.score
            .value_cp()
            .abs()
            .total_cmp(&b.score.value_cp().abs())
            .then(a.score.sp.cmp(&b.score.sp))
    });
    let most_balanced = by_balance.iter().take(EXTREMES).cloned().collect();
    let least_balanced = by_balance.iter().rev().take(EXTREMES).cloned().collect();
    let classical = ranked.iter().find(|r| r.score.sp == CLASSICAL).cloned();
    Ok(BalanceReport {
        ranked,
        mean_cp,
        median_cp,
        std_dev_cp,
        white_better,
        most_balanced,
        least_balanced,
        classical,
    })
}

/// Pearson's linear correlation coefficient; `None` with fewer than two pairs, unequal lengths,
/// or a constant series.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Ranks 1..=n of `values`, ties sharing the mean of their ranks (as Spearman's rho requires).
pub fn fractional_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = mean_rank;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation: Pearson's coefficient of the fractional ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    pearson(&fractional_ranks(x), &fractional_ranks(y))
}

/// The agreement of two score tables over the start positions both contain.
#[derive(Clone, Debug, PartialEq)]
pub struct Correlation {
    /// Number of positions in both tables.
    pub n: usize,
    /// Pearson's r of the scores.
    pub pearson: Option<f64>,
    /// Spearman's rho of the scores.
    pub spearman: Option<f64>,
}

/// The values of the positions both tables contain, in `a`'s order: `a`'s, and `b`'s.
fn paired(a: &[PositionScore], b: &[PositionScore]) -> (Vec<f64>, Vec<f64>) {
    let b_by_sp: BTreeMap<u16, f64> = b.iter().map(|s| (s.sp, s.value_cp())).collect();
    a.iter()
        .filter_map(|s| b_by_sp.get(&s.sp).map(|&v| (s.value_cp(), v)))
        .unzip()
}

/// Correlates two tables position by position.
pub fn correlate(a: &[PositionScore], b: &[PositionScore]) -> Correlation {
    let (x, y) = paired(a, b);
    Correlation {
        n: x.len(),
        pearson: pearson(&x, &y),
        spearman: spearman(&x, &y),
    }
}

/// A statistic with its 95 % percentile bootstrap interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The statistic over all pairs.
    pub value: f64,
    /// 2.5th percentile of the resampled statistic.
    pub low: f64,
    /// 97.5th percentile of the resampled statistic.
    pub high: f64,
}

/// How well one score table agrees with another: [`Correlation`] with bootstrap intervals, the
/// figures docs/balance.md and the dashboard's analysis page give.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// Number of positions in both tables.
    pub n: usize,
    /// Pearson's r and its interval.
    pub pearson: Option<Estimate>,
    /// Spearman's rho and its interval.
    pub spearman: Option<Estimate>,
    /// Bootstrap resamples behind the intervals.
    pub resamples: usize,
}

/// Bootstrap resamples the agreement figures use by default (a few milliseconds for 960 starts).
pub const AGREEMENT_RESAMPLES: usize = 1000;

/// Correlates two tables over the positions both contain, each coefficient with a 95 %
/// percentile bootstrap interval from `resamples` resamples of those positions (with
/// replacement, drawn by a SplitMix64 stream from `seed`, so the figures are reproducible).
/// Resamples whose coefficient is undefined (a constant series) are left out.
///
/// ```
/// use c960_common::balance::{PositionScore, agreement};
/// let t = |cps: &[i32]| -> Vec<PositionScore> {
///     cps.iter().enumerate()
///         .map(|(i, &cp)| PositionScore { sp: i as u16, score_cp: Some(cp), mate: None })
///         .collect()
/// };
/// let a = agreement(&t(&[10, 20, 30, 40, 50]), &t(&[11, 19, 33, 41, 48]), 200, 960);
/// let r = a.pearson.unwrap();
/// assert_eq!(a.n, 5);
/// assert!(r.value > 0.99 && r.low <= r.value && r.value <= r.high);
/// ```
pub fn agreement(
    a: &[PositionScore],
    b: &[PositionScore],
    resamples: usize,
    seed: u64,
) -> Agreement {
    let (x, y) = paired(a, b);
    let mut state = seed;
    let mut next = move || {
        // SplitMix64: a tiny, well-mixed stream; no cryptographic claim is needed here.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (mut ps, mut ss) = (Vec::with_capacity(resamples), Vec::with_capacity(resamples));
    let (mut rx, mut ry) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    if x.len() >= 2 {
        for _ in 0..resamples {
            for i in 0..x.len() {
                let j = (next() % x.len() as u64) as usize;
                rx[i] = x[j];
                ry[i] = y[j];
            }
            ps.extend(pearson(&rx, &ry));
            ss.extend(spearman(&rx, &ry));
        }
    }
    let estimate = |value: Option<f64>, mut draws: Vec<f64>| {
        let value = value?;
        if draws.is_empty() {
            return Some(Estimate {
                value,
                low: value,
                high: value,
            });
        }
        draws.sort_by(f64::total_cmp);
        let at = |q: f64| draws[((q * draws.len() as f64) as usize).min(draws.len() - 1)];
        Some(Estimate {
            value,
            low: at(0.025),
            high: at(0.975),
        })
    };
    Agreement {
        n: x.len(),
        pearson: estimate(pearson(&x, &y), ps),
        spearman: estimate(spearman(&x, &y), ss),
        resamples,
    }
}

/// An SVG bar chart of the scores sorted from best for White to best for Black, with the
/// classical position 518 drawn in red and labelled. Mates are clipped to the chart.
pub fn svg_chart(report: &BalanceReport, title: &str) -> String {
    const WIDTH: f64 = 1000.0;
    const HEIGHT: f64 = 420.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 40.0;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let n = report.ranked.len().max(1);
    // Scale to the largest non-mate magnitude, at least half a pawn, rounded up to 10 cp.
    let max_abs = report
        .ranked
        .iter()
        .map(|r| r.score.value_cp().abs())
        .filter(|v| *v < MATE_CP / 2.0)
        .fold(50.0_f64, f64::max);
    let max_abs = (max_abs / 10.0).ceil() * 10.0;
    let y_of =
        |cp: f64| TOP + plot_h / 2.0 - cp.clamp(-max_abs, max_abs) / max_abs * (plot_h / 2.0);
    let bar_w = plot_w / n as f64;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        WIDTH / 2.0,
        xml_escape(title)
    );
    // Horizontal grid lines at five levels each side, labelled in pawns.
    for step in -4..=4 {
        let cp = max_abs * step as f64 / 4.0;
        let y = y_of(cp);
        let stroke = if step == 0 { "#000" } else { "#ddd" };
        let _ = writeln!(
            svg,
            r#"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{stroke}"/>"#,
            LEFT + plot_w
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:+.2}</text>"#,
            LEFT - 6.0,
            y + 4.0,
            cp / 100.0
        );
    }
    let zero = y_of(0.0);
    let mut classical_x = None;
    for (i, r) in report.ranked.iter().enumerate() {
        let x = LEFT + i as f64 * bar_w;
        let y = y_of(r.score.value_cp());
        let (top, h) = if y < zero {
            (y, zero - y)
        } else {
            (zero, y - zero)
        };
        let is_classical = r.score.sp == CLASSICAL;
        let fill = if is_classical {
            "#d00"
        } else if r.score.value_cp() >= 0.0 {
            "#6a8fc7"
        } else {
            "#555"
        };
        if is_classical {
            classical_x = Some((x, y));
        }
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.2}" y="{top:.2}" width="{:.2}" height="{h:.2}" fill="{fill}"><title>{} {}</title></rect>"#,
            bar_w.max(0.5),
            r.score.sp,
            format_score(&r.score)
        );
    }
    if let (Some((x, y)), Some(c)) = (classical_x, &report.classical) {
        // A marker line across the whole plot, so 518 stays visible even when its bar is tiny.
        let cx = x + bar_w / 2.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{cx:.2}" y1="{TOP}" x2="{cx:.2}" y2="{:.1}" stroke="#d00" stroke-dasharray="4 3"/>"##,
            TOP + plot_h
        );
        let anchor = if cx > LEFT + plot_w * 0.7 {
            "end"
        } else {
            "start"
        };
        let dx = if anchor == "end" { -6.0 } else { 6.0 };
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" fill="#d00" text-anchor="{anchor}">518 RNBQKBNR: {} (rank {} of {})</text>"##,
            cx + dx,
            (y - 8.0).max(TOP + 12.0),
            format_score(&c.score),
            c.rank,
            report.ranked.len()
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">start positions sorted by White's edge (pawns); red: 518</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 12.0
    );
    svg.push_str("</svg>\n");
    svg
}

/// `+0.35` or `#3` / `#-3`.
pub fn format_score(s: &PositionScore) -> String {
    match (s.score_cp, s.mate) {
        (_, Some(n)) => format!("#{n}"),
        (Some(cp), None) => format!("{:+.2}", cp as f64 / 100.0),
        (None, None) => "?".to_string(),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(sp: u16, cp: i32) -> PositionScore {
        PositionScore {
            sp,
            score_cp: Some(cp),
            mate: None,
        }
    }

    #[test]
    fn pearson_and_spearman_of_known_series() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [2.0, 4.0, 6.0, 8.0, 10.0];
        assert!((pearson(&x, &y).unwrap() - 1.0).abs() < 1e-12);
        let z = [5.0, 4.0, 3.0, 2.0, 1.0];
        assert!((pearson(&x, &z).unwrap() + 1.0).abs() < 1e-12);
        // Monotone but not linear: Spearman is exactly 1, Pearson less.
        let cubes = [1.0, 8.0, 27.0, 64.0, 125.0];
        assert!((spearman(&x, &cubes).unwrap() - 1.0).abs() < 1e-12);
        assert!(pearson(&x, &cubes).unwrap() < 0.99);
        // A textbook value: r for these pairs is 0.8 (hand-computed: sxy = 8, sxx = syy = 10).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [2.0, 1.0, 4.0, 3.0, 5.0];
        assert!((pearson(&a, &b).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(pearson(&[1.0, 1.0], &[2.0, 3.0]), None);
    }

    #[test]
    fn agreement_brackets_the_coefficients_and_is_reproducible() {
        let a: Vec<_> = (0..200).map(|i| cp(i, (i as i32 * 7) % 50)).collect();
        let b: Vec<_> = (0..200)
            .map(|i| cp(i, (i as i32 * 7) % 50 + (i as i32 % 13)))
            .collect();
        let g = agreement(&a, &b, 500, 1);
        let c = correlate(&a, &b);
        let (p, s) = (g.pearson.unwrap(), g.spearman.unwrap());
        assert_eq!(
            (g.n, Some(p.value), Some(s.value)),
            (c.n, c.pearson, c.spearman)
        );
        assert!(p.low < p.value && p.value < p.high, "{p:?}");
        assert!(s.low < s.value && s.value < s.high, "{s:?}");
        assert!(
            p.high - p.low < 0.2,
            "an interval of 200 pairs is narrow: {p:?}"
        );
        assert_eq!(g, agreement(&a, &b, 500, 1), "one seed, one answer");
        assert_ne!(
            g,
            agreement(&a, &b, 500, 2),
            "the seed drives the resamples"
        );
        // Fewer than two common positions: no coefficient at all.
        let none = agreement(&a[..1], &b, 100, 1);
        assert_eq!((none.n, none.pearson, none.spearman), (1, None, None));
    }

    #[test]
    fn ties_share_the_mean_rank() {
        assert_eq!(
            fractional_ranks(&[10.0, 20.0, 20.0, 5.0]),
            vec![2.0, 3.5, 3.5, 1.0]
        );
    }

    #[test]
    fn report_ranks_and_summarises() {
        let scores = vec![cp(0, 30), cp(518, 20), cp(2, -10), cp(3, 20), cp(4, 60)];
        let r = report(&scores).unwrap();
        let order: Vec<u16> = r.ranked.iter().map(|p| p.score.sp).collect();
        assert_eq!(order, vec![4, 0, 3, 518, 2]);
        let ranks: Vec<usize> = r.ranked.iter().map(|p| p.rank).collect();
        assert_eq!(ranks, vec![1, 2, 3, 3, 5]);
        assert!((r.mean_cp - 24.0).abs() < 1e-9);
        assert_eq!(r.median_cp, 20.0);
        assert_eq!(r.white_better, 4);
        assert_eq!(r.most_balanced[0].score.sp, 2);
        assert_eq!(r.least_balanced[0].score.sp, 4);
        assert_eq!(r.classical.as_ref().unwrap().rank, 3);
        assert_eq!(r.classical_percentile(), Some(0.2));
        let svg = svg_chart(&r, "test");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("518 RNBQKBNR"));
        assert_eq!(
            report(&[cp(1, 0), cp(1, 2)]),
            Err(BalanceError::Duplicate(1))
        );
    }

    #[test]
    fn reads_both_csv_layouts() {
        let analysis = "sp,fen,depth,score_cp,mate,best_move,engine\n\
                        0,bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1,10,25,,e2e4,\"x, y\"\n\
                        1,fen,10,,3,e2e4,e\n";
        let s = parse_scores_csv(analysis).unwrap();
        assert_eq!(
            s,
            vec![
                cp(0, 25),
                PositionScore {
                    sp: 1,
                    score_cp: None,
                    mate: Some(3)
                }
            ]
        );
        let reference = "sp,eval_pawns,placement\n0,0.21,BBQNNRKR\n1,-0.2,BQNBNRKR\n";
        assert_eq!(
            parse_scores_csv(reference).unwrap(),
            vec![cp(0, 21), cp(1, -20)]
        );
        assert!(parse_scores_csv("a,b\n1,2\n").is_err());
        assert!(parse_scores_csv("sp,score_cp\n960,1\n").is_err());
        assert_eq!(
            split_csv_line(r#"a,"b,""c""",d"#),
            vec!["a", "b,\"c\"", "d"]
        );
    }

    #[test]
    fn depth_mean_averages_the_deepest_records() {
        let rec = |depth, cp| crate::wire::DepthRecord {
            depth,
            score_cp: Some(cp),
            mate: None,
            wdl: None,
            nodes: 0,
        };
        let d = [rec(1, 100), rec(2, 10), rec(3, 20), rec(4, 30)];
        assert_eq!(depth_mean_cp(&d, 1), Some(30.0));
        assert_eq!(depth_mean_cp(&d, 3), Some(20.0));
        assert_eq!(depth_mean_cp(&d, 9), Some(40.0));
        assert_eq!(depth_mean_cp(&d, 0), Some(30.0));
        assert_eq!(depth_mean_cp(&[], 4), None);
    }
}
