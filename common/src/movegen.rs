//! Legal move generation: check and pin masks, moves delivered in bulk per piece.
//!
//! The generator hands out one [`MoveBatch`] per moving piece — its origin and the set of legal
//! targets — through a callback. Perft counts a batch with a popcount instead of materialising
//! moves, and everything else expands batches into [`Move`]s.

use crate::attacks::{
    between, bishop_attacks_with, king_attacks, knight_attacks, line, pawn_attacks,
    rook_attacks_with,
};
use crate::chess_move::{Move, MoveKind};
use crate::position::{NO_SQUARE, Position};
use crate::types::{Bitboard, Color, Role, bb};

mod child_counter;
pub(crate) use child_counter::ChildMoveCounter;

/// All legal moves of one piece: its origin and its legal target squares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MoveBatch {
    /// The moving piece's role.
    pub role: Role,
    /// The origin square index, when `pawn_step` is 0.
    pub from: u8,
    /// 0 for a batch of one piece. Otherwise a batch of pawns moving alike (pushes, double
    /// pushes or captures to one side): each target's origin is the target minus this step.
    pub pawn_step: i8,
    /// Legal targets. For the king, a square holding its own rook means castling with that rook.
    pub to: Bitboard,
    /// The subset of `to` reached by a special move: en passant (pawns) or castling (king).
    pub special: Bitboard,
}

/// Where the move generator hands its batches, one piece (or one pawn direction) at a time.
/// `ROLE` is `batch.role` as a constant (`Role as u8`): a sink made of one closure per role
/// ([`SinkByRole`]) is called without a jump on the role. Every `FnMut(MoveBatch)` is a sink.
pub(crate) trait BatchSink {
    /// Takes one batch of legal moves of a piece of role `ROLE`.
    fn batch<const ROLE: u8>(&mut self, batch: MoveBatch);
}

impl<F: FnMut(MoveBatch)> BatchSink for F {
    #[inline(always)]
    fn batch<const ROLE: u8>(&mut self, batch: MoveBatch) {
        self(batch)
    }
}

/// A sink with a closure for each role. The leaves' parents count each batch with code
/// specialised by role; behind one closure, that code sat behind an indirect jump on the role
/// (a jump table), which callgrind's branch model mispredicts on two batches in three (0.89 M
/// of the 1.35 M jumps of the start position's perft(6); 31 k indirect misses are left). The
/// Xeon's own predictor did better: no wall-clock change was measurable (BENCHMARKS.md).
pub(crate) struct SinkByRole<P, N, B, R, Q, K> {
    pub pawn: P,
    pub knight: N,
    pub bishop: B,
    pub rook: R,
    pub queen: Q,
    pub king: K,
}

impl<P, N, B, R, Q, K> BatchSink for SinkByRole<P, N, B, R, Q, K>
where
    P: FnMut(MoveBatch),
    N: FnMut(MoveBatch),
    B: FnMut(MoveBatch),
    R: FnMut(MoveBatch),
    Q: FnMut(MoveBatch),
    K: FnMut(MoveBatch),
{
    #[inline(always)]
    fn batch<const ROLE: u8>(&mut self, batch: MoveBatch) {
        match ROLE {
            0 => (self.pawn)(batch),
            1 => (self.knight)(batch),
            2 => (self.bishop)(batch),
            3 => (self.rook)(batch),
            4 => (self.queen)(batch),
            _ => (self.king)(batch),
        }
    }
}

/// The squares one castling touches, on the first rank (shifted up for Black).
#[derive(Clone, Copy)]
struct CastlingPath {
    /// Every square the king or rook passes or lands on, except their own start squares.
    must_be_empty: Bitboard,
    /// The squares the king passes or lands on. Its start square is left out unless it is also
    /// the destination: a king in check never castles, so the start is known to be safe while
    /// the rook still stands where it stands.
    king_crosses: Bitboard,
}

/// Inclusive range of first-rank squares between files `a` and `b`.
const fn rank_span(a: u8, b: u8) -> Bitboard {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    ((1u64 << (hi + 1)) - 1) & !((1u64 << lo) - 1)
}

