//! Counting the moves of every child of a leaf parent without generating each child's list
//! (perft's depth 2, where it spends most of its time): [`ChildMoveCounter`].

mod quiet;

use super::{CASTLING_PATHS, PawnBoard, pawn_attack_span, shift, slider_attacks};
use crate::attacks::{
    between, bishop_attacks_with, bishop_rays, king_attacks, knight_attacks, line, pawn_attacks,
    pinned_by, rook_attacks_with, rook_rays,
};
use std::mem::MaybeUninit;

use crate::position::{NO_SQUARE, Position};
use crate::types::{Bitboard, Color, Role, bb};

/// Counts the legal moves of each child of one position (perft at depth 2 without making a
/// list per child), reusing what the children share.
///
/// Perft spends most of its time here: at the leaves' parents, one count per child. The side
/// to move in the children did not move, so its knights' and sliders' moves are mostly those
/// it would have in the parent. They are computed once (with the parent's pins); a child then
/// recounts only the sliders whose lines cross a square whose occupancy the move changed, and
/// the pieces whose pin it changed, and adds one for each piece that now attacks the square of
/// a captured piece. Its pawn moves are reused too, unless the move touched a square they
/// depend on, changed a pawn's pin or left an en-passant capture. So are its king moves: a step
/// is judged again only when the move changed a square that decides it (each square next to
/// the king has its own watch), castling only when the move touched its squares. A normal move
/// is counted this way without making the child (its castlings judged on the child's squares
/// when it touched them); a child in check or one left with an en-passant capture is made, and
/// a made child whose pins differ, or that is in check, is counted from scratch. A normal move
/// that touches no watch at all is not even looked at: the leaves' parents count those by
/// popcount ([`ChildMoveCounter::quiet_targets`]).
///
/// `repr(C)` so that the fields zeroed when it is built are not all side by side: `seen_by`
/// first, `moves` after fields built from the parent. LLVM zeroes a run of up to sixteen
/// vector stores inline; in Rust's own field order the zeroed fields made one run of about
/// 700 bytes, cleared by a call to `memset` at every leaf parent (1.5 % of the instructions of
/// the start position's perft(6)).
#[repr(C)]
pub(crate) struct ChildMoveCounter {
    /// Per square: its knights and sliders that attack it in the parent, a pinned one along
    /// its pin line only (a pinned knight attacks nothing). A slider's moves change only
    /// when the occupancy of a square it attacks changes; a piece taken there is a capture
    /// more for each of them.
    seen_by: [Bitboard; 64],
    /// The pieces of the side to move in the children, in the parent.
    own: Bitboard,
    occupied: Bitboard,
    /// Its pieces pinned to its king in the parent.
    pinned: Bitboard,
    /// Per knight or slider square: its moves in the parent.
    moves: [u8; 64],
    /// The other side's diagonal and orthogonal sliders in the parent (the pinners).
    pinners: [Bitboard; 2],
    /// Moves of all its knights and sliders in the parent.
    total: u32,
    /// Its pawn moves in the parent (en passant aside: the parent's belongs to the other side).
    pawn_moves: u32,
    /// Squares whose occupancy or owner decides its pawn moves: the pawns' own squares, the
    /// squares one and two steps ahead and the squares they attack.
    pawn_squares: Bitboard,
    /// Its king's square (it cannot have moved in a child) and the lines through it.
    king: u8,
    king_lines: Bitboard,
    /// Squares that decide whether it may castle: its castling rooks and every square their
    /// castlings need empty.
    castle_watch: Bitboard,
    /// Whether some castling of it has all its squares empty in the parent.
    castle_open: bool,
    /// Its king moves (castling included) in the parent, and the squares whose occupancy or
    /// owner could change them: a child whose move changed none of these squares has the same
    /// king moves (see [`ChildMoveCounter::new_in`]).
    king_moves: u32,
    king_watch: Bitboard,
    /// Its king's step targets (castling aside) that are not attacked in the parent.
    king_steps: Bitboard,
    /// Per square next to its king, in square order: the squares whose change could decide
    /// whether the king may step there (the square alone when it holds one of its own pieces:
    /// it becomes a target only when that piece is captured there).
    step_watch: [Bitboard; 8],
    /// The squares whose change could change its castlings: the castling watch and the
    /// watches of the squares an open castling's king crosses.
    castle_moves_watch: Bitboard,
    /// The squares no watch above holds: neither its pieces, nor a square between its king
    /// and a slider of the other side that could pin or check along that line (or that
    /// slider's square), nor a square its sliders attack, its pawn moves or its king moves
    /// depend on. A normal move between two of them that gives no check, pins nothing and
    /// leaves no en-passant capture has the parent's counts (see
    /// [`ChildMoveCounter::quiet_targets`]).
    quiet: Bitboard,
    /// The squares from which a knight of the other side checks its king (a pawn checks from
    /// a square next to it, which `king_watch` holds).
    knight_checks: Bitboard,
    /// The squares beside its pawns: a double step of the other side's pawn that lands there
    /// may leave an en-passant capture.
    beside_pawns: Bitboard,
}

