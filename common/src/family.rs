//! The family of random-start chess: Chess960 and its sisters, each with a numbering that is a
//! bijection onto `0..count`, number → start and start → number, and the FEN of each start.
//!
//! | family | starts | rules of the back rank | Black | castling |
//! |---|---|---|---|---|
//! | `chess960` | 960 | bishops on opposite colours, king between the rooks | mirrors White | yes |
//! | `shuffle` | 5040 | none | mirrors White | no (Chess960 castling as an option) |
//! | `bishops` | 2880 | bishops on opposite colours | mirrors White | no (option as above) |
//! | `chess960-nc` | 480 | as `chess960`, one per a↔h mirror pair | mirrors White | no |
//! | `shuffle-nc` | 2520 | as `shuffle`, one per mirror pair | mirrors White | no |
//! | `bishops-nc` | 1440 | as `bishops`, one per mirror pair | mirrors White | no |
//! | `transcendental` | 8,294,400 | each side its own `bishops` arrangement | independent | no |
//! | `dfrc` | 921,600 | each side its own `chess960` arrangement | independent | yes |
//!
//! Numbering (`docs/families.md` has the full text and examples):
//! - `chess960`: Scharnagl's numbers ([`crate::startpos`]).
//! - `shuffle`, `bishops`: the rank of the arrangement, in lexicographic order of its letters
//!   with `B < K < N < Q < R`, among the family's arrangements (`BBKNNQRR` is 0).
//! - `-nc`: a game without castling is the same game as its a↔h mirror image. The king is the
//!   only piece of its kind, so no arrangement is its own mirror (it would need the king on two
//!   files): every arrangement has exactly one partner and the classes are exactly half. The
//!   canonical member of a pair is the one with the king on the e–h files (the classical start
//!   is canonical); number `k` is the `k`-th canonical member in the parent family's order.
//! - `transcendental`: `2880·w + b`, `w` and `b` the `bishops` numbers of White's and Black's
//!   arrangements (Black's read from a8 to h8). `dfrc`: `960·w + b` with Scharnagl numbers.

use std::fmt;
use std::sync::OnceLock;

use crate::position::{Position, Setup};
use crate::startpos::{Arrangement, StartPosition, has_back_rank_pieces};
use crate::types::{Color, Piece, Role, Square};

/// A family of start positions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Fischer Random Chess: 960 starts, castling.
    Chess960,
    /// Shuffle chess: every symmetric arrangement, 5040, no castling by default.
    Shuffle,
    /// Bishops on opposite colours, symmetric: 2880, no castling by default.
    Bishops,
    /// Chess960 without castling, one start per mirror pair: 480.
    Chess960Nc,
    /// Shuffle chess without castling, one start per mirror pair: 2520.
    ShuffleNc,
    /// Opposite bishops without castling, one start per mirror pair: 1440.
    BishopsNc,
    /// Transcendental chess: independent opposite-bishops arrangements, no castling: 2880².
    Transcendental,
    /// Double Fischer Random: independent Chess960 arrangements with castling: 960².
    Dfrc,
}

/// How a start's castling rights are set.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Castling {
    /// The family's own rule: Chess960 and DFRC castle, the others do not.
    #[default]
    Default,
    /// Chess960 castling wherever the king stands between the rooks (`shuffle` and `bishops`
    /// offer it as an option; for `chess960` and `dfrc` it is the default anyway).
    Chess960,
}

/// Why a number, an arrangement or a position is not a start of a family: the rule broken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FamilyError {
    /// Not a family name.
    #[error(
        "unknown family {0:?}: use chess960, shuffle, bishops, chess960-nc, shuffle-nc, bishops-nc, transcendental or dfrc"
    )]
    Unknown(String),
    /// The number is not below the family's count.
    #[error("{family} start number {number} is out of range 0..{last}")]
    OutOfRange {
        /// The family.
        family: Family,
        /// The number given.
        number: u64,
        /// The largest number.
        last: u32,
    },
    /// Not eight piece letters (or two such groups separated by `/`).
    #[error("arrangement {0:?} is not eight letters from K, Q, R, B, N (or WHITE/black)")]
    Malformed(String),
    /// Wrong multiset of pieces.
    #[error(
        "arrangement must hold exactly one king, one queen, two rooks, two bishops and two knights"
    )]
    WrongPieces,
    /// Both bishops on squares of one colour where the family needs opposite colours.
    #[error("{0}: the bishops must stand on squares of opposite colours")]
    BishopsSameColour(Family),
    /// King not between the rooks where the family needs it.
    #[error("{0}: the king must stand between the two rooks")]
    KingNotBetweenRooks(Family),
    /// Black's arrangement is not White's mirror where the family needs it.
    #[error("{0}: Black's back rank must mirror White's (the same piece on each file)")]
    NotMirrored(Family),
    /// The family has no castling, so the Chess960 castling option does not apply.
    #[error(
        "{0} is played without castling; the Chess960 castling option is for shuffle and bishops"
    )]
    NoCastlingOption(Family),
    /// The position is not a start position of the family at all.
    #[error("{family}: not a start position: {reason}")]
    NotAStart {
        /// The family.
        family: Family,
        /// What differs.
        reason: &'static str,
    },
}

