//! `c960-worker balance`: the opening-balance report of a per-position score table, optionally
//! correlated with a reference table and drawn as an SVG chart.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use c960_common::StartPosition;
use c960_common::balance::{
    self, BalanceReport, Correlation, PositionScore, RankedPosition, format_score,
};

use crate::cli_analyse::json_string;

/// Arguments of `balance`.
#[derive(clap::Args)]
pub struct BalanceArgs {
    /// Scores to report on: `analyse --all` CSV (score_cp, mate) or a table with eval_pawns.
    #[arg(long)]
    input: PathBuf,
    /// A second table (e.g. common/tests/data/balance_sf18_d25.csv) to correlate with.
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Write an SVG chart of the sorted scores, 518 marked.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Write the ranking as CSV: rank,sp,arrangement,score_cp,mate.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Chart title (default: the input file name).
    #[arg(long)]
    title: Option<String>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

fn read_scores(path: &Path) -> Result<Vec<PositionScore>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    balance::parse_scores_csv(&text).with_context(|| format!("in {}", path.display()))
}

pub fn run(args: BalanceArgs) -> Result<()> {
    let scores = read_scores(&args.input)?;
    let report = balance::report(&scores)?;
    let correlation = match &args.reference {
        Some(path) => Some(balance::correlate(&scores, &read_scores(path)?)),
        None => None,
    };
    if let Some(path) = &args.svg {
        let title = args.title.clone().unwrap_or_else(|| {
            let name = args
                .input
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            format!("Chess960 opening balance: {name}")
        });
        std::fs::write(path, balance::svg_chart(&report, &title))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.csv {
        let mut text = String::from("rank,sp,arrangement,score_cp,mate\n");
        for r in &report.ranked {
            text.push_str(&format!(
                "{},{},{},{},{}\n",
                r.rank,
                r.score.sp,
                arrangement(r.score.sp),
                r.score.score_cp.map_or_else(String::new, |v| v.to_string()),
                r.score.mate.map_or_else(String::new, |v| v.to_string())
            ));
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        outln!("{}", json_report(&report, correlation.as_ref()));
    } else {
        print_report(&report, correlation.as_ref())?;
    }
    Ok(())
}

fn arrangement(sp: u16) -> String {
    StartPosition::new(sp as u32)
        .map(|s| s.arrangement_string())
        .unwrap_or_default()
}

fn describe(r: &RankedPosition) -> String {
    format!(
        "{:>3} {} {:>7}  rank {}",
        r.score.sp,
        arrangement(r.score.sp),
        format_score(&r.score),
        r.rank
    )
}

fn print_report(report: &BalanceReport, correlation: Option<&Correlation>) -> Result<()> {
    let n = report.ranked.len();
    outln!("positions: {n}");
    outln!("mean White edge: {:+.2} pawns", report.mean_cp / 100.0);
    outln!("median White edge: {:+.2} pawns", report.median_cp / 100.0);
    outln!("spread (std dev): {:.2} pawns", report.std_dev_cp / 100.0);
    outln!("White better in: {} of {n}", report.white_better);
    outln!("most balanced:");
    for r in &report.most_balanced {
        outln!("  {}", describe(r));
    }
    outln!("least balanced:");
    for r in &report.least_balanced {
        outln!("  {}", describe(r));
    }
    match (&report.classical, report.classical_percentile()) {
        (Some(c), Some(p)) => {
            outln!(
                "518 (classical): {}, above {:.0}% of positions",
                describe(c).trim_start(),
                p * 100.0
            )
        }
        _ => outln!("518 (classical): not in the table"),
    }
    if let Some(c) = correlation {
        let show = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"));
        outln!(
            "reference: {} common positions, Pearson {}, Spearman {}",
            c.n,
            show(c.pearson),
            show(c.spearman)
        );
    }
    Ok(())
}

fn json_position(r: &RankedPosition) -> String {
    let opt = |v: Option<i32>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
    format!(
        "{{\"sp\":{},\"arrangement\":{},\"rank\":{},\"score_cp\":{},\"mate\":{}}}",
        r.score.sp,
        json_string(&arrangement(r.score.sp)),
        r.rank,
        opt(r.score.score_cp),
        opt(r.score.mate)
    )
}

fn json_report(report: &BalanceReport, correlation: Option<&Correlation>) -> String {
    let num = |v: Option<f64>| {
        v.filter(|v| v.is_finite())
            .map_or_else(|| "null".to_string(), |v| format!("{v:.6}"))
    };
    let list = |v: &[RankedPosition]| v.iter().map(json_position).collect::<Vec<_>>().join(",");
    let classical = report
        .classical
        .as_ref()
        .map_or_else(|| "null".to_string(), json_position);
    let reference = correlation.map_or_else(
        || "null".to_string(),
        |c| {
            format!(
                "{{\"n\":{},\"pearson\":{},\"spearman\":{}}}",
                c.n,
                num(c.pearson),
                num(c.spearman)
            )
        },
    );
    format!(
        "{{\"positions\":{},\"mean_cp\":{},\"median_cp\":{},\"std_dev_cp\":{},\"white_better\":{},\"classical\":{},\"classical_percentile\":{},\"most_balanced\":[{}],\"least_balanced\":[{}],\"reference\":{},\"ranked\":[{}]}}",
        report.ranked.len(),
        num(Some(report.mean_cp)),
        num(Some(report.median_cp)),
        num(Some(report.std_dev_cp)),
        report.white_better,
        classical,
        num(report.classical_percentile()),
        list(&report.most_balanced),
        list(&report.least_balanced),
        reference,
        list(&report.ranked)
    )
}