/// `CASTLING_PATHS[king_file][rook_file]`: the king goes to g (c) and the rook to f (d) when the
/// rook stands on the king's right (left).
static CASTLING_PATHS: [[CastlingPath; 8]; 8] = {
    const EMPTY: CastlingPath = CastlingPath {
        must_be_empty: 0,
        king_crosses: 0,
    };
    let mut table = [[EMPTY; 8]; 8];
    let mut k = 0u8;
    while k < 8 {
        let mut r = 0u8;
        while r < 8 {
            if r != k {
                let (king_to, rook_to) = if r > k { (6, 5) } else { (2, 3) };
                let movers = (1u64 << k) | (1u64 << r);
                let king_span = rank_span(k, king_to);
                table[k as usize][r as usize] = CastlingPath {
                    must_be_empty: (king_span | rank_span(r, rook_to)) & !movers,
                    // The destination is always checked, even when it is the start square:
                    // the departing rook may have been shielding it (king c8, rook b8, enemy
                    // queen a8: castling long leaves the king on c8 in check).
                    king_crosses: (king_span & !(1u64 << k)) | (1u64 << king_to),
                };
            }
            r += 1;
        }
        k += 1;
    }
    table
};

const PROMOTION_RANKS: Bitboard = bb::RANK_1 | bb::RANK_8;
const PROMOTION_ROLES: [Role; 4] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight];

impl MoveBatch {
    /// The number of moves in the batch (a promotion counts as four).
    #[inline(always)]
    pub fn len(&self) -> u32 {
        let base = self.to.count_ones();
        if self.role == Role::Pawn && self.to & PROMOTION_RANKS != 0 {
            base + 3 * (self.to & PROMOTION_RANKS).count_ones()
        } else {
            base
        }
    }
    /// True when every move of the batch is a normal move (no castling, en passant or
    /// promotion), so that [`MoveBatch::normal_origin`] may be used.
    #[inline(always)]
    pub(crate) fn is_normal(&self) -> bool {
        self.special == 0 && (self.role != Role::Pawn || self.to & PROMOTION_RANKS == 0)
    }

    /// The origin of the move to `to` in a batch of normal moves ([`MoveBatch::is_normal`]);
    /// `PAWN` says whether it is a batch of pawns. For loops written where the moves are
    /// counted: a closure per move (as `for_each` takes) is a function of its own wherever the
    /// compiler chooses not to inline it, and the leaves' parents paid for each such call.
    #[inline(always)]
    pub(crate) fn normal_origin<const PAWN: bool>(&self, to: u8) -> u8 {
        debug_assert!(self.is_normal());
        debug_assert_eq!(PAWN, self.role == Role::Pawn);
        // Only pawns come in batches of several pieces.
        if !PAWN || self.pawn_step == 0 {
            self.from
        } else {
            (to as i8 - self.pawn_step) as u8
        }
    }

    /// True when the batch holds no move.
    pub fn is_empty(&self) -> bool {
        self.to == 0
    }
    /// Calls `f` with each move of the batch.
    #[inline(always)]
    pub fn for_each(&self, mut f: impl FnMut(Move)) {
        for to in bb::squares(self.to) {
            let from = if self.pawn_step == 0 {
                self.from
            } else {
                (to as i8 - self.pawn_step) as u8
            };
            let bit = 1u64 << to;
            if self.special & bit != 0 {
                let kind = if self.role == Role::Pawn {
                    MoveKind::EnPassant
                } else {
                    MoveKind::Castle
                };
                f(Move::new(from, to, kind));
            } else if self.role == Role::Pawn && bit & PROMOTION_RANKS != 0 {
                for role in PROMOTION_ROLES {
                    f(Move::new(from, to, MoveKind::Promotion(role)));
                }
            } else {
                f(Move::new(from, to, MoveKind::Normal));
            }
        }
    }
}

/// A fixed-capacity list of moves (no heap allocation).
#[derive(Clone)]
pub struct MoveList {
    moves: [Move; 256],
    len: usize,
}

