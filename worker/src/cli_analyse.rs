//! `c960-worker analyse`: search one position (or many start positions) with the built-in
//! engine or a UCI engine, and print the result from White's point of view.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use c960_common::search::{self, Analysis};
use c960_common::text::csv_text;
use c960_common::{CastlingNotation, Position, StartPosition};

use c960_compute::engine::Engine;
use c960_compute::uci_engine::UciCommand;

/// The CSV header of `--all`, shared with the coordinator's analysis campaign output.
pub const CSV_HEADER: &str = "sp,fen,depth,score_cp,mate,best_move,engine";

/// The largest `Hash` accepted, in MiB: more would only hide a typo.
const MAX_HASH_MIB: usize = 65_536;

/// Arguments of `analyse`.
#[derive(clap::Args)]
pub struct AnalyseArgs {
    /// Start position number 0..959 (Scharnagl).
    #[arg(long, conflicts_with_all = ["fen", "all"])]
    sp: Option<u32>,
    /// Any position in FEN (classical, X-FEN or Shredder-FEN castling).
    #[arg(long, conflicts_with = "all")]
    fen: Option<String>,
    /// Analyse many start positions and write CSV (`--positions`, default all 960).
    #[arg(long, conflicts_with = "json")]
    all: bool,
    /// With --all: which start positions, e.g. `0-9,518`.
    #[arg(long, requires = "all")]
    positions: Option<String>,
    /// With --all: write the CSV here instead of standard output.
    #[arg(long, requires = "all")]
    out: Option<PathBuf>,
    /// Search depth in plies.
    #[arg(long)]
    depth: u32,
    /// Use this UCI engine command instead of the built-in searcher, split shell-style (e.g.
    /// /usr/games/stockfish, or "node /opt/sf/stockfish-19-single.js").
    #[arg(long)]
    uci: Option<String>,
    /// Hash table size in MiB (built-in table or the engine's `Hash` option).
    #[arg(long, default_value_t = search::DEFAULT_HASH_MIB)]
    hash: usize,
    /// Seconds a UCI engine may take for one position before it is killed.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
}

pub fn run(args: AnalyseArgs) -> Result<()> {
    if args.depth == 0 {
        bail!("--depth must be at least 1");
    }
    let uci = args
        .uci
        .as_deref()
        .map(crate::cli_work::parse_uci)
        .transpose()?;
    if uci.is_none() && args.depth > search::MAX_DEPTH {
        bail!(
            "--depth for the built-in engine must be at most {}",
            search::MAX_DEPTH
        );
    }
    if !(1..=MAX_HASH_MIB).contains(&args.hash) {
        bail!("--hash must be between 1 and {MAX_HASH_MIB} MiB");
    }
    if args.timeout == 0 {
        bail!("--timeout must be at least 1 second");
    }
    if args.all {
        return run_all(&args, uci.as_ref());
    }
    let pos = match (args.sp, &args.fen) {
        (Some(n), None) => StartPosition::new(n)?.position(),
        (None, Some(fen)) => Position::from_fen(fen)?,
        _ => bail!("give one of --sp N, --fen FEN or --all"),
    };
    let sp = args.sp.or_else(|| {
        StartPosition::from_position(&pos)
            .ok()
            .map(|s| s.number() as u32)
    });
    let mut engine = Engine::start(uci.as_ref(), args.hash, Duration::from_secs(args.timeout))?;
    let analysis = engine.analyse(&pos, args.depth)?;
    let fen = pos.to_fen(CastlingNotation::Shredder);
    let engine_id = engine.id();
    if args.json {
        outln!("{}", json_object(sp, &fen, &analysis, &engine_id));
    } else {
        outln!("engine: {engine_id}");
        if let Some(n) = sp {
            outln!("sp: {n} ({})", StartPosition::new(n)?.arrangement_string());
        }
        outln!("fen: {fen}");
        outln!("depth: {}", analysis.depth);
        outln!("score: {} (White's point of view)", analysis.score);
        outln!(
            "best move: {}",
            analysis
                .best_move
                .map_or("(none)".to_string(), |m| m.to_string())
        );
        outln!("pv: {}", join_moves(&analysis));
        outln!("nodes: {}", analysis.nodes);
        if let Some(w) = analysis.wdl {
            outln!(
                "win/draw/loss for White: {}/{}/{} per mille",
                w.win,
                w.draw,
                w.loss
            );
        }
    }
    Ok(())
}

