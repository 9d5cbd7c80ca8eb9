//! Reading moves written in UCI notation.

use crate::chess_move::{Move, MoveKind};
use crate::position::Position;
use crate::types::{Role, Square};

/// Why a UCI move was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UciMoveError {
    /// Not of the form `e2e4` / `e7e8q`.
    #[error("{0:?} is not a move in UCI notation")]
    Syntax(String),
    /// Well-formed but not legal in the position.
    #[error("{0} is not legal in this position")]
    Illegal(String),
}

impl Position {
    /// Finds the legal move written `text` in UCI. Castling is accepted both as king-takes-rook
    /// (`e1h1`, Chess960 style) and as the classical king move (`e1g1`) when that is unambiguous.
    pub fn parse_uci_move(&self, text: &str) -> Result<Move, UciMoveError> {
        let syntax = || UciMoveError::Syntax(text.to_string());
        if !(4..=5).contains(&text.len()) || !text.is_ascii() {
            return Err(syntax());
        }
        let from = Square::parse(&text[0..2]).ok_or_else(syntax)?;
        let to = Square::parse(&text[2..4]).ok_or_else(syntax)?;
        let promotion = match text.get(4..) {
            None | Some("") => None,
            Some(p) => Some(
                p.chars()
                    .next()
                    .and_then(Role::from_char)
                    .filter(|r| matches!(r, Role::Knight | Role::Bishop | Role::Rook | Role::Queen))
                    .ok_or_else(syntax)?,
            ),
        };
        let legal = self.legal_moves();
        let found = legal.iter().copied().find(|m| {
            m.from() == from
                && m.to() == to
                && match m.kind() {
                    MoveKind::Promotion(r) => promotion == Some(r),
                    _ => promotion.is_none(),
                }
        });
        if let Some(m) = found {
            return Ok(m);
        }
        // Classical castling notation: the king's two-square move to g/c.
        let castles: Vec<Move> = legal
            .iter()
            .copied()
            .filter(|m| m.kind() == MoveKind::Castle && m.from() == from && promotion.is_none())
            .filter(|m| {
                let king_to_file = if m.to_index() > m.from_index() { 6 } else { 2 };
                to.file() == king_to_file
                    && to.rank() == from.rank()
                    && from.file().abs_diff(to.file()) == 2
            })
            .collect();
        match castles.as_slice() {
            [m] => Ok(*m),
            _ => Err(UciMoveError::Illegal(text.to_string())),
        }
    }
}