impl MoveList {
    /// An empty list.
    pub fn new() -> MoveList {
        MoveList {
            moves: [Move::new(0, 0, MoveKind::Normal); 256],
            len: 0,
        }
    }
    /// Appends a move (no legal position has more than 218).
    #[inline(always)]
    pub fn push(&mut self, m: Move) {
        self.moves[self.len] = m;
        self.len += 1;
    }
    /// The moves as a slice.
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }
    /// The moves as a mutable slice (for ordering).
    pub fn as_mut_slice(&mut self) -> &mut [Move] {
        &mut self.moves[..self.len]
    }
    /// Number of moves.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList::new()
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    fn deref(&self) -> &[Move] {
        self.as_slice()
    }
}

const FILE_A: Bitboard = 0x0101_0101_0101_0101;
const FILE_H: Bitboard = FILE_A << 7;

/// `b` shifted `by` squares up the board (down when negative).
#[inline(always)]
fn shift(b: Bitboard, by: i8) -> Bitboard {
    if by > 0 { b << by } else { b >> -by }
}

/// Every square the pawns `pawns` of `color` attack.
#[inline(always)]
fn pawn_attack_span(pawns: Bitboard, color: Color) -> Bitboard {
    match color {
        Color::White => ((pawns & !FILE_A) << 7) | ((pawns & !FILE_H) << 9),
        Color::Black => ((pawns & !FILE_A) >> 9) | ((pawns & !FILE_H) >> 7),
    }
}

/// The attacks from `sq` of a bishop (`diag`), rook (`ortho`) or queen (both) through `occ`.
#[inline(always)]
fn slider_attacks<const PEXT: bool>(sq: u8, diag: bool, ortho: bool, occ: Bitboard) -> Bitboard {
    let mut to = 0;
    if diag {
        to |= bishop_attacks_with::<PEXT>(sq, occ);
    }
    if ortho {
        to |= rook_attacks_with::<PEXT>(sq, occ);
    }
    to
}

impl Position {
    /// Calls `sink` once for each piece that has legal moves.
    #[inline(always)]
    pub fn generate(&self, sink: &mut impl FnMut(MoveBatch)) {
        self.generate_with::<false>(sink)
    }

    /// [`Position::generate`] with the slider lookup chosen by `PEXT` (see
    /// `attacks::slider_index`: `true` only where BMI2 was detected).
    #[inline(always)]
    pub(crate) fn generate_with<const PEXT: bool>(&self, sink: &mut impl BatchSink) {
        // No popcount here: without hardware popcnt (the x86-64 baseline) it is a dozen
        // instructions, and these tests run at every node.
        if self.checkers == 0 {
            self.generate_for::<PEXT, false>(sink)
        } else if !bb::more_than_one(self.checkers) {
            self.generate_for::<PEXT, true>(sink)
        } else {
            self.generate_king::<PEXT>(sink, false)
        }
    }

    /// The number of legal moves (perft at depth 1).
    #[inline(always)]
    pub fn count_moves(&self) -> u64 {
        self.count_moves_with::<false>()
    }

    /// [`Position::count_moves`] with the slider lookup chosen by `PEXT`.
    #[inline(always)]
    pub(crate) fn count_moves_with<const PEXT: bool>(&self) -> u64 {
        let mut n = 0u64;
        self.generate_with::<PEXT>(&mut |b: MoveBatch| n += b.len() as u64);
        n
    }

