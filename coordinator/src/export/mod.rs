//! Table export: perft tables as CSV (`sp,fen,depth,nodes,status,agreeing_results,digest,audit`) and
//! JSON; analysis tables as CSV (`sp,fen,depth,score_cp,mate,best_move,engine,…`, per-depth CSV)
//! and JSON; and the
//! balance report of an analysis campaign (ranking and summary, [`c960_common::balance`]) as JSON
//! or an SVG chart.

use c960_common::balance;
use c960_common::text::csv_text;
use serde::Serialize;

use crate::model::{AnalysisRow, Campaign, CampaignKind, RowStatus, TableRow};
use crate::work::transitioner::CampaignState;

mod balance_report;
pub mod replicas;
pub mod self_play;

pub use balance_report::{
    BalanceEntry, BalanceJson, BalanceSummary, PublishedAgreement, balance_json, balance_report,
    balance_svg, position_scores, published_agreement,
};

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, header first.
    Csv,
    /// One JSON object with the campaign and its rows.
    Json,
    /// Analysis campaigns: the balance report (summary and ranking) as JSON.
    Balance,
    /// Analysis campaigns: the chart of sorted scores as SVG.
    Svg,
    /// Analysis campaigns: every completed depth of every canonical result, one CSV row each.
    Depths,
    /// Self-play campaigns: every canonical game as one PGN file.
    Pgn,
    /// Perft campaigns of whole starts: every returned replica of every row, with its worker,
    /// engine (and Zobrist seed), digest and time ([`replicas`]): a table's provenance.
    Replicas,
}

impl Format {
    /// `csv`, `json`, `balance` or `svg`.
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "balance" => Ok(Format::Balance),
            "svg" => Ok(Format::Svg),
            "depths" => Ok(Format::Depths),
            "pgn" => Ok(Format::Pgn),
            "replicas" => Ok(Format::Replicas),
            other => Err(format!(
                "unknown format {other:?}; use csv, json, balance, svg, depths, pgn or replicas"
            )),
        }
    }

    /// The HTTP content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv | Format::Depths | Format::Replicas => "text/csv; charset=utf-8",
            Format::Json | Format::Balance => "application/json",
            Format::Svg => "image/svg+xml",
            Format::Pgn => "application/x-chess-pgn",
        }
    }
}

