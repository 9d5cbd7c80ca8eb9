//! `c960-worker position`: number ↔ arrangement ↔ FEN, for Chess960 (Scharnagl numbers, the
//! default) or any family of `c960_common::family` with `--family`.

use anyhow::{Result, bail};
use c960_common::family::{Castling, Family, Start, mirror};
use c960_common::{CastlingNotation, Position, Square, StartPosition};

/// Arguments of `position`.
#[derive(clap::Args)]
pub struct PositionArgs {
    /// Start position number (0..959 for Chess960; 0..count-1 with --family).
    #[arg(conflicts_with_all = ["arrangement", "fen"])]
    // Read as text and parsed here, so a bad number is one line on stderr like every other
    // refusal (clap's own parse error adds usage lines).
    number: Option<String>,
    /// A back-rank arrangement such as RNBQKBNR, or WHITE/black (Black read a8 to h8) for
    /// transcendental and dfrc.
    #[arg(long, conflicts_with = "fen")]
    arrangement: Option<String>,
    /// A FEN; prints its start-position number if it is one.
    #[arg(long)]
    fen: Option<String>,
    /// The family: chess960, shuffle, bishops, chess960-nc, shuffle-nc, bishops-nc,
    /// transcendental or dfrc (docs/families.md). Without it: Chess960, printing `sp: N`.
    #[arg(long)]
    family: Option<String>,
    /// With shuffle or bishops: Chess960 castling where the king stands between the rooks.
    #[arg(long, requires = "family")]
    chess960_castling: bool,
    /// Print the position as a framed board diagram for the terminal (and, for a Chess960
    /// number, how the number encodes the pieces) instead of the FENs.
    #[arg(long)]
    board: bool,
}

/// A start number as given on the command line.
fn parse_number(text: &str) -> Result<u64> {
    match text.parse() {
        Ok(n) => Ok(n),
        Err(_) => bail!("start number {text:?} is not a number"),
    }
}

pub fn run(args: PositionArgs) -> Result<()> {
    let number = args.number.as_deref().map(parse_number).transpose()?;
    if let Some(name) = &args.family {
        return run_family(Family::parse(name)?, number, &args);
    }
    let board = args.board;
    match (number, args.arrangement, args.fen) {
        (number, arrangement, None) if board && number.is_some() != arrangement.is_some() => {
            let sp = match (number, arrangement) {
                (Some(n), _) => StartPosition::new(u32::try_from(n).unwrap_or(u32::MAX))?,
                (_, text) => StartPosition::from_arrangement(&StartPosition::parse_arrangement(
                    &text.unwrap_or_default(),
                )?)?,
            };
            let s = sp.scharnagl();
            outln!(
                "sp {sp} · {} · {sp} = {} + 4·{} + 16·{} + 96·{}",
                sp.arrangement_string(),
                s.light_bishop,
                s.dark_bishop,
                s.queen,
                s.knights
            );
            out!("{}", diagram(&sp.position()));
        }
        (None, None, Some(fen)) if board => out!("{}", diagram(&Position::from_fen(&fen)?)),
        (Some(n), None, None) => {
            let sp = StartPosition::new(u32::try_from(n).unwrap_or(u32::MAX))?;
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

fn run_family(family: Family, number: Option<u64>, args: &PositionArgs) -> Result<()> {
    let castling = if args.chess960_castling {
        Castling::Chess960
    } else {
        Castling::Default
    };
    let start = match (number, &args.arrangement, &args.fen) {
        (Some(n), None, None) => family.start(n)?,
        (None, Some(text), None) => family.parse_start(text)?,
        (None, None, Some(fen)) => family.start_of_position(&Position::from_fen(fen)?, castling)?,
        _ => bail!("give a start number, --arrangement or --fen"),
    };
    if args.board {
        let pos = start.position_with(castling)?;
        print!(
            "{} {} · {}\n{}",
            start.family,
            start.number,
            start.arrangement_string(),
            diagram(&pos)
        );
    } else {
        print!("{}", describe(&start, castling)?);
    }
    Ok(())
}

/// The board framed for a terminal, White at the bottom: FEN letters (upper case White), a
/// dot on an empty dark square so the colours read without colour.
pub fn diagram(pos: &Position) -> String {
    let rule =
        |left: &str, mid: &str, right: &str| format!("  {left}{}{right}\n", ["───"; 8].join(mid));
    let files = "    a   b   c   d   e   f   g   h\n";
    let mut out = String::from(files);
    out.push_str(&rule("┌", "┬", "┐"));
    for rank in (0..8u8).rev() {
        out.push_str(&format!("{} │", rank + 1));
        for file in 0..8u8 {
            let sq = Square::from_coords(file, rank);
            let c = match pos.piece_at(sq) {
                Some(p) => p.char(),
                None if (file + rank) % 2 == 0 => '·',
                None => ' ',
            };
            out.push_str(&format!(" {c} │"));
        }
        out.push_str(&format!(" {}\n", rank + 1));
        out.push_str(&if rank > 0 {
            rule("├", "┼", "┤")
        } else {
            rule("└", "┴", "┘")
        });
    }
    out.push_str(files);
    out
}

/// The lines `position --family` prints: family, number, arrangement, (mirror partner), FENs,
/// board. Shared with `draw`.
pub fn describe(start: &Start, castling: Castling) -> Result<String> {
    let pos = start.position_with(castling)?;
    let mut out = format!(
        "family: {}\nnumber: {}\narrangement: {}\n",
        start.family,
        start.number,
        start.arrangement_string()
    );
    if start.family.mirror_parent().is_some() {
        let partner: String = mirror(&start.white)
            .iter()
            .map(|r| r.char().to_ascii_uppercase())
            .collect();
        out.push_str(&format!("mirror: {partner} (the same game)\n"));
    }
    out.push_str(&format!(
        "shredder-fen: {}\nx-fen: {}\n{}",
        pos.to_fen(CastlingNotation::Shredder),
        pos.to_fen(CastlingNotation::XFen),
        pos.board_ascii()
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diagram_frames_every_square_with_its_piece() {
        let d = diagram(&StartPosition::new(555).unwrap().position());
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines.len(), 1 + 17 + 1);
        assert_eq!(lines[2], "8 │ r │ n │ k │ n │ b │ q │ r │ b │ 8");
        assert_eq!(lines[16], "1 │ R │ N │ K │ N │ B │ Q │ R │ B │ 1");
        // a3 dark (a dot), b3 light (blank).
        assert_eq!(lines[12], "3 │ · │   │ · │   │ · │   │ · │   │ 3");
        assert!(lines[1].starts_with("  ┌───┬") && lines[17].ends_with("┴───┘"));
    }
}
