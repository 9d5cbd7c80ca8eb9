//! Table export: CSV (`sp,fen,depth,nodes,status,agreeing_results,digest`) and JSON.

use serde::Serialize;

use crate::store::{Campaign, TableRow};

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, header first.
    Csv,
    /// One JSON object with the campaign and its rows.
    Json,
}

impl Format {
    /// `csv` or `json`.
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(format!("unknown format {other:?}; use csv or json")),
        }
    }
}

/// The CSV header; the first four columns are fixed, more may be appended in later versions.
pub const CSV_HEADER: &str = "sp,fen,depth,nodes,status,agreeing_results,digest";

/// The table as CSV. Nodes are empty for workunits without a canonical result.
pub fn csv(rows: &[TableRow]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in rows {
        // FENs contain no commas or quotes, so no quoting is needed.
        out.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.sp.map(|n| n.to_string()).unwrap_or_default(),
            r.fen,
            r.depth,
            r.nodes.map(|n| n.to_string()).unwrap_or_default(),
            r.status,
            r.agreeing_results,
            r.digest.as_deref().unwrap_or("")
        ));
    }
    out
}

/// Sum of the canonical node counts (u128: sums of deep campaigns outgrow nothing, but cheap).
pub fn total_nodes(rows: &[TableRow]) -> u128 {
    rows.iter().filter_map(|r| r.nodes).map(u128::from).sum()
}

#[derive(Serialize)]
struct JsonTable<'a> {
    campaign: &'a Campaign,
    complete: bool,
    total_nodes: String,
    rows: &'a [TableRow],
}

/// The table as JSON; `total_nodes` is a string because JSON numbers lose precision past 2^53.
pub fn json(campaign: &Campaign, rows: &[TableRow]) -> String {
    let t = JsonTable {
        campaign,
        complete: rows.iter().all(|r| r.status == "valid"),
        total_nodes: total_nodes(rows).to_string(),
        rows,
    };
    serde_json::to_string_pretty(&t).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_layout() {
        let rows = vec![TableRow {
            workunit_id: 1,
            sp: Some(518),
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1".into(),
            depth: 2,
            nodes: Some(400),
            status: "valid".into(),
            agreeing_results: 2,
            digest: Some("ab".into()),
        }];
        let text = csv(&rows);
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("sp,fen,depth,nodes"));
        assert_eq!(
            lines.next().unwrap(),
            "518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1,2,400,valid,2,ab"
        );
        assert_eq!(total_nodes(&rows), 400);
        assert_eq!(Format::parse("csv"), Ok(Format::Csv));
        assert!(Format::parse("xml").is_err());
    }
}