    /// All legal moves.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.generate(&mut |b| b.for_each(|m| list.push(m)));
        list
    }

    /// True when `m` is a legal move here.
    pub fn is_legal(&self, m: Move) -> bool {
        self.legal_moves().contains(&m)
    }

    #[inline(always)]
    fn generate_king<const PEXT: bool>(&self, sink: &mut impl BatchSink, may_castle: bool) {
        let us = self.side;
        let them = us.other();
        let king = self.king_square(us);
        let ours = self.by_color[us.index()];
        let occ_without_king = self.occupied() ^ (1u64 << king);
        let targets = king_attacks(king) & !ours;
        let rank_base = us.back_rank() * 8;

        // Castlings whose squares are all empty: only these need attack tests.
        let mut open_castles = [(0u8, 0u64); 2];
        let mut open_count = 0;
        let mut crossed = 0;
        if may_castle {
            for rook in bb::squares(self.castling_rooks & (bb::RANK_1 << rank_base)) {
                let path = &CASTLING_PATHS[(king & 7) as usize][(rook & 7) as usize];
                if self.occupied() & (path.must_be_empty << rank_base) == 0 {
                    let crosses = path.king_crosses << rank_base;
                    open_castles[open_count] = (rook, crosses);
                    open_count += 1;
                    crossed |= crosses;
                }
            }
        }

        let mut to = 0;
        let mut special = 0;
        let to_test = targets | crossed;
        if bb::more_than_one(to_test & to_test.wrapping_sub(1)) {
            // Three squares or more to test (the lowest bit cleared, two more left): one map of
            // every attacked square is cheaper than testing them one by one.
            let danger = self.attacked_squares::<PEXT>(them, occ_without_king);
            to = targets & !danger;
            // The map sees our castling rook in place. Only an enemy rook or queen on our back
            // rank can attack a crossed square through it; then test that castling exactly.
            let ortho = self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()];
            let rank_sliders = self.by_color[them.index()] & ortho & (bb::RANK_1 << rank_base);
            for &(rook, crosses) in &open_castles[..open_count] {
                if crosses & danger == 0
                    && (rank_sliders == 0
                        || self.castling_path_is_safe::<PEXT>(king, rook, crosses))
                {
                    special |= 1u64 << rook;
                }
            }
        } else {
            for t in bb::squares(targets) {
                if self.attackers_to_with::<PEXT>(t, occ_without_king, them) == 0 {
                    to |= 1u64 << t;
                }
            }
            for &(rook, crosses) in &open_castles[..open_count] {
                if self.castling_path_is_safe::<PEXT>(king, rook, crosses) {
                    special |= 1u64 << rook;
                }
            }
        }
        to |= special;
        if to != 0 {
            sink.batch::<{ Role::King as u8 }>(MoveBatch {
                role: Role::King,
                from: king,
                pawn_step: 0,
                to,
                special,
            });
        }
    }

    /// True when no square the king crosses is attacked, judged with the castling rook lifted:
    /// an enemy rook on a1 attacks c1 through our castling rook on b1.
    #[inline(always)]
    fn castling_path_is_safe<const PEXT: bool>(
        &self,
        king: u8,
        rook: u8,
        crosses: Bitboard,
    ) -> bool {
        let occ = self.occupied() ^ (1u64 << king) ^ (1u64 << rook);
        for s in bb::squares(crosses) {
            if self.attackers_to_with::<PEXT>(s, occ, self.side.other()) != 0 {
                return false;
            }
        }
        true
    }

    /// Every square `by` attacks, sliders seeing through `occ`.
    #[inline(always)]
    fn attacked_squares<const PEXT: bool>(&self, by: Color, occ: Bitboard) -> Bitboard {
        let theirs = self.by_color[by.index()];
        let pawns = theirs & self.by_role[Role::Pawn.index()];
        let mut attacked = pawn_attack_span(pawns, by);
        for sq in bb::squares(theirs & self.by_role[Role::Knight.index()]) {
            attacked |= knight_attacks(sq);
        }
        attacked |= king_attacks(self.king_square(by));
        let queens = self.by_role[Role::Queen.index()];
        for sq in bb::squares(theirs & (self.by_role[Role::Bishop.index()] | queens)) {
            attacked |= bishop_attacks_with::<PEXT>(sq, occ);
        }
        for sq in bb::squares(theirs & (self.by_role[Role::Rook.index()] | queens)) {
            attacked |= rook_attacks_with::<PEXT>(sq, occ);
        }
        attacked
    }

    #[inline(always)]
    fn generate_for<const PEXT: bool, const IN_CHECK: bool>(&self, sink: &mut impl BatchSink) {
        let us = self.side;
        let ours = self.by_color[us.index()];
        let theirs = self.by_color[us.other().index()];
        let occ = ours | theirs;
        let king = self.king_square(us);
        let target = if IN_CHECK {
            let checker = self.checkers.trailing_zeros() as u8;
            (between(king, checker) | self.checkers) & !ours
        } else {
            !ours
        };
        let pinned = self.pinned();
        self.generate_king::<PEXT>(sink, !IN_CHECK);
        self.generate_officers::<PEXT>(sink, target, pinned, king, occ);
        self.generate_pawns::<PEXT>(sink, target, pinned, king);
    }

    /// Knight and slider moves.
    #[inline(always)]
    fn generate_officers<const PEXT: bool>(
        &self,
        sink: &mut impl BatchSink,
        target: Bitboard,
        pinned: Bitboard,
        king: u8,
        occ: Bitboard,
    ) {
        let ours = self.by_color[self.side.index()];
        for from in bb::squares(self.by_role[Role::Knight.index()] & ours & !pinned) {
            let to = knight_attacks(from) & target;
            if to != 0 {
                sink.batch::<{ Role::Knight as u8 }>(MoveBatch {
                    role: Role::Knight,
                    from,
                    pawn_step: 0,
                    to,
                    special: 0,
                });
            }
        }
        let diag = self.by_role[Role::Bishop.index()] | self.by_role[Role::Queen.index()];
        let ortho = self.by_role[Role::Rook.index()] | self.by_role[Role::Queen.index()];
        let queens = self.by_role[Role::Queen.index()];
        // Sliders: diagonal and orthogonal moves computed separately so that a queen's two
        // halves share the pin test, then emitted as one batch per piece.
        for from in bb::squares((diag | ortho) & ours) {
            let bit = 1u64 << from;
            let mut to =
                slider_attacks::<PEXT>(from, diag & bit != 0, ortho & bit != 0, occ) & target;
            if pinned & bit != 0 {
                to &= line(king, from);
            }
            if to != 0 {
                // The role as a constant for the sink (see `BatchSink`).
                macro_rules! emit {
                    ($role:expr) => {
                        sink.batch::<{ $role as u8 }>(MoveBatch {
                            role: $role,
                            from,
                            pawn_step: 0,
                            to,
                            special: 0,
                        })
                    };
                }
                if queens & bit != 0 {
                    emit!(Role::Queen)
                } else if diag & bit != 0 {
                    emit!(Role::Bishop)
                } else {
                    emit!(Role::Rook)
                }
            }
        }
    }

    /// Pawn moves: unpinned pawns in bulk with shifts (one batch per direction), pinned pawns
    /// one by one, en passant one capturer at a time with its full legality test.
    #[inline(always)]
    fn generate_pawns<const PEXT: bool>(
        &self,
        sink: &mut impl BatchSink,
        target: Bitboard,
        pinned: Bitboard,
        king: u8,
    ) {
        let us = self.side;
        let ours = self.by_color[us.index()];
        let pawns = self.by_role[Role::Pawn.index()] & ours;
        let board = PawnBoard {
            us,
            pawns,
            theirs: self.by_color[us.other().index()],
            occupied: self.occupied(),
            pinned,
            king,
        };
        board.generate(sink, target);
        let ep = self.ep_square;
        if ep != NO_SQUARE {
            for from in bb::squares(pawn_attacks(us.other().index(), ep) & pawns) {
                if self.ep_capture_is_legal::<PEXT>(from, ep) {
                    let bit = 1u64 << ep;
                    sink.batch::<{ Role::Pawn as u8 }>(MoveBatch {
                        role: Role::Pawn,
                        from,
                        pawn_step: 0,
                        to: bit,
                        special: bit,
                    });
                }
            }
        }
    }
}