impl ChildMoveCounter {
    /// The counter for the children of `parent`, built in `slot`: returned by value, its 800
    /// bytes were built on the stack and then copied (a `memcpy` call per leaf parent, 2.7 %
    /// of the start position's perft(6)).
    #[inline(always)]
    pub(crate) fn new_in<'a, const PEXT: bool>(
        slot: &'a mut MaybeUninit<ChildMoveCounter>,
        parent: &Position,
    ) -> &'a ChildMoveCounter {
        let mover = parent.side.other();
        let own = parent.by_color[mover.index()];
        let occupied = parent.occupied();
        let king = parent.king_square(mover);
        let pinned = parent.pinned_of(mover);
        let knights = parent.by_role[Role::Knight.index()];
        let diag = parent.by_role[Role::Bishop.index()] | parent.by_role[Role::Queen.index()];
        let ortho = parent.by_role[Role::Rook.index()] | parent.by_role[Role::Queen.index()];
        let counter = slot.write(ChildMoveCounter {
            own,
            occupied,
            pinned,
            pinners: [diag & !own & occupied, ortho & !own & occupied],
            seen_by: [0; 64],
            moves: [0; 64],
            total: 0,
            pawn_moves: 0,
            pawn_squares: 0,
            king,
            king_lines: rook_rays(king) | bishop_rays(king),
            castle_watch: 0,
            castle_open: false,
            king_moves: 0,
            king_watch: 0,
            king_steps: 0,
            step_watch: [0; 8],
            castle_moves_watch: 0,
            quiet: 0,
            knight_checks: knight_attacks(king),
            beside_pawns: 0,
        });
        let rank_base = mover.back_rank() * 8;
        for rook in bb::squares(parent.castling_rooks & (bb::RANK_1 << rank_base)) {
            let path =
                CASTLING_PATHS[(king & 7) as usize][(rook & 7) as usize].must_be_empty << rank_base;
            counter.castle_watch |= path | (1u64 << rook);
            counter.castle_open |= occupied & path == 0;
        }
        // The parent seen with the children's side to move, not in check (it cannot be: the
        // parent's side to move would be able to capture its king) and without en passant.
        let mut view = *parent;
        view.side = mover;
        view.checkers = 0;
        view.ep_square = NO_SQUARE;
        counter.king_watch_and_moves::<PEXT>(&view, rank_base);
        // Its pawn moves, counted by the copy of the generator for its colour (constant
        // shifts: 1 % of the start position's perft(6) against the copy for either colour).
        let board = PawnBoard {
            us: mover,
            pawns: parent.by_role[Role::Pawn.index()] & own,
            theirs: occupied & !own,
            occupied,
            pinned,
            king,
        };
        let mut add = |b: super::MoveBatch| counter.pawn_moves += b.len();
        match mover {
            Color::White => board.generate_as::<1>(&mut add, !own),
            Color::Black => board.generate_as::<2>(&mut add, !own),
        }
        let pawns = parent.by_role[Role::Pawn.index()] & own;
        let (up, home) = match mover {
            Color::White => (8, bb::RANK_1 << 8),
            Color::Black => (-8, bb::RANK_1 << 48),
        };
        // A double step's square counts only when the square it crosses is empty: a move that
        // empties that square changes the pawn's single step anyway.
        let single = shift(pawns, up);
        counter.pawn_squares = pawns
            | single
            | shift(shift(pawns & home, up) & !occupied, up)
            | pawn_attack_span(pawns, mover);
        counter.beside_pawns = ((pawns & !super::FILE_A) >> 1) | ((pawns & !super::FILE_H) << 1);
        // The squares its sliders attack, but for each ray's far end: a move that changes one
        // of them changes a slider's moves (a knight's moves change only when one of its
        // pieces is captured).
        let mut slider_reach = 0;
        let mut record = |sq: u8, reach: Bitboard| {
            let moves = (reach & !own).count_ones();
            for s in bb::squares(reach) {
                counter.seen_by[s as usize] |= 1u64 << sq;
            }
            counter.moves[sq as usize] = moves as u8;
            counter.total += moves;
            moves
        };
        // Knights, then sliders, each in a loop of its own: one loop over both would branch on
        // the piece at every square, a branch callgrind's model mispredicts often.
        for sq in bb::squares(knights & own) {
            // A pinned knight never moves.
            let free = ((pinned >> sq) & 1).wrapping_sub(1);
            record(sq, knight_attacks(sq) & free);
        }
        for sq in bb::squares((diag | ortho) & own) {
            let bit = 1u64 << sq;
            let attacks = slider_attacks::<PEXT>(sq, diag & bit != 0, ortho & bit != 0, occupied);
            let reach = if pinned & bit != 0 {
                attacks & line(king, sq)
            } else {
                attacks
            };
            if record(sq, reach) != 0 {
                let ends = quiet::far_ends(
                    sq,
                    [diag & bit != 0, ortho & bit != 0],
                    reach,
                    own,
                    occupied,
                );
                slider_reach |= reach & !ends;
            }
        }
        // Pins and slider checks change only through a square between its king and a slider
        // of the other side that moves along that line, or that slider's own square (or a
        // slider arriving on the king's lines: `quiet_targets` leaves those out by role). With
        // three pieces or more between them, one piece more or less neither pins nor checks.
        let snipers =
            (bishop_rays(king) & counter.pinners[0]) | (rook_rays(king) & counter.pinners[1]);
        let mut pin_zone = 0;
        for s in bb::squares(snipers) {
            let between = between(king, s);
            let blockers = between & occupied;
            let past_two = blockers & blockers.wrapping_sub(1);
            if past_two & past_two.wrapping_sub(1) == 0 {
                pin_zone |= between | (1u64 << s);
            }
        }
        // `castle_moves_watch` is part of `king_watch`.
        counter.quiet =
            !(own | pin_zone | counter.pawn_squares | counter.king_watch | slider_reach);
        counter
    }

    /// Counts the king moves of `view` (the parent with the children's side to move) and the
    /// squares that decide them in a child. Each step is judged with the slider lookups that
    /// give its watch (no map of every attacked square), each open castling with the exact
    /// path test.
    ///
    /// A king move or castling is judged by the attacks on a set X of squares (the king's
    /// empty or enemy neighbours, the squares an open castling's king crosses), by which of
    /// its neighbours hold its own pieces, and by the castlings' squares and rooks. An attack
    /// on x in X changes only through a square whose occupancy changes on a line from x
    /// (the first such square is seen from x in the parent), a knight, king or pawn arriving
    /// on or leaving a square from which it attacks x, or a piece arriving on x. So a child
    /// whose changed squares avoid X, the squares seen from X (through the king and the
    /// castling rooks, which the attack tests lift), the leaper squares of X, the king's
    /// neighbours and the castlings' squares has the parent's king moves. The other side's
    /// castling is the one move that changes a piece's role on a square without changing its
    /// occupancy (king and rook may swap), so the caller tests the squares its sliders left or
    /// reached too: with the occupancy changes they cover both pieces' squares.
    #[inline(always)]
    fn king_watch_and_moves<const PEXT: bool>(&mut self, view: &Position, rank_base: u8) {
        let king = self.king;
        let us = view.side;
        let theirs = view.by_color[us.other().index()];
        let role = |r: Role| view.by_role[r.index()] & theirs;
        let (pawns, knights, kings) = (role(Role::Pawn), role(Role::Knight), role(Role::King));
        let diag = role(Role::Bishop) | role(Role::Queen);
        let ortho = role(Role::Rook) | role(Role::Queen);
        let castling_rooks = view.castling_rooks & (bb::RANK_1 << rank_base);
        let without_king = self.occupied ^ (1u64 << king);
        let see_through = without_king ^ (castling_rooks & self.own);
        let occupancies = [see_through, without_king];
        let attackers = [pawns, knights, kings, diag, ortho];
        let neighbours = king_attacks(king);
        let mut watch = neighbours | self.castle_watch;
        let mut steps = 0;
        for (i, x) in bb::squares(neighbours).enumerate() {
            let bit = 1u64 << x;
            let w = if self.own & bit != 0 {
                bit
            } else {
                let (w, attacked) = judge_square::<PEXT>(x, us, occupancies, attackers);
                if !attacked {
                    steps |= bit;
                }
                w
            };
            self.step_watch[i] = w;
            watch |= w;
        }
        let mut castle_moves_watch = self.castle_watch;
        let mut castles = 0;
        for rook in bb::squares(castling_rooks) {
            let path = &CASTLING_PATHS[(king & 7) as usize][(rook & 7) as usize];
            if self.occupied & (path.must_be_empty << rank_base) == 0 {
                let crosses = path.king_crosses << rank_base;
                for x in bb::squares(crosses) {
                    castle_moves_watch |= judge_square::<PEXT>(x, us, occupancies, attackers).0;
                }
                castles += u32::from(view.castling_path_is_safe::<PEXT>(king, rook, crosses));
            }
        }
        self.king_steps = steps;
        self.king_moves = steps.count_ones() + castles;
        self.castle_moves_watch = castle_moves_watch;
        self.king_watch = watch | castle_moves_watch;
    }

    /// The king moves of the counted side in the child of a normal move of `role` over `key`
    /// (its two squares): the parent's step targets, with those whose watch the move touched
    /// judged again on the child's squares, and the parent's castlings unless the move touched
    /// their watch (then each is judged again on the child's squares). `squares` are the
    /// captured square, the counted side's pieces and the occupancy in the child.
    #[inline(always)]
    fn king_moves_after<const PEXT: bool>(
        &self,
        parent: &Position,
        role: Role,
        key: Bitboard,
        squares: [Bitboard; 3],
    ) -> u32 {
        let [_, ours, occ] = squares;
        let king = self.king;
        // The watches touched, as bits in the order of the king's neighbours (the unused
        // watches are empty), then spread onto those squares: a loop without branches.
        let mut touched = 0u64;
        for (i, w) in self.step_watch.iter().enumerate() {
            touched |= u64::from(w & key != 0) << i;
        }
        let again = deposit::<PEXT>(touched, king_attacks(king));
        // The mover's pieces in the child, by role (the counted side's piece it took, if
        // any, is no longer among them).
        let theirs = self.occupied & !self.own;
        let of = |r: Role| {
            let b = parent.by_role[r.index()] & theirs;
            if r == role { b ^ key } else { b }
        };
        let (pawns, knights, kings) = (of(Role::Pawn), of(Role::Knight), of(Role::King));
        let diag = of(Role::Bishop) | of(Role::Queen);
        let ortho = of(Role::Rook) | of(Role::Queen);
        let us = parent.side.other();
        let attacked = |x: u8, occ: Bitboard| {
            (pawn_attacks(us.index(), x) & pawns)
                | (knight_attacks(x) & knights)
                | (king_attacks(x) & kings)
                | (bishop_attacks_with::<PEXT>(x, occ) & diag)
                | (rook_attacks_with::<PEXT>(x, occ) & ortho)
                != 0
        };
        let without_king = occ ^ (1u64 << king);
        let mut n = (self.king_steps & !again).count_ones();
        for x in bb::squares(again & !ours) {
            n += u32::from(!attacked(x, without_king));
        }
        if key & self.castle_moves_watch == 0 {
            return n + self.king_moves - self.king_steps.count_ones();
        }
        // The move touched a castling's squares or the watch of a square its king crosses:
        // each castling judged again as the generator would on the child, its rook lifted (a
        // rook taken on its square takes the right with it).
        let rank_base = us.back_rank() * 8;
        for rook in bb::squares(parent.castling_rooks & (bb::RANK_1 << rank_base) & ours) {
            let path = &CASTLING_PATHS[(king & 7) as usize][(rook & 7) as usize];
            if occ & (path.must_be_empty << rank_base) == 0 {
                let lifted = without_king ^ (1u64 << rook);
                let crosses = path.king_crosses << rank_base;
                n += u32::from(bb::squares(crosses).all(|x| !attacked(x, lifted)));
            }
        }
        n
    }

    /// The number of legal moves in `child`, a child of the counter's position.
    #[inline(always)]
    pub(crate) fn count<const PEXT: bool>(&self, child: &Position) -> u64 {
        self.count_child::<PEXT, false>(child, 0, 0)
    }

    /// [`ChildMoveCounter::count`] for a child reached by a normal move (no castling, en
    /// passant or promotion) from `from` to `to`: the squares the move changed are known
    /// without comparing the positions.
    #[inline(always)]
    pub(crate) fn count_normal<const PEXT: bool>(&self, child: &Position, from: u8, to: u8) -> u64 {
        self.count_child::<PEXT, true>(child, from, to)
    }

    /// [`ChildMoveCounter::count_normal`] for the normal move `from`-`to` of a `role` of
    /// `parent`, making the child only when its count needs it: when the move gives check
    /// (judged from the child's sliders when it touched the king's lines) or leaves an
    /// en-passant capture. Otherwise the count follows from the parent's figures and the
    /// move's two squares: the pieces whose pin it changed are recounted with the child's
    /// pins, the pawns from the child's bitboards when it touched a square they depend on, the
    /// king's steps and castlings whose watch it touched judged again on the child's squares.
    /// The make (a copy of the position and its updates, the largest share of a child's cost)
    /// is then skipped: for 98 % of the normal-move children at the leaves' parents of
    /// perft(8) of the classical start (66 % when the pawn, king and pin cases still made the
    /// child); castlings judged unmade took Kiwipete's made children from one in eight to one
    /// in fifty.
    #[inline(always)]
    pub(crate) fn count_normal_move<const PEXT: bool>(
        &self,
        parent: &Position,
        role: Role,
        from: u8,
        to: u8,
    ) -> u64 {
        let to_bit = 1u64 << to;
        let key = (1u64 << from) | to_bit;
        // The counted side's piece taken on `to`, if any.
        let captured = self.own & to_bit;
        let ours = self.own ^ captured;
        let occ = (self.occupied ^ (1u64 << from)) | to_bit;
        let changed = self.occupied ^ occ;
        let mover = parent.side;
        // A slider's check, direct or discovered, needs `from` or `to` on the king's lines
        // (the `king_lines` test below); a king move gives none.
        let gives_check = match role {
            Role::Pawn => pawn_attacks(mover.other().index(), self.king) & to_bit != 0,
            Role::Knight => knight_attacks(self.king) & to_bit != 0,
            _ => false,
        };
        let en_passant = parent.may_leave_en_passant(role, from, to);
        let diag = parent.by_role[Role::Bishop.index()] | parent.by_role[Role::Queen.index()];
        let ortho = parent.by_role[Role::Rook.index()] | parent.by_role[Role::Queen.index()];
        // The counted side's pins in the child: the parent's unless the move touched the
        // king's lines; `None` when a slider checks it there.
        let pinned = if key & self.king_lines == 0 {
            Some(self.pinned)
        } else {
            self.pins_unless_checked::<PEXT>(role, key, [captured, ours, occ], diag, ortho)
        };
        let Some(pinned) = pinned.filter(|_| !gives_check && !en_passant) else {
            let child = parent.play_normal_unhashed::<PEXT>(role, from, to);
            return self.count_normal::<PEXT>(&child, from, to);
        };
        // No check and the parent's castlings: the knights and sliders on the move's lines or
        // whose pin changed are recounted, the pawns when the move touched a square they
        // depend on or a pawn's pin changed, the king's steps whose watch it touched. The
        // counted side's pieces did not move, so the parent's roles are theirs (the counts
        // look at the counted side's pieces only).
        let repinned = (pinned ^ self.pinned) & ours;
        let pawns = parent.by_role[Role::Pawn.index()] & ours;
        let pawn_moves = if (changed | captured) & self.pawn_squares == 0 && repinned & pawns == 0 {
            self.pawn_moves
        } else {
            PawnBoard {
                us: mover.other(),
                pawns,
                theirs: occ & !ours,
                occupied: occ,
                pinned,
                king: self.king,
            }
            .count()
        };
        let king_moves = if key & self.king_watch == 0 {
            self.king_moves
        } else {
            self.king_moves_after::<PEXT>(parent, role, key, [captured, ours, occ])
        };
        let knights = parent.by_role[Role::Knight.index()];
        let n = self.piece_moves::<PEXT, true>(
            from,
            to,
            [changed, captured, ours, occ],
            [knights, diag, ortho],
            [pinned, repinned],
        );
        u64::from(n + king_moves + pawn_moves)
    }

    /// The counted side's pinned pieces in the child of a normal move of `role` over `key`
    /// (its two squares), or `None` when a slider checks its king there, judged from the
    /// child's sliders without making it. `squares` are the captured square, the counted
    /// side's pieces and the occupancy in the child; `diag` and `ortho` the parent's sliders.
    /// For a move that touched the king's lines (a slider may check, pin or unpin there).
    #[inline(always)]
    fn pins_unless_checked<const PEXT: bool>(
        &self,
        role: Role,
        key: Bitboard,
        squares: [Bitboard; 3],
        diag: Bitboard,
        ortho: Bitboard,
    ) -> Option<Bitboard> {
        let [captured, ours, occ] = squares;
        let king = self.king;
        // The mover's pieces, and the sliders, in the child: the piece taken leaves, the
        // mover's slider goes from one square of `key` to the other.
        let theirs = (self.occupied & !self.own) ^ key;
        let (mut diag, mut ortho) = (diag & !captured, ortho & !captured);
        if matches!(role, Role::Bishop | Role::Queen) {
            diag ^= key;
        }
        if matches!(role, Role::Rook | Role::Queen) {
            ortho ^= key;
        }
        let (diag, ortho) = (diag & theirs, ortho & theirs);
        let checkers = (bishop_attacks_with::<PEXT>(king, occ) & diag)
            | (rook_attacks_with::<PEXT>(king, occ) & ortho);
        if checkers != 0 {
            return None;
        }
        let snipers = (bishop_rays(king) & diag) | (rook_rays(king) & ortho);
        Some(pinned_by(king, snipers, ours, occ))
    }

    /// The knight and slider moves of the counted side in a child, from the parent's: the
    /// sliders on a changed square's lines are recounted, a captured piece's moves dropped and
    /// each piece that attacked its square gains that capture. `squares` are the child's
    /// changed squares, captured square, the counted side's pieces and the occupancy;
    /// `pieces` the child's knights, diagonal and orthogonal sliders (of either side); `pins`
    /// the counted side's pinned pieces in the child and those whose pin the move changed
    /// (recounted whole).
    #[inline(always)]
    fn piece_moves<const PEXT: bool, const NORMAL: bool>(
        &self,
        from: u8,
        to: u8,
        squares: [Bitboard; 4],
        pieces: [Bitboard; 3],
        pins: [Bitboard; 2],
    ) -> u32 {
        let [changed, captured, ours, occ] = squares;
        let [knights, diag, ortho] = pieces;
        let [pinned, repinned] = pins;
        let king = self.king;
        let mut n = self.total;
        // The knights whose pin changed: a pinned knight never moves.
        for sq in bb::squares(repinned & knights) {
            n -= u32::from(self.moves[sq as usize]);
            if pinned & (1u64 << sq) == 0 {
                n += (knight_attacks(sq) & !ours).count_ones();
            }
        }
        // The sliders that attacked a square whose occupancy changed, and those whose pin
        // changed, are recounted.
        let mut affected = 0;
        if NORMAL {
            // The origin, and the target unless the move captured there: no loop.
            let to_changed = 0u64.wrapping_sub((changed >> to) & 1);
            affected = self.seen_by[from as usize] | (self.seen_by[to as usize] & to_changed);
        } else {
            for c in bb::squares(changed) {
                affected |= self.seen_by[c as usize];
            }
        }
        affected = (affected | repinned) & (diag | ortho) & ours;
        for sq in bb::squares(affected) {
            let bit = 1u64 << sq;
            let mut reach = slider_attacks::<PEXT>(sq, diag & bit != 0, ortho & bit != 0, occ);
            if pinned & bit != 0 {
                reach &= line(king, sq);
            }
            n = n - u32::from(self.moves[sq as usize]) + (reach & !ours).count_ones();
        }
        if captured != 0 {
            // The piece taken loses its moves; each piece not recounted that attacked its square
            // gains that capture.
            let sq = captured.trailing_zeros() as usize;
            n -= u32::from(self.moves[sq]);
            n += (self.seen_by[sq] & ours & !affected & !repinned).count_ones();
        }
        n
    }

    /// The count of `child`; with `NORMAL`, the child of the normal move `from`-`to`.
    #[inline(always)]
    fn count_child<const PEXT: bool, const NORMAL: bool>(
        &self,
        child: &Position,
        from: u8,
        to: u8,
    ) -> u64 {
        if child.checkers != 0 {
            return child.count_moves_with::<PEXT>();
        }
        let us = child.side;
        let ours = child.by_color[us.index()];
        let occ = child.occupied();
        let king = self.king;
        let changed = self.occupied ^ occ;
        // The square of the piece just captured, if any: a target for the rest from now on.
        let captured = self.own ^ ours;
        let diag = child.by_role[Role::Bishop.index()] | child.by_role[Role::Queen.index()];
        let ortho = child.by_role[Role::Rook.index()] | child.by_role[Role::Queen.index()];
        // Pins change only when something changed on the king's lines: an occupancy, the
        // owner of a square (a capture), or a pinner (castling can put a rook where the king
        // stood, changing no occupancy).
        // A normal move changes occupancy, owner or slider on its two squares only.
        let key = if NORMAL {
            (1u64 << from) | (1u64 << to)
        } else {
            let theirs = child.by_color[us.other().index()];
            let pinners_moved =
                (self.pinners[0] ^ (diag & theirs)) | (self.pinners[1] ^ (ortho & theirs));
            changed | captured | pinners_moved
        };
        let pinned = if key & self.king_lines == 0 {
            self.pinned
        } else {
            let pinned = child.pinned();
            if pinned != self.pinned {
                return child.count_moves_with::<PEXT>();
            }
            pinned
        };
        let knights = child.by_role[Role::Knight.index()];
        let n = self.piece_moves::<PEXT, NORMAL>(
            from,
            to,
            [changed, captured, ours, occ],
            [knights, diag, ortho],
            [pinned, 0],
        );
        let mut rest = 0u32;
        // Castling needs attack tests only when some castling has its squares empty: as in the
        // parent unless the move changed one of them (or took a castling rook).
        // `key` holds the squares whose occupancy, owner or slider changed: the last for the
        // other side's castling, which can swap its king and rook without changing an
        // occupancy.
        if key & self.king_watch == 0 {
            rest += self.king_moves;
        } else {
            let may_castle = self.castle_open || (changed | captured) & self.castle_watch != 0;
            child.generate_king::<PEXT>(&mut |b: super::MoveBatch| rest += b.len(), may_castle);
        }
        if (changed | captured) & self.pawn_squares != 0 || child.ep_square != NO_SQUARE {
            child.generate_pawns::<PEXT>(
                &mut |b: super::MoveBatch| rest += b.len(),
                !ours,
                pinned,
                king,
            );
        } else {
            rest += self.pawn_moves;
        }
        u64::from(n + rest)
    }
}

