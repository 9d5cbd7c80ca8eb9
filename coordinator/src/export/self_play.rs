//! Self-play tables: per start, the games of the canonical results, White's score with a 95 %
//! confidence interval and the Elo-style White advantage with its interval; as CSV, JSON, or
//! every game as one PGN file.
//!
//! The score of a start is s = (W + D/2) / n over its n games. Its interval is the normal
//! approximation with the per-game variance of the observed results,
//! s ± 1.96 · √(Σ (xᵢ − s)² / n) / √n, clamped to [0, 1]. The Elo-style advantage is
//! 400 · log₁₀(s / (1 − s)); its interval maps the score interval's ends (the map is
//! monotone); it is absent where s is 0 or 1 (an end at 0 or 1 is absent too).

use c960_common::wire::SelfPlayResult;
use serde::Serialize;

use crate::model::{AnalysisRow, Campaign};

/// The z value of a two-sided 95 % normal interval.
const Z95: f64 = 1.959_963_984_540_054;

/// White's results over some games, and what follows from them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ScoreSummary {
    /// Games.
    pub games: u32,
    /// Won by White.
    pub white_wins: u32,
    /// Drawn.
    pub draws: u32,
    /// Won by Black.
    pub black_wins: u32,
    /// White's score, 0..1 (`None` without games).
    pub score: Option<f64>,
    /// The 95 % interval of the score.
    pub score_ci: Option<(f64, f64)>,
    /// The Elo-style White advantage, 400·log₁₀(s/(1−s)).
    pub elo: Option<f64>,
    /// Its interval's lower end (absent where the score's is 0).
    pub elo_lo: Option<f64>,
    /// Its interval's upper end (absent where the score's is 1).
    pub elo_hi: Option<f64>,
    /// Share of draws.
    pub draw_rate: Option<f64>,
}

/// Elo-style difference of a score strictly between 0 and 1.
pub fn elo(score: f64) -> Option<f64> {
    (score > 0.0 && score < 1.0).then(|| 400.0 * (score / (1.0 - score)).log10())
}

/// The summary of W/D/L counts.
pub fn summarize(white_wins: u32, draws: u32, black_wins: u32) -> ScoreSummary {
    let games = white_wins + draws + black_wins;
    let mut s = ScoreSummary {
        games,
        white_wins,
        draws,
        black_wins,
        score: None,
        score_ci: None,
        elo: None,
        elo_lo: None,
        elo_hi: None,
        draw_rate: None,
    };
    if games == 0 {
        return s;
    }
    let n = f64::from(games);
    let score = (f64::from(white_wins) + 0.5 * f64::from(draws)) / n;
    let variance = (f64::from(white_wins) * (1.0 - score).powi(2)
        + f64::from(draws) * (0.5 - score).powi(2)
        + f64::from(black_wins) * score.powi(2))
        / n;
    let half = Z95 * (variance / n).sqrt();
    let (lo, hi) = ((score - half).max(0.0), (score + half).min(1.0));
    s.score = Some(score);
    s.score_ci = Some((lo, hi));
    s.elo = elo(score);
    s.elo_lo = elo(lo);
    s.elo_hi = elo(hi);
    s.draw_rate = Some(f64::from(draws) / n);
    s
}

/// The summary of one canonical result.
pub fn summary_of(r: &SelfPlayResult) -> ScoreSummary {
    summarize(r.white_wins, r.draws, r.black_wins)
}

/// The summary of every valid row together.
pub fn pooled(rows: &[AnalysisRow<SelfPlayResult>]) -> ScoreSummary {
    let (w, d, l) = rows
        .iter()
        .filter_map(|r| r.result.as_ref())
        .fold((0, 0, 0), |(w, d, l), r| {
            (w + r.white_wins, d + r.draws, l + r.black_wins)
        });
    summarize(w, d, l)
}

/// The mean length of the games in plies (their `PlyCount` tags).
pub fn mean_plies(r: &SelfPlayResult) -> Option<f64> {
    let plies: Vec<u64> = r
        .games
        .iter()
        .filter_map(|g| {
            let rest = &g[g.find("[PlyCount \"")? + 11..];
            rest[..rest.find('"')?].parse().ok()
        })
        .collect();
    (!plies.is_empty()).then(|| plies.iter().sum::<u64>() as f64 / plies.len() as f64)
}

/// The CSV header of a self-play table (Chess960; other families start `family,number`).
pub const SELF_PLAY_CSV_HEADER: &str = "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,draw_rate,mean_plies,nodes,engine,status,agreeing_results";

