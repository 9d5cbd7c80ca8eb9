//! The families of random-start chess: counts by enumeration, numbering bijections, FEN round
//! trips, mirror classes and every refusal.

use std::collections::BTreeSet;

use c960_common::family::{
    Castling, Family, FamilyError, bishops_opposite, canonical, is_canonical, king_between_rooks,
    mirror,
};
use c960_common::startpos::Arrangement;
use c960_common::{CastlingNotation, Position, Role, StartPosition};
use proptest::prelude::*;

/// Every arrangement of KQRRBBNN, found by brute force over all 5^8 letter strings (not by the
/// permutation generator the numbering uses).
fn all_arrangements() -> Vec<Arrangement> {
    const ROLES: [Role; 5] = [
        Role::King,
        Role::Queen,
        Role::Rook,
        Role::Bishop,
        Role::Knight,
    ];
    let mut out = Vec::new();
    for code in 0..5u32.pow(8) {
        let mut c = code;
        let arr: Arrangement = std::array::from_fn(|_| {
            let r = ROLES[(c % 5) as usize];
            c /= 5;
            r
        });
        let n = |role| arr.iter().filter(|&&r| r == role).count();
        if n(Role::King) == 1 && n(Role::Queen) == 1 && n(Role::Rook) == 2 && n(Role::Bishop) == 2 {
            out.push(arr);
        }
    }
    out
}

#[test]
fn the_eight_counts_by_enumeration() {
    let all = all_arrangements();
    let bishops: Vec<_> = all.iter().copied().filter(bishops_opposite).collect();
    let c960: Vec<_> = bishops.iter().copied().filter(king_between_rooks).collect();
    let classes = |set: &[Arrangement]| set.iter().map(canonical).collect::<BTreeSet<_>>().len();
    let counted = [
        (Family::Shuffle, all.len()),
        (Family::Bishops, bishops.len()),
        (Family::Chess960, c960.len()),
        (Family::ShuffleNc, classes(&all)),
        (Family::BishopsNc, classes(&bishops)),
        (Family::Chess960Nc, classes(&c960)),
        (Family::Transcendental, bishops.len() * bishops.len()),
        (Family::Dfrc, c960.len() * c960.len()),
    ];
    let expected = [5040, 2880, 960, 2520, 1440, 480, 8_294_400, 921_600];
    for ((family, n), want) in counted.into_iter().zip(expected) {
        assert_eq!(n, want, "{family} by enumeration");
        assert_eq!(family.count() as usize, n, "{family}.count()");
    }
    // The small families: the numbering hits exactly the enumerated sets.
    for (family, set) in [
        (Family::Shuffle, &all),
        (Family::Bishops, &bishops),
        (Family::Chess960, &c960),
    ] {
        let numbered: BTreeSet<Arrangement> = family.starts().map(|s| s.white).collect();
        assert_eq!(numbered, set.iter().copied().collect(), "{family}");
    }
}

#[test]
fn mirror_classes_pair_up_exactly() {
    for family in [Family::Shuffle, Family::Bishops, Family::Chess960] {
        let members: BTreeSet<Arrangement> = family.starts().map(|s| s.white).collect();
        let mut canonical_members = 0;
        for m in &members {
            let partner = mirror(m);
            // No arrangement is its own mirror: the lone king would need two files.
            assert_ne!(&partner, m, "{family}: {m:?} is its own mirror");
            assert_eq!(mirror(&partner), *m);
            assert!(
                members.contains(&partner),
                "{family}: the mirror stays in the family"
            );
            assert_ne!(
                is_canonical(m),
                is_canonical(&partner),
                "exactly one canonical"
            );
            canonical_members += usize::from(is_canonical(m));
        }
        assert_eq!(canonical_members * 2, members.len(), "{family}");
    }
    // Both members of a pair get the -nc family's one number; the canonical one is the start.
    for family in [Family::ShuffleNc, Family::BishopsNc, Family::Chess960Nc] {
        let parent = family.mirror_parent().unwrap();
        let mut hits = vec![0u32; family.count() as usize];
        for m in parent.starts() {
            let s = family.start_of(&m.white, &m.black).unwrap();
            hits[s.number as usize] += 1;
            assert!(is_canonical(&s.white));
            assert_eq!(s.white, canonical(&m.white));
            let other = family
                .start_of(&mirror(&m.white), &mirror(&m.black))
                .unwrap();
            assert_eq!(other.number, s.number);
        }
        assert!(
            hits.iter().all(|&h| h == 2),
            "{family}: every class has two members"
        );
    }
    // The classical start is canonical, and chess960-nc number 0 is canonical Chess960's first.
    let classical = StartPosition::new(518).unwrap().arrangement();
    assert!(is_canonical(&classical));
}

