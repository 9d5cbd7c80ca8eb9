//! The draws: the exact analysis of each method, and a chi-square test of the uniform ones over
//! many seeded draws (seeded, so it cannot flake).

use c960_common::draw::analysis::{analyse, fraction, knuth_yao_expected_tosses};
use c960_common::draw::{DrawError, Method, Randomness, draw, knuth_yao};
use c960_common::family::Family;
use num_bigint::BigInt;
use num_rational::BigRational;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Seeded(StdRng);

impl Randomness for Seeded {
    fn coin(&mut self) -> bool {
        self.0.random_bool(0.5)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
}

fn r(n: i64, d: i64) -> BigRational {
    BigRational::new(BigInt::from(n), BigInt::from(d))
}

#[test]
fn the_polish_coin_draw_is_not_uniform_and_takes_eleven_and_a_half_tosses() {
    let a = analyse(Method::Coins, Family::Chess960).unwrap();
    assert!(!a.uniform);
    assert_eq!(
        a.outcomes, 960,
        "one toss path per start, rejections folded"
    );
    assert_eq!(a.reached, 960);
    assert_eq!(a.min_probability, r(1, 1152));
    assert_eq!(a.max_probability, r(1, 768));
    let classes: Vec<(String, u64)> = a
        .distribution
        .iter()
        .map(|c| (fraction(&c.probability), c.starts))
        .collect();
    assert_eq!(
        classes,
        [("1/1152".to_string(), 576), ("1/768".to_string(), 384)]
    );
    assert_eq!(a.expected_cost, r(23, 2), "the source's 11.5");
    // It draws a distribution of entropy below log2(960), and spends 11.5 tosses on it.
    assert!(a.entropy_bits < a.uniform_entropy_bits);
    assert!((a.entropy_bits - 9.8774).abs() < 1e-3, "{}", a.entropy_bits);
    // Without castling, mirror pairs keep their kind: still 1/576 against 1/384.
    let nc = analyse(Method::Coins, Family::Chess960Nc).unwrap();
    assert_eq!(
        (nc.min_probability, nc.max_probability),
        (r(1, 576), r(1, 384))
    );
    // DFRC: two independent Polish draws.
    let d = analyse(Method::Coins, Family::Dfrc).unwrap();
    assert_eq!(d.min_probability, r(1, 1152 * 1152));
    assert_eq!(d.max_probability, r(1, 768 * 768));
    assert_eq!(d.expected_cost, r(23, 1));
}

#[test]
fn the_card_draw_is_uniform_in_every_family_it_serves() {
    for (family, n) in [
        (Family::Chess960, 960),
        (Family::Bishops, 2880),
        (Family::Chess960Nc, 480),
        (Family::BishopsNc, 1440),
    ] {
        let a = analyse(Method::Cards, family).unwrap();
        assert!(a.uniform, "{family}");
        assert_eq!(a.min_probability, r(1, n));
        assert_eq!(a.outcomes, 4 * 4 * 720);
        assert_eq!(
            a.expected_cost,
            r(8, 1),
            "two file cards and six piece cards"
        );
    }
    let t = analyse(Method::Cards, Family::Transcendental).unwrap();
    assert!(t.uniform);
    assert_eq!(t.max_probability, r(1, 8_294_400));
    assert_eq!(t.expected_cost, r(16, 1));
    assert!(analyse(Method::Cards, Family::Dfrc).unwrap().uniform);
}

#[test]
fn knuth_yao_is_uniform_with_the_fewest_tosses() {
    // Hand-derived values: 1/3 = 0.(01), 1/5 = 0.(0011), 960 = 2^6 * 15 with 1/15 = 0.(0001).
    assert_eq!(knuth_yao_expected_tosses(1), r(0, 1));
    assert_eq!(knuth_yao_expected_tosses(2), r(1, 1));
    assert_eq!(knuth_yao_expected_tosses(3), r(8, 3));
    assert_eq!(knuth_yao_expected_tosses(5), r(18, 5));
    assert_eq!(knuth_yao_expected_tosses(960), r(154, 15));
    for family in Family::ALL {
        if family == Family::Transcendental {
            continue; // 8.3M outcomes: `c960-worker draw --analyse` runs it (docs/draws.md)
        }
        let a = analyse(Method::KnuthYao, family).unwrap();
        assert!(a.uniform, "{family}");
        assert_eq!(a.expected_cost, a.optimal_uniform_tosses, "{family}");
        assert!(
            a.expected_cost_decimal >= a.uniform_entropy_bits,
            "{family}"
        );
        assert!(
            a.expected_cost_decimal < a.uniform_entropy_bits + 2.0,
            "{family}"
        );
    }
    let a = analyse(Method::KnuthYao, Family::Chess960).unwrap();
    assert!(a.expected_cost < r(23, 2), "beats the Polish 11.5");
    assert!(
        a.expected_cost < r(10 * 1024, 960),
        "beats ten tosses with rejection"
    );
}

/// The sampler itself against every toss sequence of up to 16 tosses: each outcome gets the
/// same mass, and the mass still tossing after k tosses is what the expansion of 1/n leaves.
#[test]
fn knuth_yao_sampler_matches_its_analysis_toss_by_toss() {
    for n in [3u64, 5, 15, 45, 960] {
        let depth = 16;
        let mut per_outcome = vec![0u64; n as usize];
        let mut unfinished = 0u64;
        for seq in 0..1u64 << depth {
            let mut i = 0;
            let mut ran_out = false;
            // Tosses past the depth abort the path (counted as unfinished).
            let mut coin = || {
                if i == depth {
                    ran_out = true;
                    return true;
                }
                let heads = (seq >> (depth - 1 - i)) & 1 == 0;
                i += 1;
                heads
            };
            let v = knuth_yao(n, &mut coin);
            if ran_out {
                unfinished += 1;
            } else {
                per_outcome[v as usize] += 1;
            }
        }
        assert!(per_outcome.iter().all(|&c| c == per_outcome[0]), "n = {n}");
        // After `depth` tosses the sampler is still going on exactly 2^depth mod n of the
        // sequences: the remainder of the long division of 2^depth by n.
        assert_eq!(unfinished, (1u64 << depth) % n, "n = {n}");
        assert_eq!(per_outcome[0] * n + unfinished, 1 << depth);
    }
}

#[test]
fn uniform_direct_is_uniform() {
    for family in [
        Family::Chess960,
        Family::Shuffle,
        Family::ShuffleNc,
        Family::Dfrc,
    ] {
        let a = analyse(Method::Uniform, family).unwrap();
        assert!(a.uniform, "{family}");
        assert_eq!(a.outcomes, u128::from(family.count()));
        assert_eq!(a.expected_cost, r(1, 1));
    }
}

#[test]
fn methods_refuse_families_they_do_not_serve() {
    assert!(matches!(
        analyse(Method::Coins, Family::Bishops),
        Err(DrawError::NotApplicable { .. })
    ));
    assert!(matches!(
        analyse(Method::Cards, Family::Shuffle),
        Err(DrawError::NotApplicable { .. })
    ));
    let mut rng = Seeded(StdRng::seed_from_u64(1));
    assert!(draw(Method::Coins, Family::Transcendental, &mut rng, false).is_err());
    assert!(matches!(
        Method::parse("dice"),
        Err(DrawError::UnknownMethod(_))
    ));
}

/// Pearson's chi-square of counts against the uniform distribution.
fn chi_square(counts: &[u64], draws: u64) -> f64 {
    let e = draws as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

/// The chi-square quantile for `df` degrees of freedom at z standard deviations
/// (Wilson–Hilferty).
fn chi_square_quantile(df: f64, z: f64) -> f64 {
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

#[test]
fn chi_square_of_many_seeded_draws() {
    let draws = 96_000u64;
    let limit = chi_square_quantile(959.0, 5.0); // p ≈ 3e-7 for a uniform draw
    let mut rng = Seeded(StdRng::seed_from_u64(0x960_960));
    let mut statistic = |method| {
        let mut counts = vec![0u64; 960];
        for _ in 0..draws {
            let d = draw(method, Family::Chess960, &mut rng, false).unwrap();
            counts[d.start.number as usize] += 1;
        }
        chi_square(&counts, draws)
    };
    for method in [Method::Uniform, Method::Cards, Method::KnuthYao] {
        let x = statistic(method);
        assert!(
            x < limit,
            "{}: chi-square {x:.1} ≥ {limit:.1}",
            method.name()
        );
    }
    // The same test sees the Polish draw's 3:2 bias plainly (expected statistic ≈ 4000).
    let x = statistic(Method::Coins);
    assert!(x > 2.0 * limit, "coins: chi-square {x:.1}");
}

#[test]
fn explained_draws_count_their_tosses_and_cards() {
    let mut rng = Seeded(StdRng::seed_from_u64(7));
    let d = draw(Method::Coins, Family::Chess960, &mut rng, true).unwrap();
    assert!(d.tosses >= 9, "at least 2+2+2+1+2 tosses");
    assert!(
        d.explanation
            .iter()
            .any(|l| l.contains("king, one of the inner"))
    );
    assert!(d.explanation.iter().any(|l| l.contains("queen")));
    let c = draw(Method::Cards, Family::Dfrc, &mut rng, true).unwrap();
    assert_eq!(c.cards, 16);
    assert!(
        c.explanation
            .iter()
            .any(|l| l.contains("Black draws its own"))
    );
    let k = draw(Method::KnuthYao, Family::Chess960, &mut rng, true).unwrap();
    assert!(k.tosses >= 10);
    let quiet = draw(Method::Uniform, Family::Transcendental, &mut rng, false).unwrap();
    assert!(quiet.explanation.is_empty());
}
