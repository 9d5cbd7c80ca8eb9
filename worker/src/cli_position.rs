//! `c960-worker position`: number ↔ arrangement ↔ FEN.

use anyhow::{Result, bail};
use c960_common::{CastlingNotation, Position, StartPosition};

/// Arguments of `position`.
#[derive(clap::Args)]
pub struct PositionArgs {
    /// Start position number 0..959.
    #[arg(conflicts_with_all = ["arrangement", "fen"])]
    number: Option<u32>,
    /// A back-rank arrangement such as RNBQKBNR.
    #[arg(long, conflicts_with = "fen")]
    arrangement: Option<String>,
    /// A FEN; prints its start-position number if it is one.
    #[arg(long)]
    fen: Option<String>,
}

pub fn run(args: PositionArgs) -> Result<()> {
    match (args.number, args.arrangement, args.fen) {
        (Some(n), None, None) => {
            let sp = StartPosition::new(n)?;
            let pos = sp.position();
            outln!("sp: {sp}");
            outln!("arrangement: {}", sp.arrangement_string());
            outln!("shredder-fen: {}", pos.to_fen(CastlingNotation::Shredder));
            outln!("x-fen: {}", pos.to_fen(CastlingNotation::XFen));
            out!("{}", pos.board_ascii());
        }
        (None, Some(text), None) => {
            let arrangement = StartPosition::parse_arrangement(&text)?;
            outln!("sp: {}", StartPosition::from_arrangement(&arrangement)?);
        }
        (None, None, Some(fen)) => {
            let pos = Position::from_fen(&fen)?;
            outln!("sp: {}", StartPosition::from_position(&pos)?);
        }
        _ => bail!("give a start position number, --arrangement or --fen"),
    }
    Ok(())
}
