//! The validated position and how moves change it (copy-make with incremental Zobrist hashing).

use crate::attacks::{
    bishop_attacks_with, bishop_rays, king_attacks, knight_attacks, pawn_attacks, pinned_by,
    rook_attacks_with, rook_rays,
};
use crate::chess_move::{Move, MoveKind};
use crate::types::{Bitboard, Color, Piece, Role, Square, bb};
use crate::zobrist::{KEYS, ZobristKey, ZobristKeys};

/// Marks "no en-passant square".
pub(crate) const NO_SQUARE: u8 = 64;

/// An unvalidated position: what a FEN says, before the rules have looked at it.
///
/// [`Position::from_setup`] is the only way from a `Setup` to a [`Position`], so every
/// `Position` in the program satisfies the invariants listed there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The piece on each square, a1 first.
    pub board: [Option<Piece>; 64],
    /// The side to move.
    pub side_to_move: Color,
    /// Squares of the rooks that still have a castling right.
    pub castling_rooks: Bitboard,
    /// The en-passant target square, if the FEN names one.
    pub ep_square: Option<Square>,
    /// Halfmoves since the last capture or pawn move.
    pub halfmove_clock: u32,
    /// Full-move number, starting at 1.
    pub fullmove_number: u32,
}

/// Why a [`Setup`] is not a legal position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    /// Each side needs exactly one king.
    #[error("{0:?} must have exactly one king")]
    KingCount(Color),
    /// Pawns never stand on the first or last rank.
    #[error("pawn on the first or last rank ({0})")]
    PawnOnBackRank(Square),
    /// More pieces than a side can have.
    #[error("{0:?} has too many pieces (at most 16, of which at most 8 pawns)")]
    TooManyPieces(Color),
    /// The side that just moved left its king in check.
    #[error("the side not to move is in check")]
    OppositeCheck,
    /// A castling right that the board cannot support.
    #[error("castling right for {0} is invalid: {1}")]
    BadCastlingRight(Square, &'static str),
    /// An en-passant square that no double pawn push could have produced.
    #[error("en-passant square {0} is inconsistent: {1}")]
    BadEnPassant(Square, &'static str),
}

/// A legal Chess960 position.
///
/// Invariants: one king per side; the side not to move is not in check; castling rooks stand on
/// their side's back rank with an unmoved king there, at most one on each side of the king;
/// `ep_square` is set only when an en-passant capture is legal; `hash` equals the Zobrist key
/// computed from scratch; `checkers` are the pieces giving check to the side to move.
#[derive(Clone, Copy)]
pub struct Position {
    /// The key set `hash` is computed with (the default set unless a seed was chosen).
    pub(crate) keys: &'static ZobristKeys,
    pub(crate) by_role: [Bitboard; 6],
    pub(crate) by_color: [Bitboard; 2],
    pub(crate) castling_rooks: Bitboard,
    pub(crate) checkers: Bitboard,
    pub(crate) hash: ZobristKey,
    pub(crate) side: Color,
    pub(crate) ep_square: u8,
    pub(crate) halfmove_clock: u16,
    pub(crate) fullmove_number: u16,
}

impl Position {
    /// Validates a setup into a position; see the type's invariants.
    pub fn from_setup(setup: &Setup) -> Result<Position, PositionError> {
        let mut pos = Position {
            keys: &KEYS,
            by_role: [0; 6],
            by_color: [0; 2],
            castling_rooks: 0,
            checkers: 0,
            hash: 0,
            side: setup.side_to_move,
            ep_square: NO_SQUARE,
            halfmove_clock: setup.halfmove_clock.min(u16::MAX as u32) as u16,
            fullmove_number: setup.fullmove_number.clamp(1, u16::MAX as u32) as u16,
        };
        for (i, piece) in setup.board.iter().enumerate() {
            if let Some(p) = piece {
                pos.by_role[p.role.index()] |= 1 << i;
                pos.by_color[p.color.index()] |= 1 << i;
            }
        }
        for color in [Color::White, Color::Black] {
            if (pos.pieces(color, Role::King)).count_ones() != 1 {
                return Err(PositionError::KingCount(color));
            }
            let ours = pos.by_color[color.index()];
            if ours.count_ones() > 16 || (ours & pos.by_role[0]).count_ones() > 8 {
                return Err(PositionError::TooManyPieces(color));
            }
        }
        if let Some(sq) = bb::squares(pos.by_role[0] & (bb::RANK_1 | bb::RANK_8)).next() {
            return Err(PositionError::PawnOnBackRank(Square::new(sq)));
        }
        pos.castling_rooks = setup.castling_rooks;
        for sq in bb::squares(setup.castling_rooks) {
            let square = Square::new(sq);
            let color = match square.rank() {
                0 => Color::White,
                7 => Color::Black,
                _ => {
                    return Err(PositionError::BadCastlingRight(
                        square,
                        "the rook is not on a back rank",
                    ));
                }
            };
            if pos.piece_at(square)
                != Some(Piece {
                    color,
                    role: Role::Rook,
                })
            {
                return Err(PositionError::BadCastlingRight(
                    square,
                    "no rook of that side on that square",
                ));
            }
            let king = pos.king_square(color);
            if king / 8 != color.back_rank() {
                return Err(PositionError::BadCastlingRight(
                    square,
                    "the king is not on its back rank",
                ));
            }
            let same_side =
                bb::squares(setup.castling_rooks & (bb::RANK_1 << (8 * color.back_rank())))
                    .filter(|&r| (r > king) == (sq > king))
                    .count();
            if same_side > 1 {
                return Err(PositionError::BadCastlingRight(
                    square,
                    "two castling rooks on one side of the king",
                ));
            }
        }
        let them = pos.side.other();
        if pos.attackers_to(pos.king_square(them), pos.occupied(), pos.side) != 0 {
            return Err(PositionError::OppositeCheck);
        }
        pos.checkers = pos.attackers_to(pos.king_square(pos.side), pos.occupied(), them);
        if let Some(ep) = setup.ep_square {
            let (ep_rank, step): (u8, i8) = if pos.side == Color::White {
                (5, -8)
            } else {
                (2, 8)
            };
            if ep.rank() != ep_rank {
                return Err(PositionError::BadEnPassant(
                    ep,
                    "not on the rank a double push passes",
                ));
            }
            let pawn_sq = (ep.index() as i8 + step) as u8;
            let origin = (ep.index() as i8 - step) as u8;
            if pos.piece_at(Square::new(pawn_sq))
                != Some(Piece {
                    color: them,
                    role: Role::Pawn,
                })
            {
                return Err(PositionError::BadEnPassant(
                    ep,
                    "no pawn that just made a double push",
                ));
            }
            if pos.occupied() & (ep.bitboard() | (1u64 << origin)) != 0 {
                return Err(PositionError::BadEnPassant(
                    ep,
                    "the passed squares are not empty",
                ));
            }
            pos.set_ep_if_capturable::<false>(ep.index());
        }
        pos.hash = pos.compute_hash();
        Ok(pos)
    }

    /// Turns the position back into a setup (the inverse of [`Position::from_setup`]).
    pub fn to_setup(&self) -> Setup {
        let mut board = [None; 64];
        for (i, slot) in board.iter_mut().enumerate() {
            *slot = self.piece_at(Square::new(i as u8));
        }
        Setup {
            board,
            side_to_move: self.side,
            castling_rooks: self.castling_rooks,
            ep_square: self.ep_square(),
            halfmove_clock: self.halfmove_clock as u32,
            fullmove_number: self.fullmove_number as u32,
        }
    }

    /// The side to move.
    #[inline(always)]
    pub fn side_to_move(&self) -> Color {
        self.side
    }
    /// The Zobrist key of the position (pieces, side, castling rooks, legal en-passant file),
    /// low 64 bits.
    #[inline(always)]
    pub fn hash(&self) -> u64 {
        self.hash as u64
    }
    /// The full 128-bit Zobrist key.
    #[inline(always)]
    pub fn hash128(&self) -> ZobristKey {
        self.hash
    }
    /// The key set the position is hashed with.
    pub fn zobrist_keys(&self) -> &'static ZobristKeys {
        self.keys
    }
    /// The same position hashed with the key set of `seed` (see [`crate::zobrist`]).
    pub fn with_zobrist_seed(&self, seed: u64) -> Position {
        let mut pos = *self;
        pos.keys = crate::zobrist::keys_for_seed(seed);
        pos.hash = pos.hash_with(pos.keys);
        pos
    }
    /// Squares of the rooks that still carry a castling right.
    #[inline(always)]
    pub fn castling_rooks(&self) -> Bitboard {
        self.castling_rooks
    }
    /// The en-passant square, present only when an en-passant capture is legal.
    pub fn ep_square(&self) -> Option<Square> {
        (self.ep_square != NO_SQUARE).then(|| Square::new(self.ep_square))
    }
    /// Halfmoves since the last capture or pawn move.
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock as u32
    }
    /// Full-move number.
    pub fn fullmove_number(&self) -> u32 {
        self.fullmove_number as u32
    }
    /// Pieces giving check to the side to move.
    #[inline(always)]
    pub fn checkers(&self) -> Bitboard {
        self.checkers
    }
    /// True when the side to move is in check.
    #[inline(always)]
    pub fn is_check(&self) -> bool {
        self.checkers != 0
    }
    /// All occupied squares.
    #[inline(always)]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }
    /// Squares occupied by `color`.
    #[inline(always)]
    pub fn by_color(&self, color: Color) -> Bitboard {
        self.by_color[color.index()]
    }
    /// Squares occupied by pieces of `role`, either colour.
    #[inline(always)]
    pub fn by_role(&self, role: Role) -> Bitboard {
        self.by_role[role.index()]
    }
    /// Squares occupied by `color`'s pieces of `role`.
    #[inline(always)]
    pub fn pieces(&self, color: Color, role: Role) -> Bitboard {
        self.by_color[color.index()] & self.by_role[role.index()]
    }
    /// The square index of `color`'s king.
    #[inline(always)]
    pub fn king_square(&self, color: Color) -> u8 {
        self.pieces(color, Role::King).trailing_zeros() as u8
    }
    /// The role of the piece on `sq`, if any.
    #[inline(always)]
    pub fn role_at(&self, sq: u8) -> Option<Role> {
        let bit = 1u64 << sq;
        if self.occupied() & bit == 0 {
            return None;
        }
        // Unrolled, pawns first: the commonest pieces are found soonest.
        Some(if self.by_role[0] & bit != 0 {
            Role::Pawn
        } else if self.by_role[1] & bit != 0 {
            Role::Knight
        } else if self.by_role[2] & bit != 0 {
            Role::Bishop
        } else if self.by_role[3] & bit != 0 {
            Role::Rook
        } else if self.by_role[4] & bit != 0 {
            Role::Queen
        } else {
            Role::King
        })
    }
    /// The piece on `sq`, if any.
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        let role = self.role_at(sq.index())?;
        let color = if self.by_color[0] & sq.bitboard() != 0 {
            Color::White
        } else {
            Color::Black
        };
        Some(Piece { color, role })
    }

    /// Pieces of `by` that attack `sq`, with sliders seeing through `occ`.
    #[inline(always)]
    pub fn attackers_to(&self, sq: u8, occ: Bitboard, by: Color) -> Bitboard {
        self.attackers_to_with::<false>(sq, occ, by)
    }

    /// [`Position::attackers_to`] with the slider lookup chosen by `PEXT` (see
    /// `attacks::slider_index`).
    #[inline(always)]
    pub(crate) fn attackers_to_with<const PEXT: bool>(
        &self,
        sq: u8,
        occ: Bitboard,
        by: Color,
    ) -> Bitboard {
        let theirs = self.by_color[by.index()];
        let diag =
            theirs & (self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()]);
        let ortho = theirs & (self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()]);
        let mut attackers = theirs
            & ((pawn_attacks(by.other().index(), sq) & self.by_role[0])
                | (knight_attacks(sq) & self.by_role[1])
                | (king_attacks(sq) & self.by_role[5]));
        // The magic tables are large and mostly out of cache: look them up only when a slider
        // stands on one of the square's lines at all.
        if bishop_rays(sq) & diag != 0 {
            attackers |= bishop_attacks_with::<PEXT>(sq, occ) & diag;
        }
        if rook_rays(sq) & ortho != 0 {
            attackers |= rook_attacks_with::<PEXT>(sq, occ) & ortho;
        }
        attackers
    }

    /// The Zobrist key computed from scratch with the given key set.
    pub fn hash_with(&self, keys: &ZobristKeys) -> ZobristKey {
        let mut h = 0;
        for color in [Color::White, Color::Black] {
            for role in Role::ALL {
                for sq in bb::squares(self.pieces(color, role)) {
                    h ^= keys.pieces[color.index()][role.index()][sq as usize];
                }
            }
        }
        if self.side == Color::Black {
            h ^= keys.black_to_move;
        }
        for sq in bb::squares(self.castling_rooks) {
            h ^= keys.castling[sq as usize];
        }
        if self.ep_square != NO_SQUARE {
            h ^= keys.ep_file[(self.ep_square & 7) as usize];
        }
        h
    }

    fn compute_hash(&self) -> ZobristKey {
        self.hash_with(self.keys)
    }

    /// True when the side to move's pawn on `from` may legally capture en passant onto `ep`:
    /// the king must not be attacked once both pawns have left their squares, which covers
    /// checks, pins, and the two pawns leaving one rank together (the horizontal pin).
    #[inline]
    pub(crate) fn ep_capture_is_legal<const PEXT: bool>(&self, from: u8, ep: u8) -> bool {
        let us = self.side;
        let them_bb = self.by_color[us.other().index()];
        let king = self.king_square(us);
        let captured = 1u64 << (ep ^ 8);
        let occ = (self.occupied() ^ (1u64 << from) ^ captured) | (1u64 << ep);
        let theirs = them_bb & !captured;
        let diag = self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()];
        let ortho = self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()];
        theirs
            & ((bishop_attacks_with::<PEXT>(king, occ) & diag)
                | (rook_attacks_with::<PEXT>(king, occ) & ortho)
                | (knight_attacks(king) & self.by_role[1])
                | (pawn_attacks(us.index(), king) & self.by_role[0]))
            == 0
    }

    /// Sets the en-passant square when some pawn of the side to move can legally capture there.
    fn set_ep_if_capturable<const PEXT: bool>(&mut self, ep: u8) {
        let capturers =
            en_passant_capturers(self.side.other(), ep, self.pieces(self.side, Role::Pawn));
        if bb::squares(capturers).any(|from| self.ep_capture_is_legal::<PEXT>(from, ep)) {
            self.ep_square = ep;
        }
    }

    #[inline(always)]
    fn toggle<const HASH: bool>(&mut self, color: Color, role: Role, sq: u8) {
        let bit = 1u64 << sq;
        self.by_role[role.index()] ^= bit;
        self.by_color[color.index()] ^= bit;
        if HASH {
            self.hash ^= self.keys.pieces[color.index()][role.index()][sq as usize];
        }
    }

    /// The position after `m`, which must be legal here (as produced by the move generator).
    #[inline(always)]
    ///
    /// # Examples
    ///
    /// Copy-make: the position played from is unchanged.
    ///
    /// ```
    /// use c960_common::{Position, StartPosition};
    ///
    /// let start = StartPosition::new(518).unwrap().position();
    /// let moves = start.legal_moves();
    /// assert_eq!(moves.as_slice().len(), 20);
    /// let after = start.play(moves.as_slice()[0]);
    /// assert_ne!(after, start);
    /// assert_eq!(start.legal_moves().as_slice().len(), 20);
    /// ```
    pub fn play(&self, m: Move) -> Position {
        let mut next = *self;
        next.play_mut(m);
        next
    }

    /// The position with the other side to move and the board unchanged (a null move, for
    /// search's null-move pruning): the en-passant square is cleared and the key updated with the
    /// position's own key set, so a seeded position stays keyed by its seed.
    ///
    /// The caller makes sure the side to move is not in check (passing out of check is not a
    /// position): the result has no checkers.
    pub fn pass(&self) -> Position {
        debug_assert!(!self.is_check(), "a null move out of check");
        let mut next = *self;
        if next.ep_square != NO_SQUARE {
            next.hash ^= next.keys.ep_file[(next.ep_square & 7) as usize];
            next.ep_square = NO_SQUARE;
        }
        next.side = next.side.other();
        next.hash ^= next.keys.black_to_move;
        // The side that passed was not in check, and the side now to move was not in check before.
        next.checkers = 0;
        next.halfmove_clock = next.halfmove_clock.saturating_add(1);
        next
    }

    /// Plays the legal move `m` in place.
    pub fn play_mut(&mut self, m: Move) {
        let role = self
            .role_at(m.from_index())
            .expect("a legal move starts on an occupied square");
        self.apply::<true, false>(m, role);
    }

    /// The position after `m` played by a piece of `role`, without maintaining the Zobrist key.
    ///
    /// Only for perft without a hash table: the key and the move clocks of the result are
    /// meaningless, so such a position never leaves the crate.
    #[inline(always)]
    pub(crate) fn play_unhashed<const PEXT: bool>(&self, m: Move, role: Role) -> Position {
        let mut next = *self;
        next.apply::<false, PEXT>(m, role);
        next
    }

    /// The position after `m` played by a piece of `role` (known to the caller from its batch).
    #[inline(always)]
    pub(crate) fn play_with_role<const PEXT: bool>(&self, m: Move, role: Role) -> Position {
        let mut next = *self;
        next.apply::<true, PEXT>(m, role);
        next
    }

    /// Whether the normal move of `role` from `from` to `to` is a double step next to an enemy
    /// pawn: the one normal move after which an en-passant capture may be legal (whether it is
    /// is a question about the child).
    #[inline(always)]
    pub(crate) fn may_leave_en_passant(&self, role: Role, from: u8, to: u8) -> bool {
        role == Role::Pawn
            && from.abs_diff(to) == 16
            && en_passant_capturers(
                self.side,
                (from + to) / 2,
                self.pieces(self.side.other(), Role::Pawn),
            ) != 0
    }

    /// The Zobrist key of the position after `m` played by a piece of `role`, without making
    /// it, for a normal move that cannot leave an en-passant capture; `None` for the others
    /// (castling, en passant, promotion, and a double step next to an enemy pawn, whose key
    /// needs the child: whether the capture would be legal is a question about it).
    ///
    /// Equal to `play_with_role(m, role).hash128()` whenever it is `Some`: it restates
    /// [`Position::apply_parts`]'s keyed steps for these moves (so a change to one needs the
    /// same change in the other), and a unit test compares the two on every move of some
    /// 11,000 positions of random play.
    #[inline(always)]
    pub(crate) fn key_after(&self, m: Move, role: Role) -> Option<ZobristKey> {
        let (from, to) = (m.from_index(), m.to_index());
        if m.kind() != MoveKind::Normal || self.may_leave_en_passant(role, from, to) {
            return None;
        }
        let us = self.side;
        let keys = self.keys;
        let mut hash = self.hash ^ keys.black_to_move;
        if self.ep_square != NO_SQUARE {
            hash ^= keys.ep_file[(self.ep_square & 7) as usize];
        }
        if let Some(captured) = self.role_at(to) {
            hash ^= keys.pieces[us.other().index()][captured.index()][to as usize];
        }
        let piece = &keys.pieces[us.index()][role.index()];
        hash ^= piece[from as usize] ^ piece[to as usize];
        let mut castling = self.castling_rooks & !((1u64 << from) | (1u64 << to));
        if role == Role::King {
            castling &= !(bb::RANK_1 << (us.back_rank() * 8));
        }
        for sq in bb::squares(self.castling_rooks ^ castling) {
            hash ^= keys.castling[sq as usize];
        }
        Some(hash)
    }

    /// The position after a normal move (no castling, en passant or promotion) of `role` from
    /// `from` to `to`, without the Zobrist key: [`Position::play_unhashed`] with the move's kind
    /// known at compile time, for perft's batches of such moves (no `Move` is encoded or
    /// decoded, and the make's branches on the kind fold away).
    #[inline(always)]
    pub(crate) fn play_normal_unhashed<const PEXT: bool>(
        &self,
        role: Role,
        from: u8,
        to: u8,
    ) -> Position {
        let mut next = *self;
        next.apply_parts::<false, PEXT>(from, to, MoveKind::Normal, role);
        next
    }

    #[inline(always)]
    fn apply<const HASH: bool, const PEXT: bool>(&mut self, m: Move, role: Role) {
        self.apply_parts::<HASH, PEXT>(m.from_index(), m.to_index(), m.kind(), role)
    }

    #[inline(always)]
    fn apply_parts<const HASH: bool, const PEXT: bool>(
        &mut self,
        from: u8,
        to: u8,
        kind: MoveKind,
        role: Role,
    ) {
        let us = self.side;
        let them = us.other();
        let old_castling = self.castling_rooks;
        if self.ep_square != NO_SQUARE {
            if HASH {
                self.hash ^= self.keys.ep_file[(self.ep_square & 7) as usize];
            }
            self.ep_square = NO_SQUARE;
        }
        // The clocks: not kept without the key, since only perft plays such moves.
        if HASH {
            self.halfmove_clock = self.halfmove_clock.saturating_add(1);
        }
        let mut double_push = false;
        match kind {
            MoveKind::Castle => {
                let rank_base = us.back_rank() * 8;
                let (king_to, rook_to) = if to > from {
                    (rank_base + 6, rank_base + 5)
                } else {
                    (rank_base + 2, rank_base + 3)
                };
                self.toggle::<HASH>(us, Role::King, from);
                self.toggle::<HASH>(us, Role::Rook, to);
                self.toggle::<HASH>(us, Role::King, king_to);
                self.toggle::<HASH>(us, Role::Rook, rook_to);
                self.castling_rooks &= !(bb::RANK_1 << rank_base);
            }
            kind => {
                if kind == MoveKind::EnPassant {
                    self.toggle::<HASH>(them, Role::Pawn, to ^ 8);
                    self.halfmove_clock = 0;
                } else if let Some(captured) = self.role_at(to) {
                    self.toggle::<HASH>(them, captured, to);
                    self.halfmove_clock = 0;
                }
                self.toggle::<HASH>(us, role, from);
                let placed = if let MoveKind::Promotion(p) = kind {
                    p
                } else {
                    role
                };
                self.toggle::<HASH>(us, placed, to);
                match role {
                    Role::Pawn => {
                        self.halfmove_clock = 0;
                        double_push = from.abs_diff(to) == 16;
                    }
                    Role::King => self.castling_rooks &= !(bb::RANK_1 << (us.back_rank() * 8)),
                    _ => {}
                }
                self.castling_rooks &= !((1u64 << from) | (1u64 << to));
            }
        }
        if HASH {
            for sq in bb::squares(old_castling ^ self.castling_rooks) {
                self.hash ^= self.keys.castling[sq as usize];
            }
            self.hash ^= self.keys.black_to_move;
        }
        self.side = them;
        if HASH && us == Color::Black {
            self.fullmove_number = self.fullmove_number.saturating_add(1);
        }
        self.checkers = match kind {
            MoveKind::Normal => self.checkers_after_normal_move::<PEXT>(role, from, to),
            // Castling, en passant and promotion move or remove a second piece or change a
            // role: recompute from scratch (rare moves).
            _ => self.attackers_to_with::<PEXT>(self.king_square(them), self.occupied(), us),
        };
        if double_push {
            let ep = (from + to) / 2;
            self.set_ep_if_capturable::<PEXT>(ep);
            if HASH && self.ep_square != NO_SQUARE {
                self.hash ^= self.keys.ep_file[(ep & 7) as usize];
            }
        }
    }

    /// Checkers after a normal move of `role` from `from` to `to`, the side to move already
    /// switched: only the moved piece can give direct check, and only a slider uncovered on
    /// `from` can give discovered check.
    #[inline(always)]
    fn checkers_after_normal_move<const PEXT: bool>(
        &self,
        role: Role,
        from: u8,
        to: u8,
    ) -> Bitboard {
        let mover = self.side.other();
        let king = self.king_square(self.side);
        let ours = self.by_color[mover.index()];
        let occ = self.occupied();
        let to_bit = 1u64 << to;
        let mut checkers = match role {
            Role::Pawn => pawn_attacks(self.side.index(), king) & to_bit,
            Role::Knight => knight_attacks(king) & to_bit,
            Role::King => 0,
            _ => 0, // sliders are found with the discovered checks below
        };
        let diag = ours & (self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()]);
        let ortho = ours & (self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()]);
        // A slider checks from `to`, or is uncovered by the piece leaving `from`; either way it
        // stands on a line through the king together with `from` or `to`.
        let touched = (1u64 << from) | to_bit;
        if bishop_rays(king) & touched != 0 && bishop_rays(king) & diag != 0 {
            checkers |= bishop_attacks_with::<PEXT>(king, occ) & diag;
        }
        if rook_rays(king) & touched != 0 && rook_rays(king) & ortho != 0 {
            checkers |= rook_attacks_with::<PEXT>(king, occ) & ortho;
        }
        checkers
    }

    /// Squares of the side to move's pieces pinned to their king.
    #[inline(always)]
    pub(crate) fn pinned(&self) -> Bitboard {
        self.pinned_of(self.side)
    }

    /// Squares of `us`'s pieces pinned to their king.
    #[inline(always)]
    pub(crate) fn pinned_of(&self, us: Color) -> Bitboard {
        let king = self.king_square(us);
        let ours = self.by_color[us.index()];
        let theirs = self.by_color[us.other().index()];
        let diag = self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()];
        let ortho = self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()];
        let snipers = theirs & ((rook_rays(king) & ortho) | (bishop_rays(king) & diag));
        pinned_by(king, snipers, ours, self.occupied())
    }

    /// An ASCII diagram, rank 8 first, `.` for empty squares.
    pub fn board_ascii(&self) -> String {
        let mut out = String::new();
        for rank in (0..8).rev() {
            out.push((b'1' + rank) as char);
            out.push(' ');
            for file in 0..8 {
                out.push(' ');
                out.push(
                    self.piece_at(Square::from_coords(file, rank))
                        .map_or('.', Piece::char),
                );
            }
            out.push('\n');
        }
        out.push_str("   a b c d e f g h\n");
        out
    }
}

