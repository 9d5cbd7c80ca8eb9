//! Differential test against cozy-chess: same legal move sets and the same perft to depth 3 on
//! 10,000 positions reached by random play (castling preferred when available).

use crate::common;

use c960_common::{CastlingNotation, Position, perft};

fn cozy_moves(board: &cozy_chess::Board) -> Vec<String> {
    let mut out = Vec::new();
    board.generate_moves(|moves| {
        out.extend(moves.into_iter().map(|m| m.to_string()));
        false
    });
    out.sort();
    out
}

fn our_moves(pos: &Position) -> Vec<String> {
    let mut out: Vec<String> = pos.legal_moves().iter().map(|m| m.to_string()).collect();
    out.sort();
    out
}

#[test]
fn random_play_agrees_with_cozy_chess() {
    let positions = common::random_play_positions(0xC960, 10_000, 60);
    assert_eq!(positions.len(), 10_000);
    let mut castling_seen = 0;
    let mut with_rights = 0;
    for pos in &positions {
        let fen = pos.to_fen(CastlingNotation::Shredder);
        let board = cozy_chess::Board::from_fen(&fen, true)
            .unwrap_or_else(|e| panic!("cozy refused {fen}: {e:?}"));
        let ours = our_moves(pos);
        assert_eq!(ours, cozy_moves(&board), "move sets differ in {fen}");
        with_rights += usize::from(pos.castling_rooks() != 0);
        castling_seen += pos
            .legal_moves()
            .iter()
            .filter(|m| m.kind() == c960_common::MoveKind::Castle)
            .count();
        assert_eq!(
            perft(pos, 3),
            common::cozy::cozy_perft(&board, 3),
            "perft(3) differs in {fen}"
        );
    }
    // The sample must actually exercise castling, or the test proves little about it.
    eprintln!("{with_rights} positions with castling rights, {castling_seen} legal castling moves");
    assert!(
        with_rights > 3_000,
        "only {with_rights} positions with castling rights"
    );
    assert!(
        castling_seen > 250,
        "only {castling_seen} castling moves in the sample"
    );
}

#[test]
fn leaf_parent_counting_agrees_with_counting_each_child() {
    // Perft at depth 2 counts the children's moves with a counter that reuses the parent's
    // knight and slider moves (`ChildMoveCounter`); here every child is counted from its own
    // move list instead, over positions full of pins, checks, captures and castling.
    let positions = common::random_play_positions(0x005E_ED0F_C0DE, 20_000, 80);
    for pos in &positions {
        assert_leaf_parent_count(pos);
    }
}

/// perft(2) counted by `ChildMoveCounter` against counting each child's own move list.
fn assert_leaf_parent_count(pos: &Position) {
    let naive: u64 = pos
        .legal_moves()
        .iter()
        .map(|&m| pos.play(m).legal_moves().len() as u64)
        .sum();
    assert_eq!(
        perft(pos, 2),
        naive,
        "{}",
        pos.to_fen(CastlingNotation::Shredder)
    );
}

/// [`assert_leaf_parent_count`] for the position `fen` and for each position one move later.
fn assert_leaf_parent_count_here_and_after_each_move(fen: &str) {
    let pos = Position::from_fen(fen).unwrap();
    assert_leaf_parent_count(&pos);
    for &m in pos.legal_moves().iter() {
        assert_leaf_parent_count(&pos.play(m));
    }
}

#[test]
fn castling_opened_or_lost_by_the_parent_move() {
    // The counter skips the children's castling tests when no castling of theirs had its
    // squares empty in the parent and the move changed none of those squares. Here both of
    // Black's castlings are blocked by white pieces, and the move opens one: every such child
    // must be looked at again.
    for fen in [
        // Knight b8 leaves the queenside path (a6 attacks neither c8 nor d8).
        "rN2kB1r/8/8/8/8/8/8/4K3 w kq - 0 1",
        // Chess960 king on b8 with rooks a8 and h8: knight c8 or bishop g8 leaves.
        "rkN3Br/8/8/8/8/8/8/4K3 w ha - 0 1",
        // King d8: bishop c8 or knight g8 leaves.
        "r1Bk2Nr/8/8/8/8/8/8/4K3 w ha - 0 1",
        // King f8 (Shredder notation): bishop c8 or knight g8 leaves; White castles too.
        "r1B2kNr/8/8/8/8/8/8/R3K3 w Aah - 0 1",
        // A white rook takes a castling rook (a right lost).
        "r3k1nr/8/8/8/8/8/8/R3K3 w Qkq - 0 1",
    ] {
        let pos = Position::from_fen(fen).unwrap();
        assert!(pos.castling_rooks() != 0, "{fen}");
        assert_leaf_parent_count(&pos);
    }
    // And random positions where the side to move has a piece on the other side's back rank.
    let positions = common::random_play_positions(0x00CA_571E, 40_000, 60);
    let mut checked = 0;
    for pos in &positions {
        let them = pos.side_to_move().other();
        let back_rank = if them == c960_common::Color::White {
            0xff
        } else {
            0xff << 56
        };
        if pos.castling_rooks() & pos.by_color(them) != 0
            && pos.by_color(pos.side_to_move()) & back_rank != 0
        {
            assert_leaf_parent_count(pos);
            checked += 1;
        }
    }
    assert!(
        checked > 100,
        "only {checked} positions with a piece on the castling rank"
    );
}

