//! One page of a campaign's table as the campaign page shows it: the view model of each kind
//! (perft, split perft, analysis with its agreement with the published table, self-play) and
//! [`table_page`], which reads only the rows of that page where the table can be large.

use c960_common::balance::PositionScore;

use super::ROWS_PER_PAGE;
use super::format;
use crate::model::{Campaign, CampaignKind, StoreError};
use crate::store::Store;
use crate::work::assembly;
use crate::work::campaign::parse_numbers;
use c960_common::family::Family;

/// A page of a campaign table: one of the three kinds.
pub struct TablePage {
    /// Page shown (from 0).
    pub page: u64,
    /// Pages.
    pub pages: u64,
    /// Whether perft rows carry a reference column.
    pub reference: bool,
    /// Unsplit perft rows.
    pub perft: Option<Vec<PerftRowView>>,
    /// Split perft rows.
    pub split: Option<Vec<assembly::SplitRow>>,
    /// Analysis rows.
    pub analysis: Option<Vec<AnalysisRowView>>,
    /// An analysis table's agreement with the published table, once a position is scored.
    pub agreement: Option<AgreementView>,
    /// Self-play rows.
    pub self_play: Option<Vec<SelfPlayRowView>>,
}

/// A row of a self-play table: White's results, score with its interval and Elo-style advantage.
pub struct SelfPlayRowView {
    /// Start position.
    pub sp: u16,
    /// FEN.
    pub fen: String,
    /// Status.
    pub status: String,
    /// `W / D / L`.
    pub wdl: String,
    /// White's score and its 95 % interval.
    pub score: String,
    /// The Elo-style White advantage and its interval.
    pub elo: String,
    /// Agreeing results.
    pub agreeing: u32,
}

/// A row of an unsplit perft table.
pub struct PerftRowView {
    /// Start position (its number in the campaign's family).
    pub sp: u32,
    /// FEN.
    pub fen: String,
    /// Status.
    pub status: String,
    /// Canonical nodes.
    pub nodes: Option<u64>,
    /// Agreeing results.
    pub agreeing: u32,
    /// Results returned, of the quorum (an open row waiting for its second replica shows
    /// `1 / 2`).
    pub returned: (u32, u32),
    /// Against the reference table (depth ≤ 6, valid rows).
    pub reference_ok: Option<bool>,
}

/// How an analysis table agrees with the published opening-balance table.
#[derive(Clone)]
pub struct AgreementView {
    /// The published table's name.
    pub table: &'static str,
    /// Positions in both.
    pub n: usize,
    /// `0.738 [0.692, 0.775]`, or `—`.
    pub pearson: String,
    /// Likewise for Spearman's rho.
    pub spearman: String,
    /// Bootstrap resamples behind the intervals.
    pub resamples: usize,
}

/// A row of an analysis table.
pub struct AnalysisRowView {
    /// Start position.
    pub sp: u16,
    /// FEN.
    pub fen: String,
    /// Status.
    pub status: String,
    /// Score in centipawns or mate.
    pub score: String,
    /// Best move.
    pub best_move: String,
    /// Agreeing results.
    pub agreeing: u32,
    /// Engine.
    pub engine: String,
}

