//! FEN reading and writing in the three castling notations: classical `KQkq`, X-FEN and
//! Shredder-FEN.

use crate::position::{Position, PositionError, Setup};
use crate::types::{Color, Piece, Role, Square, bb};

/// How castling rights are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CastlingNotation {
    /// Rook file letters, e.g. `HAha` (the default output).
    Shredder,
    /// `K`/`Q` for the outermost rook on a side, a file letter for an inner rook.
    XFen,
}

/// Why a FEN was refused: the field, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FenError {
    /// A field could not be read.
    #[error("FEN {field} field: {reason}")]
    Field {
        /// Which field: `placement`, `side to move`, `castling`, `en passant`, `halfmove clock`,
        /// `fullmove number`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The fields parse but the position breaks a rule. Not marked as the error's source: the
    /// message already carries it, and a chain printer (`{:#}`) would say it twice.
    #[error("illegal position: {0}")]
    Position(PositionError),
}

impl From<PositionError> for FenError {
    fn from(e: PositionError) -> FenError {
        FenError::Position(e)
    }
}

fn field_err(field: &'static str, reason: impl Into<String>) -> FenError {
    FenError::Field {
        field,
        reason: reason.into(),
    }
}

impl Setup {
    /// Parses a FEN (or the first four or six fields of an EPD line) without judging legality.
    ///
    /// # Examples
    ///
    /// A [`Setup`] is what the text says; [`Position::from_setup`] is the only door to a legal
    /// position, and it refuses what the rules forbid.
    ///
    /// ```
    /// use c960_common::{Position, Setup};
    ///
    /// // Both kings in check at once: a well-formed FEN, but no legal position.
    /// let setup = Setup::from_fen("4k3/8/8/8/8/8/4R3/r3K3 w - - 0 1")?;
    /// assert!(Position::from_setup(&setup).is_err());
    /// let setup = Setup::from_fen("4k3/8/8/8/8/8/3R4/4K3 w - - 0 1")?;
    /// assert!(Position::from_setup(&setup).is_ok());
    /// # Ok::<(), c960_common::FenError>(())
    /// ```
    pub fn from_fen(fen: &str) -> Result<Setup, FenError> {
        let mut fields = fen.split_ascii_whitespace();
        let placement = fields
            .next()
            .ok_or_else(|| field_err("placement", "empty FEN"))?;
        let mut board = [None; 64];
        let ranks: Vec<&str> = placement.split('/').collect();
        if ranks.len() != 8 {
            return Err(field_err(
                "placement",
                format!("expected 8 ranks, found {}", ranks.len()),
            ));
        }
        for (i, rank_text) in ranks.iter().enumerate() {
            let rank = 7 - i as u8;
            let mut file = 0u8;
            for c in rank_text.chars() {
                if let Some(d) = c.to_digit(10).filter(|d| (1..=8).contains(d)) {
                    file += d as u8;
                } else if let Some(role) = Role::from_char(c) {
                    if file >= 8 {
                        return Err(field_err(
                            "placement",
                            format!("rank {} has more than 8 squares", rank + 1),
                        ));
                    }
                    let color = if c.is_ascii_uppercase() {
                        Color::White
                    } else {
                        Color::Black
                    };
                    board[Square::from_coords(file, rank).index() as usize] =
                        Some(Piece { color, role });
                    file += 1;
                } else {
                    return Err(field_err(
                        "placement",
                        format!("unexpected character {c:?}"),
                    ));
                }
                if file > 8 {
                    return Err(field_err(
                        "placement",
                        format!("rank {} has more than 8 squares", rank + 1),
                    ));
                }
            }
            if file != 8 {
                return Err(field_err(
                    "placement",
                    format!("rank {} has {file} squares, not 8", rank + 1),
                ));
            }
        }
        let side_to_move = match fields.next() {
            None | Some("w") => Color::White,
            Some("b") => Color::Black,
            Some(other) => {
                return Err(field_err(
                    "side to move",
                    format!("expected w or b, found {other:?}"),
                ));
            }
        };
        let castling_rooks = parse_castling(&board, fields.next().unwrap_or("-"))?;
        let ep_square = match fields.next() {
            None | Some("-") => None,
            Some(s) => Some(
                Square::parse(s)
                    .ok_or_else(|| field_err("en passant", format!("{s:?} is not a square")))?,
            ),
        };
        let halfmove_clock = match fields.next() {
            None => 0,
            Some(s) => s
                .parse::<u32>()
                .map_err(|_| field_err("halfmove clock", format!("{s:?} is not a count")))?,
        };
        let fullmove_number = match fields.next() {
            None => 1,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(field_err(
                        "fullmove number",
                        format!("{s:?} is not a positive number"),
                    ));
                }
            },
        };
        if let Some(extra) = fields.next() {
            return Err(field_err(
                "fullmove number",
                format!("unexpected text after the last field: {extra:?}"),
            ));
        }
        Ok(Setup {
            board,
            side_to_move,
            castling_rooks,
            ep_square,
            halfmove_clock,
            fullmove_number,
        })
    }
}

