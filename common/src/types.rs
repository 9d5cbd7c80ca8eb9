//! Squares, colours, pieces and bitboards: the vocabulary of the board.

use std::fmt;

/// A set of squares, one bit per square (a1 = bit 0, h1 = bit 7, a8 = bit 56).
pub type Bitboard = u64;

/// Bitboard constants and helpers.
pub mod bb {
    use super::Bitboard;

    /// Every square on the first rank.
    pub const RANK_1: Bitboard = 0xFF;
    /// Every square on the second rank.
    pub const RANK_2: Bitboard = RANK_1 << 8;
    /// Every square on the fourth rank.
    pub const RANK_4: Bitboard = RANK_1 << 24;
    /// Every square on the fifth rank.
    pub const RANK_5: Bitboard = RANK_1 << 32;
    /// Every square on the seventh rank.
    pub const RANK_7: Bitboard = RANK_1 << 48;
    /// Every square on the eighth rank.
    pub const RANK_8: Bitboard = RANK_1 << 56;
    /// The light squares (b1, d1, ..., a2, ...).
    pub const LIGHT_SQUARES: Bitboard = 0x55AA_55AA_55AA_55AA;

    /// The bitboard with only `sq` set.
    #[inline(always)]
    pub const fn from_square(sq: u8) -> Bitboard {
        1u64 << sq
    }

    /// Iterates over the squares of a bitboard, lowest first.
    #[inline(always)]
    pub fn squares(mut b: Bitboard) -> impl Iterator<Item = u8> {
        std::iter::from_fn(move || {
            if b == 0 {
                None
            } else {
                let sq = b.trailing_zeros() as u8;
                b &= b - 1;
                Some(sq)
            }
        })
    }

    /// True when more than one square is set.
    #[inline(always)]
    pub const fn more_than_one(b: Bitboard) -> bool {
        b & b.wrapping_sub(1) != 0
    }
}

/// A square index 0..64, a1 = 0, b1 = 1, ..., h8 = 63.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Square(u8);

impl Square {
    /// The square with index `index` (0..64).
    ///
    /// # Panics
    /// When `index` is 64 or more: callers hold a checked index.
    #[inline(always)]
    pub const fn new(index: u8) -> Square {
        assert!(index < 64);
        Square(index)
    }
    /// The square on `file` (0 = a) and `rank` (0 = first rank).
    #[inline(always)]
    pub const fn from_coords(file: u8, rank: u8) -> Square {
        Square::new(rank * 8 + file)
    }
    /// The index 0..64.
    #[inline(always)]
    pub const fn index(self) -> u8 {
        self.0
    }
    /// The file 0..8 (0 = a).
    #[inline(always)]
    pub const fn file(self) -> u8 {
        self.0 & 7
    }
    /// The rank 0..8 (0 = first rank).
    #[inline(always)]
    pub const fn rank(self) -> u8 {
        self.0 >> 3
    }
    /// This square as a one-square bitboard.
    #[inline(always)]
    pub const fn bitboard(self) -> Bitboard {
        1u64 << self.0
    }
    /// Parses `e4`-style names.
    pub fn parse(s: &str) -> Option<Square> {
        let b = s.as_bytes();
        if b.len() != 2 || !(b'a'..=b'h').contains(&b[0]) || !(b'1'..=b'8').contains(&b[1]) {
            return None;
        }
        Some(Square::from_coords(b[0] - b'a', b[1] - b'1'))
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            (b'a' + self.file()) as char,
            (b'1' + self.rank()) as char
        )
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The side: White or Black.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum Color {
    /// White moves first and starts on ranks 1 and 2.
    White = 0,
    /// Black starts on ranks 7 and 8.
    Black = 1,
}

impl Color {
    /// The other side.
    #[inline(always)]
    pub const fn other(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }
    /// 0 for White, 1 for Black.
    #[inline(always)]
    pub const fn index(self) -> usize {
        self as usize
    }
    /// The home (back) rank of this side: 0 or 7.
    #[inline(always)]
    pub const fn back_rank(self) -> u8 {
        match self {
            Color::White => 0,
            Color::Black => 7,
        }
    }
}

/// The kind of a piece, without colour.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum Role {
    /// Pawn.
    Pawn = 0,
    /// Knight.
    Knight = 1,
    /// Bishop.
    Bishop = 2,
    /// Rook.
    Rook = 3,
    /// Queen.
    Queen = 4,
    /// King.
    King = 5,
}

impl Role {
    /// All roles in index order.
    pub const ALL: [Role; 6] = [
        Role::Pawn,
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
        Role::King,
    ];

    /// 0..6 in the order of [`Role::ALL`].
    #[inline(always)]
    pub const fn index(self) -> usize {
        self as usize
    }
    /// Lower-case letter (`p n b r q k`).
    pub const fn char(self) -> char {
        match self {
            Role::Pawn => 'p',
            Role::Knight => 'n',
            Role::Bishop => 'b',
            Role::Rook => 'r',
            Role::Queen => 'q',
            Role::King => 'k',
        }
    }
    /// Its English name (`pawn` … `king`), for text people read.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Pawn => "pawn",
            Role::Knight => "knight",
            Role::Bishop => "bishop",
            Role::Rook => "rook",
            Role::Queen => "queen",
            Role::King => "king",
        }
    }
    /// The role of a lower- or upper-case piece letter.
    pub fn from_char(c: char) -> Option<Role> {
        Some(match c.to_ascii_lowercase() {
            'p' => Role::Pawn,
            'n' => Role::Knight,
            'b' => Role::Bishop,
            'r' => Role::Rook,
            'q' => Role::Queen,
            'k' => Role::King,
            _ => return None,
        })
    }
}

/// A coloured piece.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Piece {
    /// Its side.
    pub color: Color,
    /// Its kind.
    pub role: Role,
}

impl Piece {
    /// FEN letter: upper case for White.
    pub fn char(self) -> char {
        match self.color {
            Color::White => self.role.char().to_ascii_uppercase(),
            Color::Black => self.role.char(),
        }
    }
}
