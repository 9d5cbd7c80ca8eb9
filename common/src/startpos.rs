//! The 960 start positions and Scharnagl's numbering.
//!
//! A number `n` in 0..960 decomposes as `n = A + 4B + 16C + 96·KN`: `A` is the light-square
//! bishop's index among the light squares b1, d1, f1, h1; `B` the dark-square bishop's among
//! a1, c1, e1, g1; `C` the queen's index among the six squares left; `KN` the index of the
//! knights' pair among the five squares left, in the order (0,1),(0,2),(0,3),(0,4),(1,2),(1,3),
//! (1,4),(2,3),(2,4),(3,4). Rook, king, rook fill the last three squares from left to right.

use std::fmt;

use crate::position::{Position, Setup};
use crate::types::{Color, Piece, Role, Square};

/// Number of Chess960 start positions.
pub const COUNT: u16 = 960;

/// The Scharnagl number of the classical start position (RNBQKBNR).
pub const CLASSICAL: u16 = 518;

const KNIGHT_PAIRS: [(usize, usize); 10] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 3),
    (2, 4),
    (3, 4),
];

/// Why an arrangement of the back rank is not a Chess960 start position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartPositionError {
    /// The number is 960 or more.
    #[error("start position number {0} is out of range 0..959")]
    OutOfRange(u32),
    /// Not eight letters from `KQRBN`.
    #[error("arrangement {0:?} is not eight letters from K, Q, R, B, N")]
    Malformed(String),
    /// Wrong multiset of pieces.
    #[error(
        "arrangement must hold exactly one king, one queen, two rooks, two bishops and two knights"
    )]
    WrongPieces,
    /// Both bishops on squares of one colour.
    #[error("the bishops must stand on squares of opposite colours")]
    BishopsSameColour,
    /// King not between the rooks.
    #[error("the king must stand between the two rooks")]
    KingNotBetweenRooks,
    /// A position that is not a start position at all.
    #[error("not a Chess960 start position: {0}")]
    NotAStartPosition(&'static str),
}

/// Whether the arrangement holds exactly one king, one queen and two each of rooks, bishops
/// and knights.
pub fn has_back_rank_pieces(arr: &Arrangement) -> bool {
    let count = |role| arr.iter().filter(|&&r| r == role).count();
    count(Role::King) == 1
        && count(Role::Queen) == 1
        && count(Role::Rook) == 2
        && count(Role::Bishop) == 2
        && count(Role::Knight) == 2
}

/// The digits of a Scharnagl number, `n = light_bishop + 4·dark_bishop + 16·queen + 96·knights`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Scharnagl {
    /// `A`: the light-square bishop's index among b1, d1, f1, h1.
    pub light_bishop: u8,
    /// `B`: the dark-square bishop's index among a1, c1, e1, g1.
    pub dark_bishop: u8,
    /// `C`: the queen's index among the six squares the bishops leave.
    pub queen: u8,
    /// `KN`: the index of the knights' pair (0..10).
    pub knights: u8,
    /// The pair itself: the knights' indices among the five squares the queen leaves.
    pub knight_pair: (u8, u8),
}

/// A Chess960 start position by Scharnagl number.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct StartPosition(u16);

/// The eight back-rank roles from the a-file to the h-file.
pub type Arrangement = [Role; 8];

impl StartPosition {
    /// The start position numbered `n` (0..960).
    ///
    /// # Examples
    ///
    /// Scharnagl's numbering: 518 is the classical arrangement.
    ///
    /// ```
    /// use c960_common::StartPosition;
    ///
    /// let sp = StartPosition::new(518)?;
    /// assert_eq!(sp.arrangement_string(), "RNBQKBNR");
    /// assert_eq!(sp.number(), 518);
    /// assert!(StartPosition::new(960).is_err());
    /// # Ok::<(), c960_common::StartPositionError>(())
    /// ```
    pub fn new(n: u32) -> Result<StartPosition, StartPositionError> {
        if n < COUNT as u32 {
            Ok(StartPosition(n as u16))
        } else {
            Err(StartPositionError::OutOfRange(n))
        }
    }

    /// All 960 start positions in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use c960_common::StartPosition;
    ///
    /// assert_eq!(StartPosition::all().count(), 960);
    /// assert_eq!(StartPosition::all().next().unwrap().arrangement_string(), "BBQNNRKR");
    /// ```
    pub fn all() -> impl Iterator<Item = StartPosition> {
        (0..COUNT).map(StartPosition)
    }