/// The low bits of `bits` placed, in order, on the squares of `mask` (BMI2's PDEP).
#[inline(always)]
fn deposit<const PEXT: bool>(bits: u64, mask: Bitboard) -> Bitboard {
    #[cfg(target_arch = "x86_64")]
    if PEXT {
        // SAFETY: `PEXT` is true only in code compiled for, and run on, CPUs with BMI2 (see
        // `attacks::slider_index`).
        return unsafe { std::arch::x86_64::_pdep_u64(bits, mask) };
    }
    let mut out = 0;
    for (i, sq) in bb::squares(mask).enumerate() {
        out |= ((bits >> i) & 1) << sq;
    }
    out
}

/// A square `x` next to the king of `us`, or one its castling crosses: its watch (the squares
/// whose change could change whether it is attacked), and whether the other side attacks it
/// with the king lifted (`occupancies`: the occupancy seen through the king and the castling
/// rooks, and the one without the king alone; `theirs`: the other side's pawns, knights, king,
/// diagonal and orthogonal sliders). One pair of slider lookups serves both unless a castling
/// rook stands in the way.
///
/// A function, not a closure of `king_watch_and_moves`: a closure takes the CPU
/// features of the function it is written in, which has none, so there the BMI2 slider
/// lookups were calls and the closure itself one more (a call of about a hundred
/// instructions per square).
#[inline(always)]
fn judge_square<const PEXT: bool>(
    x: u8,
    us: Color,
    occupancies: [Bitboard; 2],
    theirs: [Bitboard; 5],
) -> (Bitboard, bool) {
    let [see_through, without_king] = occupancies;
    let [pawns, knights, kings, diag, ortho] = theirs;
    let leapers = knight_attacks(x) | king_attacks(x) | pawn_attacks(us.index(), x);
    let (b, r) = (
        bishop_attacks_with::<PEXT>(x, see_through),
        rook_attacks_with::<PEXT>(x, see_through),
    );
    let watch = (1u64 << x) | b | r | leapers;
    let (b, r) = if see_through == without_king {
        (b, r)
    } else {
        (
            bishop_attacks_with::<PEXT>(x, without_king),
            rook_attacks_with::<PEXT>(x, without_king),
        )
    };
    let attacked = (b & diag)
        | (r & ortho)
        | (knight_attacks(x) & knights)
        | (king_attacks(x) & kings)
        | (pawn_attacks(us.index(), x) & pawns);
    (watch, attacked != 0)
}