#[test]
fn fused_leaf_moves_leave_out_promotions_en_passant_and_castling() {
    // At the leaves' parents, batches of normal moves are made without a `Move` and with the
    // piece known at compile time (`MoveBatch::is_normal`). Promotions, en passant and
    // castling must take the general path; each position here has them at the leaf parents.
    for fen in [
        "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
        "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1",
        "8/8/8/2k5/2pP4/8/B7/4K3 b - d3 0 1",
        "4k3/8/8/8/2pPp3/8/8/4K3 b - d3 0 1",
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
        "1r2k1r1/8/8/8/8/8/8/1R2K1R1 b GBgb - 0 1",
    ] {
        assert_leaf_parent_count_here_and_after_each_move(fen);
    }
}

#[test]
fn king_moves_reused_only_when_the_move_cannot_change_them() {
    // The counter reuses the parent's king moves (castling included) for a child whose move
    // changed no square that decides them (`ChildMoveCounter::king_watch`). Each position here
    // has moves that change them in a way an occupancy test alone misses or nearly misses.
    for fen in [
        // White castles f1/g1: king and rook swap squares, no occupancy changes, and the rook
        // leaves the g-file (Black's king gains g8 and g7).
        "7k/8/8/8/8/8/8/5KR1 w G - 0 1",
        // The same on the other wing and for Black.
        "k7/8/8/8/8/8/8/1RK5 w B - 0 1",
        "5kr1/8/8/8/8/8/8/7K b g - 0 1",
        // A knight, a pawn or the king arrives next to or attacks a square Black's king or
        // castling needs.
        "r3k2r/8/8/8/8/4N3/8/4K3 w kq - 0 1",
        "r3k2r/8/8/3P4/8/8/8/4K3 w kq - 0 1",
        "4k3/8/4K3/8/8/8/8/8 w - - 0 1",
        // A slider uncovers or blocks a line to a square the king crosses.
        "rk5r/8/8/8/8/8/1B6/4K2Q w ha - 0 1",
        "r3k2r/8/8/8/8/8/8/R3K2R w AHah - 0 1",
        // Black's rook on a1 attacks c1 through White's castling rook on b1 (the castling
        // tests lift that rook) and then leaves the file: White may castle again (the rook
        // was pinned, so the pin test recounts these children too).
        "4k3/8/8/8/8/8/3PPP2/rR2KN2 b B - 0 1",
        // The reference position that found the swap (kings and rooks side by side).
        "b1qnrrkb/ppp1pp1p/n2p1Pp1/8/8/P7/1PPPP1PP/BNQNRKRB w GE - 0 9",
    ] {
        assert_leaf_parent_count_here_and_after_each_move(fen);
    }
    // Random play with few pieces left, so kings have squares to go to and lines are open.
    let positions = common::random_play_positions(0x0000_0C1D_0C05, 20_000, 140);
    let mut with_king_moves = 0;
    for pos in &positions {
        assert_leaf_parent_count(pos);
        with_king_moves += usize::from(pos.occupied().count_ones() < 20);
    }
    assert!(
        with_king_moves > 2_000,
        "only {with_king_moves} positions with fewer than 20 pieces"
    );
}

#[test]
fn children_counted_unmade_only_when_the_move_decides_nothing() {
    // A normal move's child at the leaves' parents is counted without being made
    // (`ChildMoveCounter::count_normal_move`) unless the move gives check, leaves an en-passant
    // capture, pins or unpins a piece, or touches a square deciding king or pawn moves. Each
    // position here has moves that only the first three tests catch: the counted side's king
    // is walled in by its own pieces (so no square near it is watched) and the moves avoid its
    // pawns' squares.
    for fen in [
        // Nc4-d6+ (and Nc4-b6 without check).
        "3qkb2/3nbn2/8/8/2N5/8/8/4K3 w - - 0 1",
        // The same for Black: Nf5-e3+.
        "4k3/8/8/5n2/8/8/3NBN2/3QKB2 b - - 0 1",
        // h2-h4 lets g4xh3 en passant.
        "kr6/pp6/8/8/6p1/8/7P/7K w - - 0 1",
        // The same for Black: a7-a5 lets b5xa6.
        "7k/p7/8/1P6/8/8/PP6/KR6 b - - 0 1",
        // Ra1-e1 pins the knight e7, Ra1-a8 the queen d8 (the child is still not made: its
        // pins are found from its sliders).
        "3qkb2/3nnb2/8/8/8/8/7K/R7 w - - 0 1",
        // Re1 leaves the e-file: the knight e7 is free again.
        "3qkb2/3nnb2/8/8/8/8/7K/4R3 w - - 0 1",
        // The same for Black: Rh8-d8 pins the knight d2; Rd8 leaving unpins it.
        "r7/7k/8/8/8/8/3NNB2/3QKB2 b - - 0 1",
        "3r4/7k/8/8/8/8/3NNB2/3QKB2 b - - 0 1",
    ] {
        assert_leaf_parent_count_here_and_after_each_move(fen);
    }
}