    /// The Scharnagl number.
    pub fn number(self) -> u16 {
        self.0
    }

    /// How the number encodes the pieces: `n = A + 4B + 16C + 96·KN` (the module's doc).
    ///
    /// # Examples
    ///
    /// The worked example 555: 555 = 3 + 4·2 + 16·4 + 96·5, so the light bishop on h1 (index 3
    /// of b, d, f, h), the dark one on e1 (2 of a, c, e, g), the queen on the fifth square left
    /// (f1), the knights on the second and fourth of the five left (b1, d1): RNKNBQRB.
    ///
    /// ```
    /// use c960_common::StartPosition;
    ///
    /// let s = StartPosition::new(555)?.scharnagl();
    /// assert_eq!((s.light_bishop, s.dark_bishop, s.queen, s.knights), (3, 2, 4, 5));
    /// assert_eq!(s.knight_pair, (1, 3));
    /// assert_eq!(StartPosition::new(555)?.arrangement_string(), "RNKNBQRB");
    /// # Ok::<(), c960_common::StartPositionError>(())
    /// ```
    pub fn scharnagl(self) -> Scharnagl {
        let n = self.0;
        let knights = (n / 96) as u8;
        let (k1, k2) = KNIGHT_PAIRS[knights as usize];
        Scharnagl {
            light_bishop: (n % 4) as u8,
            dark_bishop: (n / 4 % 4) as u8,
            queen: (n / 16 % 6) as u8,
            knights,
            knight_pair: (k1 as u8, k2 as u8),
        }
    }

    /// The back-rank arrangement.
    pub fn arrangement(self) -> Arrangement {
        let n = self.0 as usize;
        let (a, b, c, kn) = (n % 4, (n / 4) % 4, (n / 16) % 6, n / 96);
        let mut rank: [Option<Role>; 8] = [None; 8];
        rank[2 * a + 1] = Some(Role::Bishop);
        rank[2 * b] = Some(Role::Bishop);
        let place_nth_empty = |rank: &mut [Option<Role>; 8], index: usize, role: Role| {
            let file = (0..8)
                .filter(|&f| rank[f].is_none())
                .nth(index)
                .expect("enough empty squares");
            rank[file] = Some(role);
        };
        place_nth_empty(&mut rank, c, Role::Queen);
        let (k1, k2) = KNIGHT_PAIRS[kn];
        // Place the second knight first so that the first one's index is not shifted.
        place_nth_empty(&mut rank, k2, Role::Knight);
        place_nth_empty(&mut rank, k1, Role::Knight);
        for role in [Role::Rook, Role::King, Role::Rook] {
            place_nth_empty(&mut rank, 0, role);
        }
        rank.map(|r| r.expect("every square filled"))
    }

    /// The start position with this arrangement, or the rule it breaks.
    pub fn from_arrangement(arr: &Arrangement) -> Result<StartPosition, StartPositionError> {
        if !has_back_rank_pieces(arr) {
            return Err(StartPositionError::WrongPieces);
        }
        let files_of = |role| (0..8).filter(move |&f| arr[f] == role);
        let bishops: Vec<usize> = files_of(Role::Bishop).collect();
        if bishops[0] % 2 == bishops[1] % 2 {
            return Err(StartPositionError::BishopsSameColour);
        }
        let rooks: Vec<usize> = files_of(Role::Rook).collect();
        let king = files_of(Role::King).next().expect("one king");
        if !(rooks[0] < king && king < rooks[1]) {
            return Err(StartPositionError::KingNotBetweenRooks);
        }
        let light = bishops
            .iter()
            .find(|&&f| f % 2 == 1)
            .copied()
            .expect("one light bishop");
        let dark = bishops
            .iter()
            .find(|&&f| f % 2 == 0)
            .copied()
            .expect("one dark bishop");
        let (a, b) = (light / 2, dark / 2);
        let without_bishops: Vec<usize> = (0..8).filter(|&f| arr[f] != Role::Bishop).collect();
        let c = without_bishops
            .iter()
            .position(|&f| arr[f] == Role::Queen)
            .expect("one queen");
        let rest: Vec<usize> = without_bishops
            .into_iter()
            .filter(|&f| arr[f] != Role::Queen)
            .collect();
        let knights: Vec<usize> = (0..5).filter(|&i| arr[rest[i]] == Role::Knight).collect();
        let kn = KNIGHT_PAIRS
            .iter()
            .position(|&p| p == (knights[0], knights[1]))
            .expect("a knight pair");
        Ok(StartPosition((a + 4 * b + 16 * c + 96 * kn) as u16))
    }

