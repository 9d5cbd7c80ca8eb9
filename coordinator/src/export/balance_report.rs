//! The balance report of an analysis campaign: the ranking and summary of
//! [`c960_common::balance`], with its agreement with the published table, as JSON or an SVG
//! chart.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use c960_common::balance::{self, PositionScore, RankedPosition};
use serde::Serialize;

use crate::model::{AnalysisRow, Campaign, RowStatus};

/// The scores of the valid rows with a start position, for [`balance::report`].
pub fn position_scores(rows: &[AnalysisRow]) -> Vec<PositionScore> {
    rows.iter()
        .filter_map(|r| {
            let a = r.result.as_ref()?;
            Some(PositionScore {
                sp: r.sp?,
                score_cp: a.score_cp,
                mate: a.mate,
            })
        })
        .collect()
}

/// One position in the balance report.
#[derive(Clone, Debug, Serialize)]
pub struct BalanceEntry {
    /// Start position.
    pub sp: u16,
    /// Rank, 1 = best for White; ties share a rank.
    pub rank: usize,
    /// Centipawns (White's view), unless mate.
    pub score_cp: Option<i32>,
    /// Mate distance, positive when White mates.
    pub mate: Option<i32>,
    /// White's win/draw/loss per mille when the engine gave it.
    pub wdl: Option<[u16; 3]>,
    /// Best move.
    pub best_move: Option<String>,
    /// Engine id of the canonical result.
    pub engine: String,
}

/// The balance summary of an analysis campaign.
#[derive(Clone, Debug, Serialize)]
pub struct BalanceSummary {
    /// Positions with a canonical score.
    pub positions_scored: usize,
    /// Positions in the campaign.
    pub positions_total: usize,
    /// Every workunit is valid.
    pub complete: bool,
    /// Mean White edge in centipawns (a mate counts as ±10000).
    pub mean_cp: f64,
    /// Median White edge in centipawns.
    pub median_cp: f64,
    /// Spread: population standard deviation in centipawns.
    pub std_dev_cp: f64,
    /// Positions scoring above zero for White.
    pub white_better: usize,
    /// Smallest absolute scores, most balanced first.
    pub most_balanced: Vec<BalanceEntry>,
    /// Largest absolute scores, least balanced first.
    pub least_balanced: Vec<BalanceEntry>,
    /// The classical position 518, when scored.
    pub classical: Option<BalanceEntry>,
    /// Share of scored positions that 518 beats for White (0..1).
    pub classical_percentile: Option<f64>,
    /// Distinct engine ids among the canonical results (one, unless a UCI campaign had
    /// volunteers with different engines; each position's quorum is single-engine regardless).
    pub engines: Vec<String>,
    /// Agreement with the published table ([`crate::work::known::PUBLISHED_BALANCE`]) over the
    /// positions scored, with 95 % bootstrap intervals.
    pub published_agreement: PublishedAgreement,
}

/// How an analysis table agrees with the published opening-balance table.
#[derive(Clone, Debug, Serialize)]
pub struct PublishedAgreement {
    /// The published table.
    pub table: &'static str,
    /// Pearson and Spearman with intervals over the positions both have.
    #[serde(flatten)]
    pub agreement: balance::Agreement,
}

/// The agreement of scored positions with the published table (seed 960, fixed, so that a page
/// and an export of one table show one figure). The bootstrap takes some 85 ms for 960 starts,
/// so the answers for the last few distinct tables are kept, keyed by the scores themselves: a
/// page view or an export of an unchanged table does not redo it.
pub fn published_agreement(scores: &[PositionScore]) -> PublishedAgreement {
    /// Distinct score tables remembered: a dashboard shows a handful of analysis campaigns.
    const REMEMBERED: usize = 8;
    type Memo = VecDeque<(Vec<PositionScore>, balance::Agreement)>;
    static MEMO: Mutex<Memo> = Mutex::new(VecDeque::new());
    let memo = || MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    let known = memo()
        .iter()
        .find(|(k, _)| k.as_slice() == scores)
        .map(|(_, a)| a.clone());
    let agreement = known.unwrap_or_else(|| {
        let a = balance::agreement(
            scores,
            crate::work::known::published_balance(),
            balance::AGREEMENT_RESAMPLES,
            960,
        );
        let mut m = memo();
        if m.len() == REMEMBERED {
            m.pop_front();
        }
        m.push_back((scores.to_vec(), a.clone()));
        a
    });
    PublishedAgreement {
        table: crate::work::known::PUBLISHED_BALANCE,
        agreement,
    }
}

/// The balance report of an analysis campaign: summary and the full ranking.
#[derive(Clone, Debug, Serialize)]
pub struct BalanceJson<'a> {
    /// The campaign.
    pub campaign: &'a Campaign,
    /// The summary.
    pub summary: BalanceSummary,
    /// Every scored position, best for White first.
    pub ranked: Vec<BalanceEntry>,
}

/// Builds the balance report of an analysis table; `Err` when no position is scored yet.
pub fn balance_report<'a>(
    campaign: &'a Campaign,
    rows: &[AnalysisRow],
) -> Result<(BalanceJson<'a>, balance::BalanceReport), String> {
    let scores = position_scores(rows);
    let report = balance::report(&scores).map_err(|e| e.to_string())?;
    let entry = |r: &RankedPosition| {
        let row = rows.iter().find(|x| x.sp == Some(r.score.sp));
        let a = row.and_then(|x| x.result.as_ref());
        BalanceEntry {
            sp: r.score.sp,
            rank: r.rank,
            score_cp: r.score.score_cp,
            mate: r.score.mate,
            wdl: a.and_then(|a| a.wdl),
            best_move: a.and_then(|a| a.best_move.clone()),
            engine: a.map(|a| a.engine_id.clone()).unwrap_or_default(),
        }
    };
    let mut engines: Vec<String> = rows
        .iter()
        .filter_map(|r| r.result.as_ref().map(|a| a.engine_id.clone()))
        .collect();
    engines.sort();
    engines.dedup();
    let summary = BalanceSummary {
        positions_scored: report.ranked.len(),
        positions_total: rows.len(),
        complete: rows.iter().all(|r| r.status == RowStatus::Valid),
        mean_cp: report.mean_cp,
        median_cp: report.median_cp,
        std_dev_cp: report.std_dev_cp,
        white_better: report.white_better,
        most_balanced: report.most_balanced.iter().map(entry).collect(),
        least_balanced: report.least_balanced.iter().map(entry).collect(),
        classical: report.classical.as_ref().map(entry),
        classical_percentile: report.classical_percentile(),
        engines,
        published_agreement: published_agreement(&scores),
    };
    let ranked = report.ranked.iter().map(entry).collect();
    Ok((
        BalanceJson {
            campaign,
            summary,
            ranked,
        },
        report,
    ))
}

/// The balance report as pretty JSON.
pub fn balance_json(campaign: &Campaign, rows: &[AnalysisRow]) -> Result<String, String> {
    let (j, _) = balance_report(campaign, rows)?;
    serde_json::to_string_pretty(&j).map_err(|e| e.to_string())
}

/// The sorted-score chart (518 marked) as SVG.
pub fn balance_svg(campaign: &Campaign, rows: &[AnalysisRow]) -> Result<String, String> {
    // Only the ranking: the chart shows no agreement, so the bootstrap is not computed.
    let report = balance::report(&position_scores(rows)).map_err(|e| e.to_string())?;
    let title = format!(
        "Campaign {}: depth {} with {}",
        campaign.id,
        campaign.depth,
        campaign.engine.as_deref().unwrap_or("?")
    );
    Ok(balance::svg_chart(&report, &title))
}