/// What a side's pawn moves other than en passant depend on, as bitboards: so that a child's
/// pawn moves can be counted from its squares without making it
/// ([`child_counter`]'s fast path).
#[derive(Clone, Copy)]
pub(crate) struct PawnBoard {
    pub(crate) us: Color,
    /// The side's pawns.
    pub(crate) pawns: Bitboard,
    /// The other side's pieces.
    pub(crate) theirs: Bitboard,
    pub(crate) occupied: Bitboard,
    /// The side's pieces pinned to its king, and the king's square.
    pub(crate) pinned: Bitboard,
    pub(crate) king: u8,
}

impl PawnBoard {
    /// The pawn moves onto `target` (en passant aside): unpinned pawns in bulk with shifts
    /// (one batch per direction), pinned pawns one by one along their pin line.
    #[inline(always)]
    pub(crate) fn generate(&self, sink: &mut impl BatchSink, target: Bitboard) {
        self.generate_as::<0>(sink, target)
    }

    /// [`PawnBoard::generate`] with its colour known at compile time (`COLOR`: 1 for White, 2
    /// for Black; 0 when it is not known): then its shifts are constants (`shift` by a
    /// direction known only at run time branches on its sign).
    #[inline(always)]
    pub(crate) fn generate_as<const COLOR: u8>(&self, sink: &mut impl BatchSink, target: Bitboard) {
        let PawnBoard {
            us,
            pawns,
            theirs,
            occupied,
            pinned,
            king,
        } = *self;
        let us = match COLOR {
            1 => Color::White,
            2 => Color::Black,
            _ => us,
        };
        let empty = !occupied;
        let free = pawns & !pinned;
        // Shifts toward the opponent: `up` squares forward, and the two diagonal captures.
        let (up, third_rank, west, east) = match us {
            Color::White => (8i8, bb::RANK_1 << 16, 7i8, 9i8),
            Color::Black => (-8i8, bb::RANK_1 << 40, -9i8, -7i8),
        };
        let single = shift(free, up) & empty;
        let double = shift(single & third_rank, up) & empty;
        let west_captures = shift(free & !FILE_A, west) & theirs;
        let east_captures = shift(free & !FILE_H, east) & theirs;
        for (to, step) in [
            (single, up),
            (double, 2 * up),
            (west_captures, west),
            (east_captures, east),
        ] {
            let to = to & target;
            if to != 0 {
                sink.batch::<{ Role::Pawn as u8 }>(MoveBatch {
                    role: Role::Pawn,
                    from: 0,
                    pawn_step: step,
                    to,
                    special: 0,
                });
            }
        }
        for from in bb::squares(pawns & pinned) {
            let from_bit = 1u64 << from;
            let mut to = pawn_attacks(us.index(), from) & theirs;
            let one = shift(from_bit, up) & empty;
            to |= one | (shift(one & third_rank, up) & empty);
            to &= target & line(king, from);
            if to != 0 {
                sink.batch::<{ Role::Pawn as u8 }>(MoveBatch {
                    role: Role::Pawn,
                    from,
                    pawn_step: 0,
                    to,
                    special: 0,
                });
            }
        }
    }

