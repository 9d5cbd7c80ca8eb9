//! Moves, encoded in 16 bits, and their UCI spelling.

use std::fmt;

use crate::types::{Role, Square};

/// What a move does beyond moving a piece from one square to another.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum MoveKind {
    /// A plain move or capture.
    Normal,
    /// A pawn reaching the last rank, becoming the given role.
    Promotion(Role),
    /// A pawn capturing en passant; `to` is the empty square it lands on.
    EnPassant,
    /// Castling, encoded as king-takes-own-rook: `from` is the king, `to` the rook.
    Castle,
}

/// A move: from (6 bits), to (6 bits), kind (2 bits), promotion role (2 bits).
///
/// Castling is encoded as the king capturing its own rook, which is unambiguous in Chess960
/// where the king may move one square, no square, or swap places with the rook.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Move(u16);

const KIND_NORMAL: u16 = 0;
const KIND_PROMOTION: u16 = 1;
const KIND_EN_PASSANT: u16 = 2;
const KIND_CASTLE: u16 = 3;

impl Move {
    /// Builds a move.
    #[inline(always)]
    pub const fn new(from: u8, to: u8, kind: MoveKind) -> Move {
        let (k, promo) = match kind {
            MoveKind::Normal => (KIND_NORMAL, 0),
            MoveKind::Promotion(role) => (KIND_PROMOTION, role as u16 - 1),
            MoveKind::EnPassant => (KIND_EN_PASSANT, 0),
            MoveKind::Castle => (KIND_CASTLE, 0),
        };
        Move(from as u16 | (to as u16) << 6 | k << 12 | promo << 14)
    }
    /// Origin square index.
    #[inline(always)]
    pub const fn from_index(self) -> u8 {
        (self.0 & 63) as u8
    }
    /// Target square index (the rook's square for castling).
    #[inline(always)]
    pub const fn to_index(self) -> u8 {
        ((self.0 >> 6) & 63) as u8
    }
    /// Origin square.
    pub const fn from(self) -> Square {
        Square::new(self.from_index())
    }
    /// Target square (the rook's square for castling).
    pub const fn to(self) -> Square {
        Square::new(self.to_index())
    }
    /// What kind of move this is.
    #[inline(always)]
    pub const fn kind(self) -> MoveKind {
        match self.0 >> 12 & 3 {
            KIND_NORMAL => MoveKind::Normal,
            KIND_PROMOTION => MoveKind::Promotion(match self.0 >> 14 {
                0 => Role::Knight,
                1 => Role::Bishop,
                2 => Role::Rook,
                _ => Role::Queen,
            }),
            KIND_EN_PASSANT => MoveKind::EnPassant,
            _ => MoveKind::Castle,
        }
    }
    /// The raw 16-bit encoding (stable: used in digests and on the wire).
    pub const fn to_u16(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Move {
    /// UCI in Chess960 mode: `e2e4`, `e7e8q`, castling as king-takes-rook (`e1h1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from(), self.to())?;
        if let MoveKind::Promotion(role) = self.kind() {
            write!(f, "{}", role.char())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
