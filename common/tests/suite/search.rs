//! The built-in searcher: mates and tactics found, reproducible fixed-depth results, a
//! colour-symmetric evaluation, and draws recognised.

use c960_common::search::{Analysis, ENGINE_ID, Score, SearchLimits, analyse, eval::evaluate};
use c960_common::{Color, Piece, Position, Setup, StartPosition};

/// A small table keeps the tests light; the result does not depend on it for these positions.
fn search(fen: &str, depth: u32) -> (Position, Analysis) {
    let pos = Position::from_fen(fen).unwrap();
    let analysis = analyse(&pos, &SearchLimits { depth, hash_mib: 4 });
    (pos, analysis)
}

/// The colour mirror: board flipped top to bottom, colours swapped, the other side to move.
fn mirror(pos: &Position) -> Position {
    let s = pos.to_setup();
    let mut board = [None; 64];
    for (i, piece) in s.board.iter().enumerate() {
        board[i ^ 56] = piece.map(|p| Piece {
            color: p.color.other(),
            role: p.role,
        });
    }
    let flip_bits = |b: u64| b.swap_bytes();
    let mirrored = Setup {
        board,
        side_to_move: s.side_to_move.other(),
        castling_rooks: flip_bits(s.castling_rooks),
        ep_square: s
            .ep_square
            .map(|sq| c960_common::Square::new(sq.index() ^ 56)),
        halfmove_clock: s.halfmove_clock,
        fullmove_number: s.fullmove_number,
    };
    Position::from_setup(&mirrored).unwrap()
}

#[test]
fn engine_id_names_the_builtin_engine() {
    assert!(ENGINE_ID.starts_with("c960-builtin "));
}

