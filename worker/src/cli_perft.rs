//! `c960-worker perft`: one position (by number or FEN) or a file of them.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use c960_common::epd::parse_perft_line;
use c960_common::{PerftEngine, PerftOptions, Position, StartPosition, perft};

/// Arguments of `perft`.
#[derive(clap::Args)]
pub struct PerftArgs {
    /// Start position number 0..959 (Scharnagl).
    #[arg(long, conflicts_with_all = ["fen", "file"])]
    sp: Option<u32>,
    /// A position in FEN (classical, X-FEN or Shredder-FEN castling).
    #[arg(long, conflicts_with = "file")]
    fen: Option<String>,
    /// A file with one FEN or EPD line per line; prints `FEN;DEPTH;NODES` per line.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Depth in plies (at most 20).
    #[arg(long)]
    depth: u32,
    /// Print `move: count` for every root move before the total.
    #[arg(long)]
    divide: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Engine settings shared by every command that runs perft.
#[derive(clap::Args, Clone, Copy)]
pub struct EngineArgs {
    /// Threads (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Hash table size in MiB; 0 turns the table off.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(0..=1 << 20))]
    pub hash: u32,
    /// Seed of the Zobrist keys used by the hash table (two seeds cross-check each other).
    #[arg(long, default_value_t = c960_common::zobrist::DEFAULT_SEED)]
    pub seed: u64,
}

impl EngineArgs {
    /// The perft engine these settings describe.
    pub fn engine(self) -> PerftEngine {
        let threads = self.threads.map(usize::from).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        PerftEngine::new(PerftOptions {
            threads,
            hash_mib: self.hash as usize,
            seed: self.seed,
        })
    }
}

pub fn run(args: PerftArgs) -> Result<()> {
    if args.depth > perft::MAX_DEPTH {
        bail!(
            "--depth {} is out of range 0..{}",
            args.depth,
            perft::MAX_DEPTH
        );
    }
    let engine = args.engine.engine();
    if let Some(path) = &args.file {
        return run_file(path, args.depth, &engine);
    }
    let pos = match (args.sp, &args.fen) {
        (Some(n), None) => StartPosition::new(n)?.position(),
        (None, Some(fen)) => Position::from_fen(fen)?,
        _ => bail!("give one of --sp N, --fen FEN or --file PATH"),
    };
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    let total = if args.divide {
        let mut total = 0u64;
        for (m, n) in engine.divide(&pos, args.depth) {
            writeln!(out, "{m}: {n}")?;
            total += n;
        }
        total
    } else {
        engine.perft(&pos, args.depth)
    };
    writeln!(out, "{total}")?;
    Ok(())
}

fn run_file(path: &PathBuf, depth: u32, engine: &PerftEngine) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // Validate everything first so that a bad line fails before any long computation.
    let mut jobs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let parsed = parse_perft_line(line)
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        if let Some(entry) = parsed {
            let fen = strip_epd_ops(line);
            let pos = Position::from_fen(&entry.fen)
                .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
            jobs.push((fen, pos));
        }
    }
    let out = std::io::stdout();
    let mut out = BufWriter::new(out.lock());
    for (fen, pos) in jobs {
        engine.new_generation();
        writeln!(out, "{fen};{depth};{}", engine.perft(&pos, depth))?;
        out.flush()?;
    }
    Ok(())
}

/// The FEN part of a line as given: everything before ` ;` (or `;`), trimmed.
fn strip_epd_ops(line: &str) -> String {
    line.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}