/// `--all`: one CSV row per start position, flushed as it is written so that an interrupted run
/// keeps what it finished. Progress goes to standard error.
fn run_all(args: &AnalyseArgs, uci: Option<&UciCommand>) -> Result<()> {
    let positions = match &args.positions {
        Some(spec) => parse_positions(spec)?,
        None => (0..StartPosition::all().count() as u32).collect(),
    };
    let mut engine = Engine::start(uci, args.hash, Duration::from_secs(args.timeout))?;
    let engine_id = engine.id();
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout())),
    };
    writeln!(out, "{CSV_HEADER}")?;
    let started = Instant::now();
    let mut nodes = 0u64;
    for &n in &positions {
        let pos = StartPosition::new(n)?.position();
        let t = Instant::now();
        let a = engine
            .analyse(&pos, args.depth)
            .with_context(|| format!("start position {n}"))?;
        nodes += a.nodes;
        writeln!(
            out,
            "{}",
            csv_row(
                Some(n),
                &pos.to_fen(CastlingNotation::Shredder),
                &a,
                &engine_id
            )
        )?;
        out.flush()?;
        eprintln!(
            "sp {n}: {} {} ({} nodes, {} ms)",
            a.score,
            best_text(&a),
            a.nodes,
            t.elapsed().as_millis()
        );
    }
    eprintln!(
        "analysed {} positions at depth {} with {engine_id} in {:.1} s ({nodes} nodes)",
        positions.len(),
        args.depth,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Parses `0-9,518` into the listed start-position numbers, in the order given.
fn parse_positions(spec: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let lo: u32 = lo
            .parse()
            .with_context(|| format!("bad position number {lo:?} in --positions"))?;
        let hi: u32 = hi
            .parse()
            .with_context(|| format!("bad position number {hi:?} in --positions"))?;
        if lo > hi {
            bail!("empty range {part:?} in --positions");
        }
        StartPosition::new(hi)?;
        out.extend(lo..=hi);
    }
    if out.is_empty() {
        bail!("--positions lists no start position");
    }
    Ok(out)
}

fn best_text(a: &Analysis) -> String {
    a.best_move.map_or_else(String::new, |m| m.to_string())
}

fn join_moves(a: &Analysis) -> String {
    a.pv.iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// One row under [`CSV_HEADER`]; `score_cp` or `mate` is empty, whichever does not apply.
fn csv_row(sp: Option<u32>, fen: &str, a: &Analysis, engine: &str) -> String {
    format!(
        "{},{},{},{},{},{},{}",
        sp.map_or_else(String::new, |n| n.to_string()),
        fen,
        a.depth,
        a.score.cp().map_or_else(String::new, |v| v.to_string()),
        a.score.mate().map_or_else(String::new, |v| v.to_string()),
        best_text(a),
        csv_text(engine)
    )
}

/// The `--json` object: `sp, fen, depth, score_cp, mate, best_move, pv, nodes, wdl, engine`
/// (`wdl`: White's win/draw/loss per mille when the engine reports it, else null).
fn json_object(sp: Option<u32>, fen: &str, a: &Analysis, engine: &str) -> String {
    let opt = |v: Option<i32>| v.map_or_else(|| "null".to_string(), |v| v.to_string());
    let pv: Vec<String> = a.pv.iter().map(|m| json_string(&m.to_string())).collect();
    format!(
        "{{\"sp\":{},\"fen\":{},\"depth\":{},\"score_cp\":{},\"mate\":{},\"best_move\":{},\"pv\":[{}],\"nodes\":{},\"wdl\":{},\"engine\":{},\"depths\":[{}]}}",
        sp.map_or_else(|| "null".to_string(), |n| n.to_string()),
        json_string(fen),
        a.depth,
        opt(a.score.cp()),
        opt(a.score.mate()),
        a.best_move
            .map_or_else(|| "null".to_string(), |m| json_string(&m.to_string())),
        pv.join(","),
        a.nodes,
        wdl_json(a.wdl),
        json_string(engine),
        a.depths
            .iter()
            .map(|d| format!(
                "{{\"depth\":{},\"score_cp\":{},\"mate\":{},\"wdl\":{},\"nodes\":{}}}",
                d.depth,
                opt(d.score.cp()),
                opt(d.score.mate()),
                wdl_json(d.wdl),
                d.nodes
            ))
            .collect::<Vec<_>>()
            .join(",")
    )
}

fn wdl_json(wdl: Option<search::Wdl>) -> String {
    wdl.map_or_else(
        || "null".to_string(),
        |w| format!("[{},{},{}]", w.win, w.draw, w.loss),
    )
}

/// A JSON string literal (the worker has no JSON library; engine names are free text).
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_lists() {
        assert_eq!(parse_positions("0-3,518").unwrap(), vec![0, 1, 2, 3, 518]);
        assert!(parse_positions("5-2").is_err());
        assert!(parse_positions("959-960").is_err());
        assert!(parse_positions("x").is_err());
        assert!(parse_positions("").is_err());
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }
}