#[test]
fn finds_mate_in_one_for_white() {
    let (_, a) = search("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 3);
    assert_eq!(a.best_move.unwrap().to_string(), "a1a8");
    assert_eq!(a.score, Score::Mate(1));
}

#[test]
fn finds_mate_in_one_for_black_and_reports_it_from_whites_view() {
    let (_, a) = search("r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1", 3);
    assert_eq!(a.best_move.unwrap().to_string(), "a8a1");
    assert_eq!(a.score, Score::Mate(-1));
}

#[test]
fn finds_mate_in_two() {
    // The rook ladder: 1. Rb7 confines the king to the eighth rank, 2. Ra8#.
    let (_, a) = search("6k1/8/8/8/8/8/1R6/R5K1 w - - 0 1", 5);
    assert_eq!(a.score, Score::Mate(2));
    assert_eq!(a.pv.len(), 3, "mate in two is three plies: {:?}", a.pv);
}

#[test]
fn wins_a_hanging_queen() {
    let (_, a) = search("3k4/8/8/3q4/8/8/8/3RK3 w - - 0 1", 4);
    assert_eq!(a.best_move.unwrap().to_string(), "d1d5");
    assert!(
        matches!(a.score, Score::Cp(cp) if cp > 300),
        "{:?}",
        a.score
    );
}

#[test]
fn finds_a_knight_fork() {
    // Nc7+ forks king and rook; pawns stay on so the won ending is not a bare-minor draw.
    let (_, a) = search("r3k3/7p/8/1N6/8/8/4P3/4K3 w - - 0 1", 5);
    assert_eq!(a.best_move.unwrap().to_string(), "b5c7");
    assert!(
        matches!(a.score, Score::Cp(cp) if cp > 150),
        "{:?}",
        a.score
    );
}

#[test]
fn fixed_depth_results_are_identical_across_runs() {
    for sp in [518, 0, 959] {
        let pos = StartPosition::new(sp).unwrap().position();
        let limits = SearchLimits {
            depth: 6,
            hash_mib: 8,
        };
        let first = analyse(&pos, &limits);
        let second = analyse(&pos, &limits);
        assert_eq!(first, second, "sp {sp}");
        assert_eq!(first.depth, 6);
        assert!(first.nodes > 0);
        assert_eq!(first.pv.first(), first.best_move.as_ref());
        // The PV is a legal line.
        let mut p = pos;
        for &m in &first.pv {
            assert!(p.is_legal(m), "sp {sp}: {m} illegal in PV {:?}", first.pv);
            p = p.play(m);
        }
    }
}

#[test]
fn evaluation_is_colour_symmetric() {
    let fens = [
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
        "3k4/8/8/3q4/8/8/8/3RK3 w - - 0 1",
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
    ];
    for fen in fens {
        let pos = Position::from_fen(fen).unwrap();
        let m = mirror(&pos);
        assert_eq!(evaluate(&pos), evaluate(&m), "{fen} vs {m:?}");
        // Same for every position after one move, to cover more material and phases.
        for &mv in pos.legal_moves().iter() {
            let child = pos.play(mv);
            assert_eq!(
                evaluate(&child),
                evaluate(&mirror(&child)),
                "{fen} after {mv}"
            );
        }
    }
    // Every start position is its own colour mirror, so only the tempo bonus remains.
    let tempo = evaluate(&StartPosition::new(518).unwrap().position());
    for sp in StartPosition::all() {
        assert_eq!(evaluate(&sp.position()), tempo, "sp {sp}");
    }
}

#[test]
fn material_advantage_reads_from_whites_view() {
    // Black to move and a queen down: the White's-view score is large and positive.
    let (pos, a) = search("3k4/8/8/8/8/8/8/3QK3 b - - 0 1", 3);
    assert_eq!(pos.side_to_move(), Color::Black);
    assert!(
        matches!(a.score, Score::Cp(cp) if cp > 700) || matches!(a.score, Score::Mate(n) if n > 0),
        "{:?}",
        a.score
    );
}

#[test]
fn checkmated_and_stalemated_roots_have_no_move() {
    let (_, mated) = search("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1", 3);
    assert_eq!(mated.best_move, None);
    assert_eq!(mated.score, Score::Mate(0));
    assert!(mated.pv.is_empty());
    let (_, stalemate) = search("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", 3);
    assert_eq!(stalemate.best_move, None);
    assert_eq!(stalemate.score, Score::Cp(0));
}

#[test]
fn insufficient_material_scores_zero() {
    let (_, a) = search("8/8/4k3/8/8/3NK3/8/8 w - - 0 1", 6);
    assert_eq!(a.score, Score::Cp(0));
    assert!(a.best_move.is_some());
}

#[test]
fn fifty_move_rule_scores_zero() {
    // A queen up, but the clock stands at 99: any move that is not a capture or pawn move ends
    // the game drawn, and there is nothing to capture.
    let (_, a) = search("4k3/8/8/8/8/8/8/3QK3 w - - 99 80", 4);
    assert_eq!(a.score, Score::Cp(0));
}

#[test]
fn perpetual_check_is_found_as_a_draw() {
    // Black threatens mate with two queens; White's only resource is Qe8+ / Qh5+ for ever.
    let (_, a) = search("6k1/6p1/8/7Q/8/8/1qq5/6K1 w - - 0 1", 7);
    assert_eq!(a.score, Score::Cp(0), "pv {:?}", a.pv);
    assert_eq!(a.best_move.unwrap().to_string(), "h5e8");
}

#[test]
fn golden_results_pin_the_engine_version() {
    // Replicas are compared exactly, so any change to search or evaluation that alters these
    // numbers must also change ENGINE_ID (and then these values).
    assert_eq!(
        ENGINE_ID,
        concat!("c960-builtin ", env!("CARGO_PKG_VERSION"), "-s2")
    );
    let cases = [
        (
            518,
            36,
            "d2d4",
            24_250,
            "d2d4 d7d5 g1f3 g8f6 c1f4 c8f5 b1c3",
        ),
        (0, 46, "d1e3", 56_439, "d1e3 e8f6 e1f3 c7c5 c2c3 d8e6 b1f5"),
    ];
    for (sp, cp, best, nodes, pv) in cases {
        let pos = StartPosition::new(sp).unwrap().position();
        let a = analyse(
            &pos,
            &SearchLimits {
                depth: 7,
                hash_mib: 16,
            },
        );
        let line: Vec<String> = a.pv.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            (
                a.score,
                a.best_move.unwrap().to_string(),
                a.nodes,
                line.join(" ")
            ),
            (Score::Cp(cp), best.to_string(), nodes, pv.to_string()),
            "sp {sp}"
        );
    }
}

/// A null move (search's null-move pruning) keeps a seeded position keyed by its own seed: the
/// passed position's key is the one its seed's key set gives from scratch. (Search once hashed
/// the passed position with the default keys: a wrong table key for a seeded position.)
#[test]
fn a_pass_keeps_the_positions_own_key_set() {
    let position = |fen: &str| Position::from_setup(&Setup::from_fen(fen).unwrap()).unwrap();
    let before = position("rk2r3/8/8/3pP3/8/8/8/RK2R3 w EAea d6 0 1");
    let after = position("rk2r3/8/8/3pP3/8/8/8/RK2R3 b EAea - 1 1");
    assert!(
        before.ep_square().is_some(),
        "the test needs an en-passant square"
    );
    for seed in [None, Some(0xC960), Some(7)] {
        let seeded = |p: Position| seed.map_or(p, |s| p.with_zobrist_seed(s));
        let passed = seeded(before).pass();
        assert_eq!(passed, after);
        assert_eq!(passed.hash128(), seeded(after).hash128(), "seed {seed:?}");
        assert_eq!(
            passed.hash128(),
            passed.hash_with(seeded(before).zobrist_keys())
        );
    }
}