/// One start of a family.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Start {
    /// Its family.
    pub family: Family,
    /// Its number in the family, `0..family.count()`.
    pub number: u32,
    /// White's back rank from the a-file to the h-file.
    pub white: Arrangement,
    /// Black's back rank from a8 to h8 (equal to `white` where Black mirrors White).
    pub black: Arrangement,
}

/// Letter order of the lexicographic numbering: B < K < N < Q < R.
fn letter_key(role: Role) -> u8 {
    match role {
        Role::Bishop => 0,
        Role::King => 1,
        Role::Knight => 2,
        Role::Queen => 3,
        Role::Rook => 4,
        Role::Pawn => 5,
    }
}

const KEY_ROLES: [Role; 5] = [
    Role::Bishop,
    Role::King,
    Role::Knight,
    Role::Queen,
    Role::Rook,
];

type Key = [u8; 8];

fn key_of(arr: &Arrangement) -> Key {
    arr.map(letter_key)
}

fn arr_of(key: &Key) -> Arrangement {
    key.map(|k| KEY_ROLES[k as usize])
}

/// Whether the bishops stand on squares of opposite colours.
pub fn bishops_opposite(arr: &Arrangement) -> bool {
    let files: Vec<usize> = (0..8).filter(|&f| arr[f] == Role::Bishop).collect();
    files.len() == 2 && files[0] % 2 != files[1] % 2
}

/// Whether the king stands between the two rooks.
pub fn king_between_rooks(arr: &Arrangement) -> bool {
    let rooks: Vec<usize> = (0..8).filter(|&f| arr[f] == Role::Rook).collect();
    match (0..8).find(|&f| arr[f] == Role::King) {
        Some(k) if rooks.len() == 2 => rooks[0] < k && k < rooks[1],
        _ => false,
    }
}

/// The a↔h mirror image of an arrangement.
pub fn mirror(arr: &Arrangement) -> Arrangement {
    let mut m = *arr;
    m.reverse();
    m
}

/// Whether `arr` is the canonical member of its mirror pair: the king on the e–h files.
pub fn is_canonical(arr: &Arrangement) -> bool {
    arr.iter()
        .position(|&r| r == Role::King)
        .is_some_and(|k| k >= 4)
}

/// The canonical member of `arr`'s mirror pair.
pub fn canonical(arr: &Arrangement) -> Arrangement {
    if is_canonical(arr) { *arr } else { mirror(arr) }
}

/// The lexicographic tables, built once on first use (an immutable constant afterwards).
struct Tables {
    /// All 5040 arrangements, sorted.
    shuffle: Vec<Key>,
    /// The 2880 with opposite bishops, sorted.
    bishops: Vec<Key>,
    /// Parent numbers of the canonical members, ascending, for the three `-nc` families.
    chess960_nc: Vec<u32>,
    shuffle_nc: Vec<u32>,
    bishops_nc: Vec<u32>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        // Lexicographic enumeration of the multiset BBKNNQRR by next permutation.
        let mut key: Key = [0, 0, 1, 2, 2, 3, 4, 4];
        let mut shuffle = vec![key];
        while next_permutation(&mut key) {
            shuffle.push(key);
        }
        let bishops: Vec<Key> = shuffle
            .iter()
            .copied()
            .filter(|k| bishops_opposite(&arr_of(k)))
            .collect();
        let nc = |keys: &[Key]| -> Vec<u32> {
            (0..keys.len() as u32)
                .filter(|&i| is_canonical(&arr_of(&keys[i as usize])))
                .collect()
        };
        let chess960_nc = StartPosition::all()
            .filter(|sp| is_canonical(&sp.arrangement()))
            .map(|sp| u32::from(sp.number()))
            .collect();
        Tables {
            shuffle_nc: nc(&shuffle),
            bishops_nc: nc(&bishops),
            shuffle,
            bishops,
            chess960_nc,
        }
    })
}