    /// Parses an arrangement such as `RNBQKBNR` (either case).
    ///
    /// # Examples
    ///
    /// From letters back to a number; an arrangement that breaks Chess960's rules is refused.
    ///
    /// ```
    /// use c960_common::StartPosition;
    ///
    /// let arr = StartPosition::parse_arrangement("rnbqkbnr")?;
    /// assert_eq!(StartPosition::from_arrangement(&arr)?.number(), 518);
    /// // Bishops on squares of one colour: a shuffle-chess arrangement, not a Chess960 start.
    /// let same_colour = StartPosition::parse_arrangement("BRBQKNNR")?;
    /// assert!(StartPosition::from_arrangement(&same_colour).is_err());
    /// assert!(StartPosition::parse_arrangement("RNBQK").is_err());
    /// # Ok::<(), c960_common::StartPositionError>(())
    /// ```
    pub fn parse_arrangement(text: &str) -> Result<Arrangement, StartPositionError> {
        let roles: Option<Vec<Role>> = text
            .chars()
            .map(|c| Role::from_char(c).filter(|r| *r != Role::Pawn))
            .collect();
        match roles {
            Some(v) if v.len() == 8 => Ok(v.try_into().expect("length checked")),
            _ => Err(StartPositionError::Malformed(text.to_string())),
        }
    }

    /// The arrangement as upper-case letters, e.g. `RNBQKBNR`.
    pub fn arrangement_string(self) -> String {
        self.arrangement()
            .iter()
            .map(|r| r.char().to_ascii_uppercase())
            .collect()
    }

    /// The position: White and Black mirrored, both sides with both castling rights.
    pub fn position(self) -> Position {
        let arr = self.arrangement();
        let mut board = [None; 64];
        let mut castling_rooks = 0u64;
        for (file, &role) in arr.iter().enumerate() {
            let file = file as u8;
            for (color, back, pawn_rank) in [(Color::White, 0u8, 1u8), (Color::Black, 7, 6)] {
                board[Square::from_coords(file, back).index() as usize] =
                    Some(Piece { color, role });
                board[Square::from_coords(file, pawn_rank).index() as usize] = Some(Piece {
                    color,
                    role: Role::Pawn,
                });
                if role == Role::Rook {
                    castling_rooks |= Square::from_coords(file, back).bitboard();
                }
            }
        }
        let setup = Setup {
            board,
            side_to_move: Color::White,
            castling_rooks,
            ep_square: None,
            halfmove_clock: 0,
            fullmove_number: 1,
        };
        Position::from_setup(&setup).expect("every start position is legal")
    }

    /// The start position that `pos` is, if it is one (any move counters allowed).
    ///
    /// # Examples
    ///
    /// ```
    /// use c960_common::{CastlingNotation, Position, StartPosition};
    ///
    /// let pos = StartPosition::new(0)?.position();
    /// assert_eq!(
    ///     pos.to_fen(CastlingNotation::Shredder),
    ///     "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1"
    /// );
    /// assert_eq!(StartPosition::from_position(&pos)?.number(), 0);
    /// // One move later it is no start position any more.
    /// let later = pos.play(pos.legal_moves().as_slice()[0]);
    /// assert!(StartPosition::from_position(&later).is_err());
    /// # Ok::<(), c960_common::StartPositionError>(())
    /// ```
    pub fn from_position(pos: &Position) -> Result<StartPosition, StartPositionError> {
        let mut arr = [Role::Pawn; 8];
        for (file, slot) in arr.iter_mut().enumerate() {
            match pos.piece_at(Square::from_coords(file as u8, 0)) {
                Some(Piece {
                    color: Color::White,
                    role,
                }) if role != Role::Pawn => *slot = role,
                _ => {
                    return Err(StartPositionError::NotAStartPosition(
                        "the first rank is not a full back rank",
                    ));
                }
            }
        }
        let sp = StartPosition::from_arrangement(&arr)?;
        let canonical = sp.position();
        if canonical.to_setup().board != pos.to_setup().board {
            return Err(StartPositionError::NotAStartPosition(
                "pieces are not in the start arrangement",
            ));
        }
        if pos.side_to_move() != Color::White || pos.castling_rooks() != canonical.castling_rooks()
        {
            return Err(StartPositionError::NotAStartPosition(
                "White to move with all four castling rights needed",
            ));
        }
        Ok(sp)
    }
}

impl fmt::Display for StartPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