/// One page of a campaign's table, reading only that page's start positions where the table
/// can be large (split campaigns, and unsplit perft over a family: up to 921,600 rows).
pub fn table_page(store: &dyn Store, c: &Campaign, page: u64) -> Result<TablePage, StoreError> {
    let family = Family::parse(&c.family).map_err(|e| StoreError::Db(e.to_string()))?;
    let numbers = parse_numbers(family, &c.positions).map_err(StoreError::Db)?;
    let pages = numbers.len().div_ceil(ROWS_PER_PAGE).max(1) as u64;
    let page = page.min(pages - 1);
    let slice: &[u32] = numbers
        .chunks(ROWS_PER_PAGE)
        .nth(page as usize)
        .unwrap_or_default();
    let in_page = |n: Option<u32>| n.is_some_and(|n| slice.binary_search(&n).is_ok());
    let mut out = TablePage {
        page,
        pages,
        reference: c.kind == CampaignKind::Perft
            && family == Family::Chess960
            && (1..=6).contains(&c.depth),
        perft: None,
        split: None,
        analysis: None,
        agreement: None,
        self_play: None,
    };
    if c.kind == CampaignKind::SelfPlay {
        let (_, rows) = store.self_play_table(c.id)?;
        let elo = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |e| format!("{e:+.0}"));
        out.self_play = Some(
            rows.into_iter()
                .filter(|r| in_page(r.sp.map(u32::from)))
                .map(|r| {
                    let s = r.result.as_ref().map(crate::export::self_play::summary_of);
                    SelfPlayRowView {
                        sp: r.sp.unwrap_or_default(),
                        fen: r.fen.clone(),
                        status: r.status.to_string(),
                        wdl: s.map_or_else(String::new, |s| {
                            format!("{} / {} / {}", s.white_wins, s.draws, s.black_wins)
                        }),
                        score: match s.and_then(|s| s.score.zip(s.score_ci)) {
                            Some((v, (lo, hi))) => format!("{v:.3} [{lo:.3}, {hi:.3}]"),
                            None => String::new(),
                        },
                        elo: s.map_or_else(String::new, |s| {
                            format!("{} [{}, {}]", elo(s.elo), elo(s.elo_lo), elo(s.elo_hi))
                        }),
                        agreeing: r.agreeing_results,
                    }
                })
                .collect(),
        );
    } else if c.kind == CampaignKind::Analysis {
        let (_, rows) = store.analysis_table(c.id)?;
        let scores = crate::export::position_scores(&rows);
        if !scores.is_empty() {
            out.agreement = Some(agreement_view(&scores));
        }
        out.analysis = Some(
            rows.into_iter()
                .filter(|r| in_page(r.sp.map(u32::from)))
                .map(|r| {
                    let a = r.result.as_ref();
                    AnalysisRowView {
                        sp: r.sp.unwrap_or_default(),
                        fen: r.fen.clone(),
                        status: r.status.to_string(),
                        score: match a {
                            Some(a) => match (a.mate, a.score_cp) {
                                (Some(m), _) => format!("mate {m}"),
                                (None, Some(cp)) => format!("{cp:+}"),
                                (None, None) => "?".into(),
                            },
                            None => String::new(),
                        },
                        best_move: a.and_then(|a| a.best_move.clone()).unwrap_or_default(),
                        agreeing: r.agreeing_results,
                        engine: a.map(|a| a.engine_id.clone()).unwrap_or_default(),
                    }
                })
                .collect(),
        );
    } else if c.split_ply > 0 {
        let mut assembler = assembly::Assembler::default();
        // Split campaigns are of Chess960 starts (numbers below 960).
        let sp = |n: Option<&u32>| n.and_then(|&n| u16::try_from(n).ok());
        if let (Some(first), Some(last)) = (sp(slice.first()), sp(slice.last())) {
            store.visit_split_units_of(c.id, first, last, &mut |u| assembler.add(&u))?;
        }
        out.split = Some(assembler.finish(c.depth, |_| String::new()));
    } else {
        // The page's rows by range: a family's campaign has up to 921,600.
        let reference = out.reference.then(assembly::reference_table);
        let rows = match (slice.first(), slice.last()) {
            (Some(&first), Some(&last)) => store.table_range(c.id, first..=last)?,
            _ => Vec::new(),
        };
        out.perft = Some(
            rows.into_iter()
                .filter(|r| in_page(r.family_number.or(r.sp.map(u32::from))))
                .map(|r| {
                    let sp = r.family_number.or(r.sp.map(u32::from)).unwrap_or_default();
                    let reference_ok = reference.as_ref().and_then(|t| {
                        Some(t.get(&u16::try_from(sp).ok()?)?[c.depth as usize - 1] == r.nodes?)
                    });
                    PerftRowView {
                        sp,
                        fen: r.fen,
                        status: r.status.to_string(),
                        nodes: r.nodes,
                        agreeing: r.agreeing_results,
                        returned: (r.returned, c.quorum),
                        reference_ok,
                    }
                })
                .collect(),
        );
    }
    Ok(out)
}

/// The agreement of a campaign's scores with the published table
/// ([`crate::export::published_agreement`], which keeps it while the scores are unchanged).
fn agreement_view(scores: &[PositionScore]) -> AgreementView {
    let a = crate::export::published_agreement(scores);
    AgreementView {
        table: a.table,
        n: a.agreement.n,
        pearson: format::estimate(a.agreement.pearson),
        spearman: format::estimate(a.agreement.spearman),
        resamples: a.agreement.resamples,
    }
}
