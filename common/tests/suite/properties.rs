//! Properties: numbering is a bijection, FEN round-trips, notations agree, hashes are exact.

use crate::common;

use c960_common::startpos::COUNT;
use c960_common::{CastlingNotation, Position, StartPosition, StartPositionError};
use proptest::prelude::*;

#[test]
fn numbering_is_a_bijection_over_all_960() {
    let mut seen = std::collections::HashSet::new();
    for sp in StartPosition::all() {
        let arr = sp.arrangement();
        assert!(seen.insert(arr), "arrangement of {sp} repeats");
        assert_eq!(StartPosition::from_arrangement(&arr).unwrap(), sp);
        assert_eq!(StartPosition::from_position(&sp.position()).unwrap(), sp);
    }
    assert_eq!(seen.len(), COUNT as usize);
}

#[test]
fn known_numbers() {
    let name = |n| StartPosition::new(n).unwrap().arrangement_string();
    assert_eq!(name(518), "RNBQKBNR");
    assert_eq!(name(0), "BBQNNRKR");
    assert_eq!(name(959), "RKRNNQBB");
    // Worked example: A=3, B=2, C=4, knights at (1,3) -> 3 + 8 + 64 + 96*5 = 555.
    let arr = StartPosition::new(555).unwrap().arrangement();
    assert_eq!(StartPosition::from_arrangement(&arr).unwrap().number(), 555);
    assert!(StartPosition::new(960).is_err());
}

#[test]
fn broken_arrangements_name_the_rule() {
    let check =
        |s: &str| StartPosition::from_arrangement(&StartPosition::parse_arrangement(s).unwrap());
    assert_eq!(
        check("RNBQKNBR"),
        Err(StartPositionError::BishopsSameColour)
    );
    assert_eq!(
        check("KRNBBQNR"),
        Err(StartPositionError::KingNotBetweenRooks)
    );
    assert_eq!(check("RNBQKBNN"), Err(StartPositionError::WrongPieces));
    assert!(StartPosition::parse_arrangement("RNBQKBN").is_err());
    assert!(StartPosition::parse_arrangement("RNBQKBNP").is_err());
}

#[test]
fn bad_fens_name_the_field() {
    let err = |fen: &str| Position::from_fen(fen).unwrap_err().to_string();
    assert!(err("").contains("placement"));
    assert!(err("8/8/8/8/8/8/8 w - - 0 1").contains("placement"));
    assert!(err("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1").contains("placement"));
    assert!(
        err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1").contains("side to move")
    );
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkx - 0 1").contains("castling"));
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w C - 0 1").contains("castling"));
    assert!(
        err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq z9 0 1").contains("en passant")
    );
    assert!(
        err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e6 0 1").contains("en-passant")
    );
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1").contains("halfmove"));
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0").contains("fullmove"));
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQQBNR w KQkq - 0 1").contains("king"));
    assert!(err("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNP w - - 0 1").contains("pawn"));
    assert!(err("4k2R/8/8/8/8/8/8/4K3 w - - 0 1").contains("not to move is in check"));
    assert!(err("4k3/8/8/8/8/8/4K3/7R w K - 0 1").contains("castling"));
}

#[test]
fn en_passant_square_kept_only_when_capturable() {
    let kept = Position::from_fen("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2").unwrap();
    assert_eq!(kept.ep_square().map(|s| s.to_string()), Some("d6".into()));
    let dropped = Position::from_fen("4k3/8/8/3p4/8/8/8/4K3 w - d6 0 2").unwrap();
    assert_eq!(dropped.ep_square(), None);
    // Horizontal pin: capturing would expose the king on the fifth rank.
    let pinned = Position::from_fen("8/8/8/KPp4r/8/8/8/7k w - c6 0 2").unwrap();
    assert_eq!(pinned.ep_square(), None);
}

#[test]
fn random_play_hashes_and_fens_are_exact() {
    for pos in common::random_play_positions(7, 3_000, 80) {
        assert_eq!(pos.hash128(), pos.hash_with(&c960_common::zobrist::KEYS));
        assert_eq!(
            pos.with_zobrist_seed(99).hash128(),
            pos.hash_with(c960_common::zobrist::keys_for_seed(99))
        );
        let shredder = pos.to_fen(CastlingNotation::Shredder);
        let xfen = pos.to_fen(CastlingNotation::XFen);
        assert_eq!(Position::from_fen(&shredder).unwrap(), pos, "{shredder}");
        assert_eq!(Position::from_fen(&xfen).unwrap(), pos, "{xfen}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fen_write_parse_is_identity(seed in any::<u64>(), plies in 1usize..120) {
        let positions = common::random_play_positions(seed, plies, plies);
        let pos = positions.last().unwrap();
        for notation in [CastlingNotation::Shredder, CastlingNotation::XFen] {
            let fen = pos.to_fen(notation);
            let back = Position::from_fen(&fen).unwrap();
            prop_assert_eq!(&back, pos);
            prop_assert_eq!(back.to_fen(notation), fen);
        }
    }

    #[test]
    fn shredder_and_xfen_agree(n in 0u32..960) {
        let pos = StartPosition::new(n).unwrap().position();
        let a = Position::from_fen(&pos.to_fen(CastlingNotation::Shredder)).unwrap();
        let b = Position::from_fen(&pos.to_fen(CastlingNotation::XFen)).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn uci_moves_round_trip(seed in any::<u64>()) {
        let positions = common::random_play_positions(seed, 20, 40);
        for pos in positions {
            for &m in pos.legal_moves().iter() {
                prop_assert_eq!(pos.parse_uci_move(&m.to_string()).unwrap(), m);
            }
        }
    }
}