fn next_permutation(a: &mut Key) -> bool {
    let Some(i) = (0..a.len() - 1).rev().find(|&i| a[i] < a[i + 1]) else {
        return false;
    };
    let j = (i + 1..a.len())
        .rev()
        .find(|&j| a[j] > a[i])
        .expect("a larger element exists");
    a.swap(i, j);
    a[i + 1..].reverse();
    true
}

impl Family {
    /// Every family, in the order of the table above.
    pub const ALL: [Family; 8] = [
        Family::Chess960,
        Family::Shuffle,
        Family::Bishops,
        Family::Chess960Nc,
        Family::ShuffleNc,
        Family::BishopsNc,
        Family::Transcendental,
        Family::Dfrc,
    ];

    /// The name on the command line and in the store: `chess960`, `shuffle`, ….
    pub fn name(self) -> &'static str {
        match self {
            Family::Chess960 => "chess960",
            Family::Shuffle => "shuffle",
            Family::Bishops => "bishops",
            Family::Chess960Nc => "chess960-nc",
            Family::ShuffleNc => "shuffle-nc",
            Family::BishopsNc => "bishops-nc",
            Family::Transcendental => "transcendental",
            Family::Dfrc => "dfrc",
        }
    }

    /// The inverse of [`Family::name`].
    ///
    /// # Examples
    ///
    /// The family around Chess960 and its sizes.
    ///
    /// ```
    /// use c960_common::family::Family;
    ///
    /// for (name, count) in [
    ///     ("chess960", 960),
    ///     ("shuffle", 5040),
    ///     ("bishops", 2880),
    ///     ("chess960-nc", 480),
    ///     ("shuffle-nc", 2520),
    ///     ("bishops-nc", 1440),
    ///     ("transcendental", 2880 * 2880),
    ///     ("dfrc", 960 * 960),
    /// ] {
    ///     assert_eq!(Family::parse(name)?.count(), count);
    /// }
    /// assert!(Family::parse("chess961").is_err());
    /// # Ok::<(), c960_common::family::FamilyError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Family, FamilyError> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| FamilyError::Unknown(text.to_string()))
    }

    /// The number of starts.
    pub fn count(self) -> u32 {
        match self {
            Family::Chess960 => 960,
            Family::Shuffle => 5040,
            Family::Bishops => 2880,
            Family::Chess960Nc => 480,
            Family::ShuffleNc => 2520,
            Family::BishopsNc => 1440,
            Family::Transcendental => 2880 * 2880,
            Family::Dfrc => 960 * 960,
        }
    }

    /// Whether the family castles by default.
    pub fn castles(self) -> bool {
        matches!(self, Family::Chess960 | Family::Dfrc)
    }

    /// Whether Black's back rank mirrors White's.
    pub fn mirrored(self) -> bool {
        !matches!(self, Family::Transcendental | Family::Dfrc)
    }

    /// For a `-nc` family, the family whose mirror pairs it counts once.
    pub fn mirror_parent(self) -> Option<Family> {
        match self {
            Family::Chess960Nc => Some(Family::Chess960),
            Family::ShuffleNc => Some(Family::Shuffle),
            Family::BishopsNc => Some(Family::Bishops),
            _ => None,
        }
    }

    /// For the two-arrangement families, the family each side's arrangement comes from.
    pub fn side_family(self) -> Family {
        match self {
            Family::Transcendental => Family::Bishops,
            Family::Dfrc => Family::Chess960,
            f => f.mirror_parent().unwrap_or(f),
        }
    }

    /// Whether the family needs the bishops on opposite colours.
    pub fn needs_opposite_bishops(self) -> bool {
        !matches!(self.side_family(), Family::Shuffle)
    }

    /// Whether the family needs the king between the rooks.
    pub fn needs_king_between_rooks(self) -> bool {
        matches!(self.side_family(), Family::Chess960)
    }

    /// Checks one side's arrangement against the family's rules (the piece set first).
    pub fn check_arrangement(self, arr: &Arrangement) -> Result<(), FamilyError> {
        if !has_back_rank_pieces(arr) {
            return Err(FamilyError::WrongPieces);
        }
        if self.needs_opposite_bishops() && !bishops_opposite(arr) {
            return Err(FamilyError::BishopsSameColour(self));
        }
        if self.needs_king_between_rooks() && !king_between_rooks(arr) {
            return Err(FamilyError::KingNotBetweenRooks(self));
        }
        Ok(())
    }

    /// The start numbered `n`.
    ///
    /// # Examples
    ///
    /// ```
    /// use c960_common::family::Family;
    ///
    /// let dfrc = Family::parse("dfrc")?;
    /// // Number 518 × 960 + 518: the classical arrangement on both sides.
    /// let classical = dfrc.start(518 * 960 + 518)?;
    /// assert_eq!(classical.fen(), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1");
    /// assert!(dfrc.start(960 * 960).is_err());
    /// # Ok::<(), c960_common::family::FamilyError>(())
    /// ```
    pub fn start(self, n: u64) -> Result<Start, FamilyError> {
        if n >= u64::from(self.count()) {
            return Err(FamilyError::OutOfRange {
                family: self,
                number: n,
                last: self.count() - 1,
            });
        }
        let n32 = n as u32;
        let (white, black) = match self {
            Family::Transcendental | Family::Dfrc => {
                let side = self.side_family();
                let per = u64::from(side.count());
                (
                    side.side_arrangement(n / per),
                    side.side_arrangement(n % per),
                )
            }
            _ => {
                let arr = self.side_arrangement(n);
                (arr, arr)
            }
        };
        Ok(Start {
            family: self,
            number: n32,
            white,
            black,
        })
    }

    /// The arrangement numbered `n` of a one-arrangement family (`n` in range).
    fn side_arrangement(self, n: u64) -> Arrangement {
        let t = tables();
        let n = n as usize;
        match self {
            Family::Chess960 => StartPosition::new(n as u32)
                .expect("in range")
                .arrangement(),
            Family::Shuffle => arr_of(&t.shuffle[n]),
            Family::Bishops => arr_of(&t.bishops[n]),
            Family::Chess960Nc => Family::Chess960.side_arrangement(u64::from(t.chess960_nc[n])),
            Family::ShuffleNc => Family::Shuffle.side_arrangement(u64::from(t.shuffle_nc[n])),
            Family::BishopsNc => Family::Bishops.side_arrangement(u64::from(t.bishops_nc[n])),
            Family::Transcendental | Family::Dfrc => unreachable!("two-arrangement family"),
        }
    }

    /// The number of one side's arrangement in a one-arrangement family (rules already checked).
    fn side_number(self, arr: &Arrangement) -> u32 {
        let t = tables();
        let search = |keys: &[Key]| {
            keys.binary_search(&key_of(arr))
                .expect("every checked arrangement is in its table") as u32
        };
        let nc = |list: &[u32], parent: u32| {
            list.binary_search(&parent)
                .expect("canonical members are listed") as u32
        };
        match self {
            Family::Chess960 => u32::from(
                StartPosition::from_arrangement(arr)
                    .expect("checked")
                    .number(),
            ),
            Family::Shuffle => search(&t.shuffle),
            Family::Bishops => search(&t.bishops),
            Family::Chess960Nc => nc(
                &t.chess960_nc,
                Family::Chess960.side_number(&canonical(arr)),
            ),
            Family::ShuffleNc => nc(&t.shuffle_nc, Family::Shuffle.side_number(&canonical(arr))),
            Family::BishopsNc => nc(&t.bishops_nc, Family::Bishops.side_number(&canonical(arr))),
            Family::Transcendental | Family::Dfrc => unreachable!("two-arrangement family"),
        }
    }

    /// The start with these back ranks (Black's read a8 → h8). A `-nc` family accepts either
    /// member of a mirror pair and answers with the pair's start (its canonical member).
    pub fn start_of(self, white: &Arrangement, black: &Arrangement) -> Result<Start, FamilyError> {
        self.check_arrangement(white)?;
        self.check_arrangement(black)?;
        let number = match self {
            Family::Transcendental | Family::Dfrc => {
                let side = self.side_family();
                side.side_number(white) * side.count() + side.side_number(black)
            }
            _ => {
                if white != black {
                    return Err(FamilyError::NotMirrored(self));
                }
                self.side_number(white)
            }
        };
        self.start(u64::from(number))
    }

    /// Parses `RNBQKBNR` (both sides alike) or `RNBQKBNR/rbnqkbnr` (White, then Black from a8
    /// to h8), either case, into the family's start.
    pub fn parse_start(self, text: &str) -> Result<Start, FamilyError> {
        let side = |s: &str| {
            StartPosition::parse_arrangement(s).map_err(|_| FamilyError::Malformed(text.into()))
        };
        let (white, black) = match text.split_once('/') {
            Some((w, b)) => (side(w)?, side(b)?),
            None => {
                let a = side(text)?;
                (a, a)
            }
        };
        self.start_of(&white, &black)
    }

    /// The start that `pos` is in this family, with the castling rights `castling` gives it
    /// (move counters are not looked at). A `-nc` family accepts either member of a pair.
    pub fn start_of_position(
        self,
        pos: &Position,
        castling: Castling,
    ) -> Result<Start, FamilyError> {
        let not_start = |reason| FamilyError::NotAStart {
            family: self,
            reason,
        };
        let back = |color: Color, rank: u8| -> Result<Arrangement, FamilyError> {
            let mut arr = [Role::Pawn; 8];
            for (file, slot) in arr.iter_mut().enumerate() {
                match pos.piece_at(Square::from_coords(file as u8, rank)) {
                    Some(p) if p.color == color && p.role != Role::Pawn => *slot = p.role,
                    _ => return Err(not_start("a back rank is not a full row of pieces")),
                }
            }
            Ok(arr)
        };
        let white = back(Color::White, 0)?;
        let black = back(Color::Black, 7)?;
        let start = self.start_of(&white, &black)?;
        // `start_of` accepted the pair; compare the whole board with the member given.
        let given = Start {
            white,
            black,
            ..start
        };
        let expected = given.setup(castling)?;
        let actual = pos.to_setup();
        if actual.board != expected.board {
            return Err(not_start("pieces other than the back ranks and pawns"));
        }
        if actual.side_to_move != Color::White || actual.ep_square.is_some() {
            return Err(not_start(
                "White must be to move, with no en-passant square",
            ));
        }
        if actual.castling_rooks != expected.castling_rooks {
            return Err(not_start(if expected.castling_rooks == 0 {
                "the family's starts have no castling rights"
            } else {
                "every rook beside the king must carry a castling right"
            }));
        }
        Ok(start)
    }

    /// Every start in number order.
    pub fn starts(self) -> impl Iterator<Item = Start> {
        (0..u64::from(self.count())).map(move |n| self.start(n).expect("in range"))
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Family {
    type Err = FamilyError;
    fn from_str(s: &str) -> Result<Family, FamilyError> {
        Family::parse(s)
    }
}

fn letters(arr: &Arrangement) -> String {
    arr.iter().map(|r| r.char().to_ascii_uppercase()).collect()
}

impl Start {
    /// `RNBQKBNR` where Black mirrors White, else `RNBQKBNR/rbnqkbnr` (Black a8 → h8).
    pub fn arrangement_string(&self) -> String {
        if self.family.mirrored() {
            letters(&self.white)
        } else {
            format!(
                "{}/{}",
                letters(&self.white),
                letters(&self.black).to_lowercase()
            )
        }
    }

    /// The setup: back ranks, pawns, White to move, castling rights as `castling` says.
    pub fn setup(&self, castling: Castling) -> Result<Setup, FamilyError> {
        let castles = match castling {
            Castling::Default => self.family.castles(),
            Castling::Chess960 => match self.family {
                Family::Shuffle | Family::Bishops | Family::Chess960 | Family::Dfrc => true,
                f => return Err(FamilyError::NoCastlingOption(f)),
            },
        };
        let mut board = [None; 64];
        let mut castling_rooks = 0u64;
        for (color, arr, back, pawns) in [
            (Color::White, &self.white, 0u8, 1u8),
            (Color::Black, &self.black, 7, 6),
        ] {
            for (file, &role) in arr.iter().enumerate() {
                let file = file as u8;
                let sq = Square::from_coords(file, back);
                board[sq.index() as usize] = Some(Piece { color, role });
                board[Square::from_coords(file, pawns).index() as usize] = Some(Piece {
                    color,
                    role: Role::Pawn,
                });
                if castles && role == Role::Rook && king_between_rooks(arr) {
                    castling_rooks |= sq.bitboard();
                }
            }
        }
        Ok(Setup {
            board,
            side_to_move: Color::White,
            castling_rooks,
            ep_square: None,
            halfmove_clock: 0,
            fullmove_number: 1,
        })
    }

    /// The position with the family's castling rule.
    pub fn position(&self) -> Position {
        self.position_with(Castling::Default)
            .expect("the default castling rule always applies")
    }

    /// The position with the castling rights `castling` gives it.
    pub fn position_with(&self, castling: Castling) -> Result<Position, FamilyError> {
        let setup = self.setup(castling)?;
        Ok(Position::from_setup(&setup).expect("every start of every family is legal"))
    }

    /// The Shredder-FEN with the family's castling rule (`-` where it has none).
    pub fn fen(&self) -> String {
        self.position().to_fen(crate::CastlingNotation::Shredder)
    }
}