/// The strong ETag of an export's bytes: a quoted SHA-256 prefix (128 bits).
pub fn etag(body: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(body.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether an `If-None-Match` header value names `etag` (a list, weak forms compared weakly as
/// RFC 9110 asks for this header, or `*`).
pub fn if_none_match_hits(header: &str, etag: &str) -> bool {
    header
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// What an export produced, or why it cannot (a report asked of a perft campaign, or of an
/// analysis campaign with no score yet).
pub fn render(
    store: &dyn crate::store::Store,
    campaign_id: u64,
    format: Format,
) -> Result<Result<String, String>, crate::model::StoreError> {
    let campaigns = store.campaigns()?;
    let kind = campaigns
        .iter()
        .find(|c| c.id == campaign_id)
        .map(|c| c.kind)
        .ok_or(crate::model::StoreError::UnknownCampaign(campaign_id))?;
    let not_for = |what: &str| {
        Err(format!(
            "campaign {campaign_id} is a {kind} campaign; {what}"
        ))
    };
    if kind == CampaignKind::SelfPlay {
        let (c, rows) = store.self_play_table(campaign_id)?;
        return Ok(match format {
            Format::Csv => Ok(crate::export::self_play::csv(&c, &rows)),
            Format::Json => Ok(crate::export::self_play::json(&c, &rows)),
            Format::Pgn => Ok(crate::export::self_play::pgn(&rows)),
            Format::Balance | Format::Svg | Format::Depths => {
                not_for("balance reports need an analysis campaign")
            }
            Format::Replicas => not_for("replicas are exported from perft campaigns"),
        });
    }
    if kind == CampaignKind::Analysis {
        let (c, rows) = store.analysis_table(campaign_id)?;
        return Ok(match format {
            Format::Csv => Ok(analysis_csv_for(&c, &rows)),
            Format::Json => Ok(analysis_json(&c, &rows)),
            Format::Balance => balance_json(&c, &rows),
            Format::Svg => balance_svg(&c, &rows),
            Format::Depths => Ok(depths_csv(&rows)),
            Format::Pgn => not_for("games are exported from self-play campaigns"),
            Format::Replicas => not_for("replicas are exported from perft campaigns"),
        });
    }
    if campaigns
        .iter()
        .any(|c| c.id == campaign_id && c.split_ply > 0)
    {
        let (c, rows) = split_table(store, campaign_id)?;
        return Ok(match format {
            Format::Csv => Ok(crate::work::assembly::split_csv(&rows)),
            Format::Json => Ok(split_json(&c, &rows)),
            Format::Balance | Format::Svg | Format::Depths | Format::Pgn => Err(format!(
                "campaign {campaign_id} is a perft campaign; balance reports need an analysis campaign"
            )),
            Format::Replicas => Err(format!(
                "campaign {campaign_id} is split; replicas are exported from campaigns of whole starts"
            )),
        });
    }
    let (c, rows) = store.table(campaign_id)?;
    Ok(match format {
        Format::Csv => Ok(csv_for(&c, &rows)),
        Format::Json => Ok(json(&c, &rows)),
        Format::Replicas => Ok(replicas::csv(store, &rows)?),
        Format::Balance | Format::Svg | Format::Depths | Format::Pgn => Err(format!(
            "campaign {campaign_id} is a perft campaign; balance reports need an analysis campaign"
        )),
    })
}

/// The CSV header; the first four columns are fixed, more may be appended in later versions.
pub const CSV_HEADER: &str = "sp,fen,depth,nodes,status,agreeing_results,digest,audit";

/// The table as CSV. Nodes are empty for workunits without a canonical result.
pub fn csv(rows: &[TableRow]) -> String {
    csv_keyed(CSV_HEADER, rows, &|r| {
        r.sp.map(|n| n.to_string()).unwrap_or_default()
    })
}

/// The CSV header of a campaign over another family than Chess960: the family and the start's
/// number in it (docs/families.md) instead of the Scharnagl number.
pub const FAMILY_CSV_HEADER: &str =
    "family,number,fen,depth,nodes,status,agreeing_results,digest,audit";

/// The table as CSV: [`csv`] for Chess960 campaigns, [`FAMILY_CSV_HEADER`] rows otherwise.
pub fn csv_for(campaign: &Campaign, rows: &[TableRow]) -> String {
    if campaign.family == "chess960" {
        return csv(rows);
    }
    csv_keyed(FAMILY_CSV_HEADER, rows, &|r| {
        let n = r.family_number.map(|n| n.to_string()).unwrap_or_default();
        format!("{},{n}", campaign.family)
    })
}

/// The rows after `header`, each starting with `key` (the start's name in the table).
fn csv_keyed(header: &str, rows: &[TableRow], key: &dyn Fn(&TableRow) -> String) -> String {
    let mut out = String::from(header);
    out.push('\n');
    for r in rows {
        out.push_str(&csv_line(r, &key(r)));
    }
    out
}

/// One CSV row of a perft table, starting with `key` (FENs contain no commas or quotes, so no
/// quoting is needed).
fn csv_line(r: &TableRow, key: &str) -> String {
    format!(
        "{},{},{},{},{},{},{},{}\n",
        key,
        r.fen,
        r.depth,
        r.nodes.map(|n| n.to_string()).unwrap_or_default(),
        r.status,
        r.agreeing_results,
        r.digest.as_deref().unwrap_or(""),
        r.audit
    )
}

/// Chunks of a streamed export: about this many bytes each.
pub const STREAM_CHUNK_BYTES: usize = 64 * 1024;

/// Whether [`stream_csv`] serves this export (the CSV of a plain perft table, one row per
/// workunit: the one export that grows with a campaign; a split table is per start position,
/// analysis tables and the reports are built in memory).
pub fn streams(campaign: &Campaign, format: Format) -> bool {
    format == Format::Csv && campaign.kind == CampaignKind::Perft && campaign.split_ply == 0
}

/// The CSV of a perft table streamed from one read snapshot: `send` gets chunks of about
/// [`STREAM_CHUNK_BYTES`] and returns false once nobody listens (the export stops then). The
/// bytes are exactly [`csv_for`]'s.
pub fn stream_csv(
    store: &dyn crate::store::Store,
    campaign: &Campaign,
    send: &mut dyn FnMut(String) -> bool,
) -> Result<(), crate::model::StoreError> {
    let chess960 = campaign.family == "chess960";
    let mut chunk = String::from(if chess960 {
        CSV_HEADER
    } else {
        FAMILY_CSV_HEADER
    });
    chunk.push('\n');
    let mut open = true;
    store.visit_table(campaign.id, &mut |r| {
        let key = if chess960 {
            r.sp.map(|n| n.to_string()).unwrap_or_default()
        } else {
            let n = r.family_number.map(|n| n.to_string()).unwrap_or_default();
            format!("{},{n}", campaign.family)
        };
        chunk.push_str(&csv_line(&r, &key));
        if chunk.len() >= STREAM_CHUNK_BYTES {
            open = send(std::mem::take(&mut chunk));
        }
        open
    })?;
    if open && !chunk.is_empty() {
        send(chunk);
    }
    Ok(())
}

/// Sum of the canonical node counts (u128: sums of deep campaigns outgrow nothing, but cheap).
pub fn total_nodes(rows: &[TableRow]) -> u128 {
    rows.iter().filter_map(|r| r.nodes).map(u128::from).sum()
}

/// The CSV header of analysis tables: the first seven columns are those `c960-worker analyse
/// --all` writes; then White's WDL per mille, the nodes of the search, and the estimator
/// ([`balance::depth_mean_cp`] over the [`balance::ESTIMATOR_DEPTHS`] deepest depths; empty
/// without depth records).
pub const ANALYSIS_CSV_HEADER: &str =
    "sp,fen,depth,score_cp,mate,best_move,engine,wdl_win,wdl_draw,wdl_loss,nodes,estimate_cp";

/// The CSV header of [`depths_csv`].
pub const DEPTHS_CSV_HEADER: &str = "sp,depth,score_cp,mate,wdl_win,wdl_draw,wdl_loss,nodes";

/// The raw data behind the estimator: one row per completed depth of every canonical result
/// (start positions only), shallowest first.
pub fn depths_csv(rows: &[AnalysisRow]) -> String {
    let mut out = format!("{DEPTHS_CSV_HEADER}\n");
    for r in rows {
        let (Some(sp), Some(res)) = (r.sp, r.result.as_ref()) else {
            continue;
        };
        for d in &res.depths {
            out.push_str(&format!(
                "{sp},{},{},{},{},{}\n",
                d.depth,
                opt_text(d.score_cp),
                opt_text(d.mate),
                wdl_text(d.wdl),
                d.nodes
            ));
        }
    }
    out
}

fn opt_text(v: Option<i32>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// `win,draw,loss`, or three empty fields.
fn wdl_text(wdl: Option<[u16; 3]>) -> String {
    wdl.map_or_else(|| ",,".to_string(), |[w, d, l]| format!("{w},{d},{l}"))
}

/// An analysis table as CSV: one row per workunit; score, move and engine are empty until a
/// quorum agrees.
pub fn analysis_csv(rows: &[AnalysisRow]) -> String {
    analysis_csv_keyed(ANALYSIS_CSV_HEADER, rows, &|r| {
        r.sp.map(|n| n.to_string()).unwrap_or_default()
    })
}

/// [`analysis_csv`] for any campaign: a campaign over another family than Chess960 names the
/// family and the start's number in it (`family,number,fen,…`) instead of `sp`.
pub fn analysis_csv_for(campaign: &Campaign, rows: &[AnalysisRow]) -> String {
    if campaign.family == "chess960" {
        return analysis_csv(rows);
    }
    let header = format!("family,number,{}", &ANALYSIS_CSV_HEADER["sp,".len()..]);
    analysis_csv_keyed(&header, rows, &|r| {
        let n = r.family_number.map(|n| n.to_string()).unwrap_or_default();
        format!("{},{n}", campaign.family)
    })
}

fn analysis_csv_keyed(
    header: &str,
    rows: &[AnalysisRow],
    key: &dyn Fn(&AnalysisRow) -> String,
) -> String {
    let mut out = String::from(header);
    out.push('\n');
    for r in rows {
        let res = r.result.as_ref();
        let estimate = res
            .and_then(|a| balance::depth_mean_cp(&a.depths, balance::ESTIMATOR_DEPTHS))
            .map(|e| format!("{e:.2}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{estimate}\n",
            key(r),
            r.fen,
            r.depth,
            opt_text(res.and_then(|a| a.score_cp)),
            opt_text(res.and_then(|a| a.mate)),
            csv_text(res.and_then(|a| a.best_move.as_deref()).unwrap_or("")),
            csv_text(res.map(|a| a.engine_id.as_str()).unwrap_or("")),
            wdl_text(res.and_then(|a| a.wdl)),
            res.map(|a| a.nodes.to_string()).unwrap_or_default(),
        ));
    }
    out
}

#[derive(Serialize)]
struct JsonAnalysisTable<'a> {
    campaign: &'a Campaign,
    complete: bool,
    /// What the campaign is doing, in the vocabulary of the pages and the command line.
    state: CampaignState,
    rows: &'a [AnalysisRow],
}

/// An analysis table as JSON, with every canonical result in full (PV, nodes, WDL).
pub fn analysis_json(campaign: &Campaign, rows: &[AnalysisRow]) -> String {
    let t = JsonAnalysisTable {
        campaign,
        complete: rows.iter().all(|r| r.status == RowStatus::Valid),
        state: state_of(campaign, rows.iter().map(|r| r.status.as_str())),
        rows,
    };
    serde_json::to_string_pretty(&t).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// A campaign's state from its table's row statuses ([`CampaignState`]: nothing in flight is
/// known here, so a campaign with rows left is `running` once any row is done).
fn state_of<'a>(campaign: &Campaign, statuses: impl Iterator<Item = &'a str>) -> CampaignState {
    let (mut total, mut valid, mut failed) = (0, 0, 0);
    for s in statuses {
        total += 1;
        valid += u64::from(s == "valid");
        failed += u64::from(s == "failed");
    }
    CampaignState::of(
        campaign.status,
        total,
        valid,
        failed,
        0,
        campaign.stall.is_some(),
    )
}

/// A split campaign assembled per start position.
pub fn split_table(
    store: &dyn crate::store::Store,
    campaign_id: u64,
) -> Result<(Campaign, Vec<crate::work::assembly::SplitRow>), crate::model::StoreError> {
    let mut assembler = crate::work::assembly::Assembler::default();
    let c = store.visit_split_units(campaign_id, &mut |u| assembler.add(&u))?;
    let rows = assembler.finish(c.depth, |sp| {
        c960_common::StartPosition::new(u32::from(sp))
            .map(|s| s.position().to_fen(c960_common::CastlingNotation::Shredder))
            .unwrap_or_default()
    });
    Ok((c, rows))
}

#[derive(Serialize)]
struct JsonSplitTable<'a> {
    campaign: &'a Campaign,
    complete: bool,
    /// What the campaign is doing, in the vocabulary of the pages and the command line.
    state: CampaignState,
    total_nodes: u128,
    check: crate::work::assembly::CheckReport,
    rows: &'a [crate::work::assembly::SplitRow],
}

/// The complete start positions' totals, for [`crate::work::assembly::check`].
pub fn split_totals(
    rows: &[crate::work::assembly::SplitRow],
) -> std::collections::BTreeMap<u16, u128> {
    rows.iter().filter_map(|r| Some((r.sp, r.nodes?))).collect()
}

/// A split table as JSON: per start position the total, ply-1 divide and share done, plus the
/// check against the reference table and OEIS A157851.
pub fn split_json(campaign: &Campaign, rows: &[crate::work::assembly::SplitRow]) -> String {
    let totals = split_totals(rows);
    let t = JsonSplitTable {
        campaign,
        complete: rows
            .iter()
            .all(|r| r.status == crate::work::assembly::SplitStatus::Valid),
        state: state_of(campaign, rows.iter().map(|r| r.status.as_str())),
        total_nodes: totals.values().sum::<u128>(),
        check: crate::work::assembly::check(campaign.depth, &totals),
        rows,
    };
    serde_json::to_string_pretty(&t).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[derive(Serialize)]
struct JsonTable<'a> {
    campaign: &'a Campaign,
    complete: bool,
    /// What the campaign is doing, in the vocabulary of the pages and the command line.
    state: CampaignState,
    total_nodes: u128,
    rows: &'a [TableRow],
}

/// The table as JSON. Node counts are JSON integers with all their digits, as in every JSON
/// the coordinator sends (docs/protocol.md, "Node counts in JSON").
pub fn json(campaign: &Campaign, rows: &[TableRow]) -> String {
    let t = JsonTable {
        campaign,
        complete: rows.iter().all(|r| r.status == RowStatus::Valid),
        state: state_of(campaign, rows.iter().map(|r| r.status.as_str())),
        total_nodes: total_nodes(rows),
        rows,
    };
    serde_json::to_string_pretty(&t).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use c960_common::balance::PositionScore;

    use super::*;

    #[test]
    fn etags_name_the_bytes_and_match_lists_weak_forms_and_stars() {
        let a = etag("sp,nodes\n0,20\n");
        assert_eq!(a.len(), 34);
        assert!(a.starts_with('"') && a.ends_with('"'));
        assert_eq!(a, etag("sp,nodes\n0,20\n"));
        assert_ne!(a, etag("sp,nodes\n0,21\n"));
        assert!(if_none_match_hits(&a, &a));
        assert!(if_none_match_hits(&format!("\"x\", W/{a}"), &a));
        assert!(if_none_match_hits("*", &a));
        assert!(!if_none_match_hits("\"x\"", &a));
        assert!(!if_none_match_hits("", &a));
    }

    /// A worker-chosen engine id that a spreadsheet would evaluate stays text; a negative
    /// score stays a number.
    #[test]
    fn text_cells_are_never_formulas_and_numbers_stay_numbers() {
        let row = AnalysisRow {
            workunit_id: 1,
            sp: Some(518),
            family_number: None,
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1".into(),
            depth: 8,
            status: RowStatus::Valid,
            agreeing_results: 2,
            result: Some(c960_common::wire::AnalysisResult {
                score_cp: Some(-35),
                mate: None,
                best_move: Some("e2e4".into()),
                pv: vec!["e2e4".into()],
                nodes: 1000,
                wdl: None,
                engine_id: "=HYPERLINK(\"http://x\",\"sf\")".into(),
                depths: Vec::new(),
            }),
        };
        let text = analysis_csv(&[row]);
        let line = text.lines().nth(1).unwrap();
        assert_eq!(
            line,
            r#"518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1,8,-35,,e2e4,"'=HYPERLINK(""http://x"",""sf"")",,,,1000,"#
        );
    }

    #[test]
    fn csv_layout() {
        let rows = vec![TableRow {
            workunit_id: 1,
            sp: Some(518),
            family_number: None,
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1".into(),
            depth: 2,
            nodes: Some(400),
            status: RowStatus::Valid,
            agreeing_results: 2,
            returned: 2,
            digest: Some("ab".into()),
            audit: "coordinator".into(),
        }];
        let text = csv(&rows);
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("sp,fen,depth,nodes"));
        assert_eq!(
            lines.next().unwrap(),
            "518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1,2,400,valid,2,ab,coordinator"
        );
        assert_eq!(total_nodes(&rows), 400);
        assert_eq!(Format::parse("csv"), Ok(Format::Csv));
        assert!(Format::parse("xml").is_err());
    }

    /// The remembered agreement is the one of the exact table asked about: two tables give
    /// their own figures, asked for again in any order and past the memo's capacity, and each
    /// equals a fresh computation.
    #[test]
    fn the_published_agreement_is_remembered_per_table() {
        let published = crate::work::known::published_balance();
        let table = |shift: i32, n: usize| -> Vec<PositionScore> {
            published
                .iter()
                .take(n)
                .enumerate()
                .map(|(i, s)| PositionScore {
                    sp: s.sp,
                    // Noise that differs per table, so the coefficients differ.
                    score_cp: Some(s.value_cp() as i32 + ((i as i32 * shift) % 41) - 20),
                    mate: None,
                })
                .collect()
        };
        let fresh = |t: &[PositionScore]| {
            balance::agreement(t, published, balance::AGREEMENT_RESAMPLES, 960)
        };
        let (a, b) = (table(7, 300), table(13, 200));
        let (fa, fb) = (fresh(&a), fresh(&b));
        assert_ne!(fa, fb);
        assert_eq!(published_agreement(&a).agreement, fa);
        assert_eq!(published_agreement(&b).agreement, fb);
        assert_eq!(published_agreement(&a).agreement, fa, "a again, after b");
        for k in 0..10 {
            let _ = published_agreement(&table(17 + k, 50));
        }
        assert_eq!(
            published_agreement(&b).agreement,
            fb,
            "b after the memo turned over"
        );
    }

    #[test]
    fn node_counts_past_2_to_the_64_are_json_integers_with_every_digit() {
        let row = |id, nodes| TableRow {
            workunit_id: id,
            sp: Some(id as u16),
            family_number: None,
            fen: "8/8/8/8/8/8/8/8 w - - 0 1".into(),
            depth: 9,
            nodes: Some(nodes),
            status: RowStatus::Valid,
            agreeing_results: 2,
            returned: 2,
            digest: None,
            audit: "none".into(),
        };
        let rows = vec![row(1, u64::MAX), row(2, u64::MAX), row(3, (1 << 53) + 1)];
        let campaign = Campaign {
            id: 1,
            kind: CampaignKind::Perft,
            engine: None,
            split_ply: 0,
            depth: 9,
            quorum: 2,
            max_results: 4,
            positions: "1-3".into(),
            family: "chess960".into(),
            name: None,
            priority: 0,
            status: Default::default(),
            games: None,
            move_nodes: None,
            stall: None,
        };
        let text = json(&campaign, &rows);
        let sum = 2 * u128::from(u64::MAX) + (1 << 53) + 1;
        assert!(text.contains(&format!("\"total_nodes\": {sum}")), "{text}");
        assert!(text.contains("\"nodes\": 18446744073709551615"), "{text}");
        assert!(text.contains("\"nodes\": 9007199254740993"), "{text}");
    }
}

#[cfg(test)]
mod stream_tests {
    use super::*;
    use crate::store::{SqliteStore, Store};
    use crate::work::campaign::NewCampaign;

    /// The streamed CSV is byte for byte the CSV built in memory, in several chunks; a
    /// receiver that goes away stops the export after the chunk it refused.
    #[test]
    fn the_streamed_csv_is_the_table_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        let c = s
            .create_campaign(
                &NewCampaign::new(1, 2, None, (0..960).collect()).unwrap(),
                0,
            )
            .unwrap();
        assert!(streams(&c, Format::Csv) && !streams(&c, Format::Json));
        let mut chunks = Vec::new();
        stream_csv(&s, &c, &mut |chunk| {
            chunks.push(chunk);
            true
        })
        .unwrap();
        assert!(chunks.len() >= 2, "{} chunks", chunks.len());
        let (c2, rows) = s.table(c.id).unwrap();
        assert_eq!(chunks.concat(), csv_for(&c2, &rows));
        let mut sent = 0;
        stream_csv(&s, &c, &mut |_| {
            sent += 1;
            false
        })
        .unwrap();
        assert_eq!(sent, 1);
    }
}