fn parse_castling(board: &[Option<Piece>; 64], text: &str) -> Result<u64, FenError> {
    if text == "-" {
        return Ok(0);
    }
    let mut rooks = 0u64;
    for c in text.chars() {
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        let rank = color.back_rank();
        let is_rook = |file: u8| {
            board[(rank * 8 + file) as usize]
                == Some(Piece {
                    color,
                    role: Role::Rook,
                })
        };
        let king_file = (0..8u8)
            .find(|&f| {
                board[(rank * 8 + f) as usize]
                    == Some(Piece {
                        color,
                        role: Role::King,
                    })
            })
            .ok_or_else(|| {
                field_err(
                    "castling",
                    format!("{c:?} needs the {color:?} king on its back rank"),
                )
            })?;
        let file = match c.to_ascii_lowercase() {
            // K and Q name the outermost rook on that side of the king (X-FEN).
            'k' => (king_file + 1..8).rev().find(|&f| is_rook(f)),
            'q' => (0..king_file).find(|&f| is_rook(f)),
            l @ 'a'..='h' => Some(l as u8 - b'a').filter(|&f| is_rook(f)),
            _ => return Err(field_err("castling", format!("unexpected character {c:?}"))),
        }
        .ok_or_else(|| {
            field_err(
                "castling",
                format!("{c:?} has no {color:?} rook to castle with"),
            )
        })?;
        let bit = 1u64 << (rank * 8 + file);
        if rooks & bit != 0 {
            return Err(field_err("castling", format!("{c:?} repeats a right")));
        }
        rooks |= bit;
    }
    Ok(rooks)
}

// Debug output is the FEN (Shredder castling, unambiguous in every start position): here, so
// that `position` does not depend on `fen`.
impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", self.to_fen(CastlingNotation::Shredder))
    }
}

impl Position {
    /// Parses and validates a FEN in any castling notation.
    ///
    /// # Examples
    ///
    /// X-FEN, Shredder-FEN and the classical `KQkq` are all read; the output notation is chosen.
    ///
    /// ```
    /// use c960_common::{CastlingNotation, Position};
    ///
    /// let pos = Position::from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")?;
    /// assert_eq!(
    ///     pos.to_fen(CastlingNotation::Shredder),
    ///     "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1"
    /// );
    /// assert_eq!(Position::from_fen(&pos.to_fen(CastlingNotation::Shredder))?, pos);
    /// assert!(Position::from_fen("not a fen").is_err());
    /// # Ok::<(), c960_common::FenError>(())
    /// ```
    pub fn from_fen(fen: &str) -> Result<Position, FenError> {
        Ok(Position::from_setup(&Setup::from_fen(fen)?)?)
    }

    /// Writes the position as FEN with the chosen castling notation.
    pub fn to_fen(&self, notation: CastlingNotation) -> String {
        let mut out = String::with_capacity(90);
        for rank in (0..8u8).rev() {
            let mut empty = 0;
            for file in 0..8u8 {
                match self.piece_at(Square::from_coords(file, rank)) {
                    Some(p) => {
                        if empty > 0 {
                            out.push((b'0' + empty) as char);
                            empty = 0;
                        }
                        out.push(p.char());
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                out.push((b'0' + empty) as char);
            }
            if rank > 0 {
                out.push('/');
            }
        }
        out.push_str(if self.side_to_move() == Color::White {
            " w "
        } else {
            " b "
        });
        let castling = self.castling_text(notation);
        out.push_str(if castling.is_empty() { "-" } else { &castling });
        out.push(' ');
        match self.ep_square() {
            Some(sq) => out.push_str(&sq.to_string()),
            None => out.push('-'),
        }
        out.push_str(&format!(
            " {} {}",
            self.halfmove_clock(),
            self.fullmove_number()
        ));
        out
    }

    fn castling_text(&self, notation: CastlingNotation) -> String {
        let mut out = String::new();
        for color in [Color::White, Color::Black] {
            let rank = color.back_rank();
            let rank_bb = bb::RANK_1 << (rank * 8);
            let king = self.king_square(color);
            let rooks_on_rank = self.pieces(color, Role::Rook) & rank_bb;
            let mut rights: Vec<u8> = bb::squares(self.castling_rooks() & rank_bb).collect();
            rights.sort_by(|a, b| b.cmp(a));
            for sq in rights {
                let file = sq & 7;
                let letter = match notation {
                    CastlingNotation::Shredder => (b'a' + file) as char,
                    CastlingNotation::XFen => {
                        let king_side = sq > king;
                        let outer = if king_side {
                            rooks_on_rank & u64::MAX.checked_shl(sq as u32 + 1).unwrap_or(0) == 0
                        } else {
                            rooks_on_rank & ((1u64 << sq) - 1) == 0
                        };
                        match (outer, king_side) {
                            (true, true) => 'k',
                            (true, false) => 'q',
                            _ => (b'a' + file) as char,
                        }
                    }
                };
                out.push(if color == Color::White {
                    letter.to_ascii_uppercase()
                } else {
                    letter
                });
            }
        }
        out
    }
}