    /// The number of those moves (a promotion counts as four) onto squares the side does not
    /// occupy.
    #[inline(always)]
    pub(crate) fn count(&self) -> u32 {
        let mut n = 0;
        self.generate(&mut |b: MoveBatch| n += b.len(), !0);
        n
    }
}

#[cfg(test)]
mod tests {
    use crate::{MoveKind, Position};

    fn castles(fen: &str) -> Vec<String> {
        let pos = Position::from_fen(fen).unwrap();
        pos.legal_moves()
            .iter()
            .filter(|m| m.kind() == MoveKind::Castle)
            .map(|m| m.to_string())
            .collect()
    }

    #[test]
    fn king_that_stays_put_must_not_be_exposed_by_the_departing_rook() {
        // Black king c8 castles long with the b8 rook: the king stays on c8, the rook goes to
        // d8, and the queen on a8 would then attack c8 along the rank.
        assert!(
            castles("Qrk2rqn/p1pp1ppp/4p3/1p6/6Pb/P7/1PPPPP1P/BRKBNR1N b FBfb - 0 4").is_empty()
        );
        // Without the queen the same castling is legal.
        assert_eq!(
            castles("1rk2rqn/p1pp1ppp/4p3/1p6/6Pb/P7/1PPPPP1P/BRKBNR1N b FBfb - 0 4"),
            ["c8b8"]
        );
    }

    #[test]
    fn castling_rook_lifted_when_judging_attacks() {
        // White king c1, castling rook b1, enemy rook a1: castling long would leave the king on
        // c1 attacked through the lifted rook.
        assert!(castles("4k3/8/8/8/8/8/8/rRK5 w B - 0 1").is_empty());
    }
}