fn round_trip(family: Family, n: u64) {
    let s = family.start(n).unwrap();
    assert_eq!(u64::from(s.number), n);
    assert_eq!(family.start_of(&s.white, &s.black).unwrap(), s);
    assert_eq!(family.parse_start(&s.arrangement_string()).unwrap(), s);
    for notation in [CastlingNotation::Shredder, CastlingNotation::XFen] {
        let fen = s.position().to_fen(notation);
        let pos = Position::from_fen(&fen).unwrap();
        assert_eq!(pos, s.position(), "{fen}");
        assert_eq!(
            family.start_of_position(&pos, Castling::Default).unwrap(),
            s,
            "{fen}"
        );
    }
    assert_eq!(s.fen(), s.position().to_fen(CastlingNotation::Shredder));
}

#[test]
fn numbering_is_a_bijection_for_the_small_families() {
    for family in Family::ALL {
        if family.count() > 5040 {
            continue;
        }
        let mut seen = BTreeSet::new();
        for n in 0..u64::from(family.count()) {
            round_trip(family, n);
            let s = family.start(n).unwrap();
            assert!(seen.insert((s.white, s.black)), "{family} {n} repeats");
        }
        assert!(family.start(u64::from(family.count())).is_err());
    }
}

#[test]
fn chess960_keeps_scharnagl_numbers() {
    for sp in StartPosition::all() {
        let s = Family::Chess960.start(u64::from(sp.number())).unwrap();
        assert_eq!(s.white, sp.arrangement());
        assert_eq!(s.position(), sp.position());
    }
    let d = Family::Dfrc.start(518 * 960 + 518).unwrap();
    assert_eq!(d.position(), StartPosition::new(518).unwrap().position());
    // Lexicographic with B < K < N < Q < R; adjacent bishops stand on opposite colours.
    assert_eq!(
        Family::Shuffle.start(0).unwrap().arrangement_string(),
        "BBKNNQRR"
    );
    assert_eq!(
        Family::Shuffle.start(5039).unwrap().arrangement_string(),
        "RRQNNKBB"
    );
    assert_eq!(
        Family::Bishops.start(0).unwrap().arrangement_string(),
        "BBKNNQRR"
    );
}

#[test]
fn classical_start_in_every_family() {
    let classical = "RNBQKBNR";
    let mut numbers = Vec::new();
    for family in Family::ALL {
        let s = family.parse_start(classical).unwrap();
        assert_eq!(s.white, s.black);
        numbers.push((family.name(), s.number));
    }
    let t = Family::Transcendental.parse_start(classical).unwrap();
    let b = Family::Bishops.parse_start(classical).unwrap().number;
    assert_eq!(t.number, b * 2880 + b);
    assert_eq!(
        t.fen(),
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1"
    );
    assert_eq!(
        Family::Dfrc.parse_start(classical).unwrap().fen(),
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1"
    );
}