impl PartialEq for Position {
    /// Positions are equal when the board, side, castling rights, en-passant square and clocks
    /// are; the key set used for hashing does not matter.
    fn eq(&self, other: &Position) -> bool {
        self.by_role == other.by_role
            && self.by_color == other.by_color
            && self.castling_rooks == other.castling_rooks
            && self.side == other.side
            && self.ep_square == other.ep_square
            && self.halfmove_clock == other.halfmove_clock
            && self.fullmove_number == other.fullmove_number
    }
}

impl Eq for Position {}

/// The pawns among `their_pawns` that attack `ep`, the square a double step of `pusher`'s
/// skipped: those that might capture en passant.
#[inline(always)]
fn en_passant_capturers(pusher: Color, ep: u8, their_pawns: Bitboard) -> Bitboard {
    pawn_attacks(pusher.index(), ep) & their_pawns
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use crate::startpos::StartPosition;

    /// `key_after` is a second statement of the keyed make for normal moves: it must give the
    /// key `play` gives, for every move it keys, in positions with captures, castling rights
    /// lost and en-passant squares set.
    #[test]
    fn key_after_agrees_with_the_made_childs_key() {
        let mut rng = StdRng::seed_from_u64(0xC960);
        let mut keyed = 0;
        let mut declined = 0;
        for sp in (0..960).step_by(7) {
            let mut pos = StartPosition::new(sp).unwrap().position();
            for _ in 0..80 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                for &m in moves.iter() {
                    let role = pos.role_at(m.from_index()).unwrap();
                    match pos.key_after(m, role) {
                        Some(key) => {
                            assert_eq!(
                                key,
                                pos.play(m).hash128(),
                                "{m} in {}",
                                pos.to_fen(crate::CastlingNotation::Shredder)
                            );
                            keyed += 1;
                        }
                        None => declined += 1,
                    }
                }
                pos = pos.play(moves[rng.random_range(0..moves.len())]);
            }
        }
        assert!(
            keyed > 100_000 && declined > 1_000,
            "{keyed} keyed, {declined} declined"
        );
    }
}