fn f(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

/// The table as CSV: one row per start; the figures are empty until a quorum agrees.
pub fn csv(campaign: &Campaign, rows: &[AnalysisRow<SelfPlayResult>]) -> String {
    let chess960 = campaign.family == "chess960";
    let mut out = if chess960 {
        SELF_PLAY_CSV_HEADER.to_string()
    } else {
        format!("family,number,{}", &SELF_PLAY_CSV_HEADER["sp,".len()..])
    };
    out.push('\n');
    for r in rows {
        let key = if chess960 {
            r.sp.map(|n| n.to_string()).unwrap_or_default()
        } else {
            let n = r.family_number.map(|n| n.to_string()).unwrap_or_default();
            format!("{},{n}", campaign.family)
        };
        let res = r.result.as_ref();
        let s = res.map(summary_of);
        let count = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "{key},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.fen,
            count(s.map(|s| s.games)),
            count(s.map(|s| s.white_wins)),
            count(s.map(|s| s.draws)),
            count(s.map(|s| s.black_wins)),
            f(s.and_then(|s| s.score), 4),
            f(s.and_then(|s| s.score_ci).map(|c| c.0), 4),
            f(s.and_then(|s| s.score_ci).map(|c| c.1), 4),
            f(s.and_then(|s| s.elo), 1),
            f(s.and_then(|s| s.elo_lo), 1),
            f(s.and_then(|s| s.elo_hi), 1),
            f(s.and_then(|s| s.draw_rate), 4),
            f(res.and_then(mean_plies), 1),
            res.map(|r| r.nodes.to_string()).unwrap_or_default(),
            c960_common::text::csv_text(res.map(|r| r.engine_id.as_str()).unwrap_or("")),
            r.status,
            r.agreeing_results,
        ));
    }
    out
}

/// One start in the JSON export.
#[derive(Serialize)]
struct JsonRow<'a> {
    sp: Option<u16>,
    family_number: Option<u32>,
    fen: &'a str,
    status: &'a str,
    agreeing_results: u32,
    summary: Option<ScoreSummary>,
    mean_plies: Option<f64>,
    nodes: Option<u64>,
    engine: Option<&'a str>,
    games: Option<&'a [String]>,
}

/// The table as JSON: `{ campaign, pooled, rows: [{ sp, fen, status, agreeing_results,
/// summary, mean_plies, nodes, engine, games: [PGN] }] }`.
pub fn json(campaign: &Campaign, rows: &[AnalysisRow<SelfPlayResult>]) -> String {
    let rows: Vec<JsonRow> = rows
        .iter()
        .map(|r| {
            let res = r.result.as_ref();
            JsonRow {
                sp: r.sp,
                family_number: r.family_number,
                fen: &r.fen,
                status: r.status.as_str(),
                agreeing_results: r.agreeing_results,
                summary: res.map(summary_of),
                mean_plies: res.and_then(mean_plies),
                nodes: res.map(|r| r.nodes),
                engine: res.map(|r| r.engine_id.as_str()),
                games: res.map(|r| r.games.as_slice()),
            }
        })
        .collect();
    serde_json::json!({ "campaign": campaign, "pooled": pooled_of(&rows), "rows": rows })
        .to_string()
}

fn pooled_of(rows: &[JsonRow]) -> ScoreSummary {
    let (w, d, l) = rows
        .iter()
        .filter_map(|r| r.summary)
        .fold((0, 0, 0), |(w, d, l), s| {
            (w + s.white_wins, d + s.draws, l + s.black_wins)
        });
    summarize(w, d, l)
}

/// Every canonical game, start by start, as one PGN file (games separated by a blank line).
pub fn pgn(rows: &[AnalysisRow<SelfPlayResult>]) -> String {
    rows.iter()
        .filter_map(|r| r.result.as_ref())
        .flat_map(|r| r.games.iter())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_intervals_and_elo() {
        let even = summarize(10, 0, 10);
        assert_eq!(even.score, Some(0.5));
        assert_eq!(even.elo, Some(0.0));
        let (lo, hi) = even.score_ci.unwrap();
        // Per-game sd 0.5, n 20: half-width 1.96 · 0.5 / √20 ≈ 0.219.
        assert!((hi - 0.5 - 0.2191).abs() < 1e-3 && (0.5 - lo - 0.2191).abs() < 1e-3);
        assert!(even.elo_lo.unwrap() < 0.0 && even.elo_hi.unwrap() > 0.0);
        // Draws shrink the interval.
        let drawish = summarize(3, 14, 3);
        let (dlo, dhi) = drawish.score_ci.unwrap();
        assert!(dhi - dlo < hi - lo);
        assert_eq!(drawish.draw_rate, Some(0.7));
        // 75 %: +190.8 Elo.
        let white = summarize(15, 0, 5);
        assert!((white.elo.unwrap() - 190.85).abs() < 0.1);
        // All wins: no finite Elo, the interval clamps at 1.
        let all = summarize(4, 0, 0);
        assert_eq!((all.elo, all.score_ci), (None, Some((1.0, 1.0))));
        assert_eq!(summarize(0, 0, 0).score, None);
    }

    #[test]
    fn plies_are_read_from_the_tags() {
        let r = SelfPlayResult {
            engine_id: "e".into(),
            nodes: 1,
            white_wins: 0,
            draws: 2,
            black_wins: 0,
            games: vec![
                "[PlyCount \"10\"]\n\n1/2-1/2\n".into(),
                "[PlyCount \"21\"]\n\n1/2-1/2\n".into(),
            ],
        };
        assert_eq!(mean_plies(&r), Some(15.5));
    }
}