#[test]
fn castling_rules_and_the_chess960_option() {
    // Shuffle: no castling by default; the option gives Chess960 rights only where the king
    // stands between the rooks.
    let between = Family::Shuffle.parse_start("RNBQKBNR").unwrap();
    let outside = Family::Shuffle.parse_start("KRRQNNBB").unwrap();
    assert_eq!(between.position().castling_rooks(), 0);
    let opt = between.position_with(Castling::Chess960).unwrap();
    assert_eq!(opt.castling_rooks().count_ones(), 4);
    assert_eq!(
        Family::Shuffle
            .start_of_position(&opt, Castling::Chess960)
            .unwrap(),
        between
    );
    assert!(matches!(
        Family::Shuffle.start_of_position(&opt, Castling::Default),
        Err(FamilyError::NotAStart { .. })
    ));
    assert_eq!(
        outside
            .position_with(Castling::Chess960)
            .unwrap()
            .castling_rooks(),
        0
    );
    for f in [
        Family::Transcendental,
        Family::ShuffleNc,
        Family::Chess960Nc,
        Family::BishopsNc,
    ] {
        assert_eq!(
            f.start(0).unwrap().position_with(Castling::Chess960),
            Err(FamilyError::NoCastlingOption(f))
        );
    }
    // DFRC: different files for White's and Black's castling rooks, in both FEN notations.
    let d = Family::Dfrc
        .parse_start("BBQNNRKR/rkrbbqnn")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        d.fen(),
        "rkrbbqnn/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFca - 0 1"
    );
    let xfen = d.position().to_fen(CastlingNotation::XFen);
    assert_eq!(Position::from_fen(&xfen).unwrap(), d.position());
}

#[test]
fn every_refusal_names_its_rule() {
    let err = |f: Family, text: &str| f.parse_start(text).unwrap_err();
    assert_eq!(err(Family::Bishops, "BNNNRKRQ"), FamilyError::WrongPieces);
    assert_eq!(
        err(Family::Bishops, "BNBQKNRR"),
        FamilyError::BishopsSameColour(Family::Bishops)
    );
    assert_eq!(
        err(Family::Transcendental, "RNBQKBNR/bnbqknrr"),
        FamilyError::BishopsSameColour(Family::Transcendental)
    );
    assert_eq!(
        err(Family::Chess960, "KRBQRBNN"),
        FamilyError::KingNotBetweenRooks(Family::Chess960)
    );
    assert_eq!(
        err(Family::Chess960Nc, "KRBQRBNN"),
        FamilyError::KingNotBetweenRooks(Family::Chess960Nc)
    );
    assert_eq!(
        err(Family::Dfrc, "RNBQKBNR/krbqrbnn"),
        FamilyError::KingNotBetweenRooks(Family::Dfrc)
    );
    assert_eq!(
        err(Family::Shuffle, "RNBQKBNR/rnbkqbnr"),
        FamilyError::NotMirrored(Family::Shuffle)
    );
    assert!(matches!(
        err(Family::Shuffle, "RNBQKBN"),
        FamilyError::Malformed(_)
    ));
    assert!(matches!(
        Family::Dfrc.start(921_600),
        Err(FamilyError::OutOfRange { last: 921_599, .. })
    ));
    assert!(matches!(
        Family::parse("fischer"),
        Err(FamilyError::Unknown(_))
    ));
    // Positions that are not starts.
    let moved =
        Position::from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b - - 0 1").unwrap();
    assert!(matches!(
        Family::Shuffle.start_of_position(&moved, Castling::Default),
        Err(FamilyError::NotAStart { .. })
    ));
    let castling = StartPosition::new(518).unwrap().position();
    assert!(matches!(
        Family::Bishops.start_of_position(&castling, Castling::Default),
        Err(FamilyError::NotAStart { .. })
    ));
    let no_castling =
        Position::from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1").unwrap();
    assert!(matches!(
        Family::Chess960.start_of_position(&no_castling, Castling::Default),
        Err(FamilyError::NotAStart { .. })
    ));
    // Every message says what is wrong.
    assert!(
        FamilyError::BishopsSameColour(Family::Bishops)
            .to_string()
            .contains("opposite colours")
    );
    assert!(
        FamilyError::NotMirrored(Family::Shuffle)
            .to_string()
            .contains("mirror")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn transcendental_numbering_round_trips(n in 0u64..8_294_400) {
        round_trip(Family::Transcendental, n);
    }

    #[test]
    fn dfrc_numbering_round_trips(n in 0u64..921_600) {
        round_trip(Family::Dfrc, n);
    }

    #[test]
    fn small_family_numbers_round_trip(f in 0usize..6, n in 0u64..5040) {
        let family = Family::ALL[f];
        let n = n % u64::from(family.count());
        round_trip(family, n);
    }
}
