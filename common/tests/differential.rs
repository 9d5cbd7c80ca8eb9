//! Differential test against cozy-chess: same legal move sets and the same perft to depth 3 on
//! 10,000 positions reached by random play (castling preferred when available).

mod common;

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
}
