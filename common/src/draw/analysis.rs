//! The exact analysis of a draw: every outcome of the procedure with its exact probability.
//!
//! The tracer runs the very procedure that draws (`super::procedure`) once per outcome,
//! answering its primitives from a path of choices and enumerating all paths depth first.
//! Every primitive's outcomes are equally likely (a rejected group of tosses is tossed again,
//! which keeps the accepted outcomes equally likely), so a path of choices among `n₁, n₂, …`
//! outcomes has probability `1/(n₁·n₂·…)`: the tracer sums these exactly per start. The
//! expected cost is summed per primitive: `k` plain tosses cost `k`; `k` tosses repeated while
//! the number is `n` or more cost `k·2ᵏ/n` on average (each attempt succeeds with `n/2ᵏ`); a
//! Knuth–Yao draw costs [`knuth_yao_expected_tosses`]; a card costs one card.
//!
//! Families whose sides are drawn independently (transcendental, DFRC) by cards or coins are
//! analysed as the product of two enumerated side draws, which is what they are.

use std::collections::{BTreeMap, HashMap};

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, ToPrimitive, Zero};
use serde::Serialize;

use super::{DrawError, Method, Source, procedure};
use crate::family::Family;

/// What the exact analysis of a method over a family finds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// The method's name.
    pub method: &'static str,
    /// The family's name.
    pub family: &'static str,
    /// Starts in the family.
    pub starts: u64,
    /// Outcomes of the procedure enumerated (paths of cards or tosses, rejections folded in).
    pub outcomes: u128,
    /// Starts with a positive probability.
    pub reached: u64,
    /// Whether every start has probability exactly 1/starts.
    pub uniform: bool,
    /// The smallest probability of a start (0 when some start is never drawn).
    #[serde(serialize_with = "ser_fraction")]
    pub min_probability: BigRational,
    /// The largest probability of a start.
    #[serde(serialize_with = "ser_fraction")]
    pub max_probability: BigRational,
    /// How many starts have each probability, smallest probability first.
    pub distribution: Vec<ProbabilityClass>,
    /// What the method spends: `tosses`, `cards` or `draws`.
    pub unit: &'static str,
    /// The expected number of tosses, cards or draws, exactly.
    #[serde(serialize_with = "ser_fraction")]
    pub expected_cost: BigRational,
    /// The same as a decimal.
    pub expected_cost_decimal: f64,
    /// The Shannon entropy of the distribution drawn, in bits: no procedure with fair coins
    /// producing it can use fewer tosses on average.
    pub entropy_bits: f64,
    /// log2(starts): the entropy of the uniform distribution over the family.
    pub uniform_entropy_bits: f64,
    /// The fewest expected tosses of any exact fair-coin sampler of the uniform distribution
    /// over the family (the Knuth–Yao tree), exactly.
    #[serde(serialize_with = "ser_fraction")]
    pub optimal_uniform_tosses: BigRational,
    /// The same as a decimal.
    pub optimal_uniform_tosses_decimal: f64,
}

/// A probability and the number of starts that have it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProbabilityClass {
    /// The probability, as an exact fraction such as `"1/960"`.
    #[serde(serialize_with = "ser_fraction")]
    pub probability: BigRational,
    /// Starts with it.
    pub starts: u64,
}

fn ser_fraction<S: serde::Serializer>(r: &BigRational, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fraction(r))
}

/// `a/b`, or `a` when the denominator is 1.
pub fn fraction(r: &BigRational) -> String {
    if r.denom().is_one() {
        r.numer().to_string()
    } else {
        format!("{}/{}", r.numer(), r.denom())
    }
}

fn ratio(n: impl Into<BigInt>, d: impl Into<BigInt>) -> BigRational {
    BigRational::new(n.into(), d.into())
}

fn to_f64(r: &BigRational) -> f64 {
    r.to_f64().unwrap_or(f64::NAN)
}

/// The expected number of fair tosses of the Knuth–Yao sampler of the uniform distribution on
/// `0..n`, exactly: `Σₖ k·n·bₖ/2ᵏ` over the binary digits `bₖ` of `1/n` (Knuth and Yao 1976:
/// the optimum over every exact sampler). The digits come from the long division of 1 by `n`,
/// whose remainders repeat after a pre-period; the periodic tail is summed in closed form.
pub fn knuth_yao_expected_tosses(n: u64) -> BigRational {
    assert!(n >= 1);
    // Long division: remainder r_t after digit t; digit t is 1 when 2·r_{t-1} ≥ n.
    let mut first_seen: HashMap<u64, u64> = HashMap::new();
    let mut ones: Vec<u64> = Vec::new(); // steps t with digit 1
    let (mut r, mut t) = (1u64 % n, 0u64);
    if n == 1 {
        return BigRational::zero();
    }
    let (start, period) = loop {
        if r == 0 {
            break (t, 0);
        }
        if let Some(&s) = first_seen.get(&r) {
            break (s, t - s);
        }
        first_seen.insert(r, t);
        t += 1;
        r *= 2;
        if r >= n {
            r -= n;
            ones.push(t);
        }
    };
    let nn = BigInt::from(n);
    let pow2 = |e: u64| BigInt::one() << e;
    let mut e = BigRational::zero();
    for &k in &ones {
        if period == 0 || k <= start {
            // Pre-period digit: k·n/2^k.
            e += ratio(BigInt::from(k) * &nn, pow2(k));
        } else {
            // Periodic digit at k, k+L, k+2L, …: n/2^k · (k/(1−q) + L·q/(1−q)²), q = 2^-L.
            let q = ratio(1, pow2(period));
            let one_minus = BigRational::one() - &q;
            let sum = ratio(k, 1) / &one_minus + ratio(period, 1) * &q / (&one_minus * &one_minus);
            e += ratio(nn.clone(), pow2(k)) * sum;
        }
    }
    e
}

/// The cost of one primitive call, as summed into the expected cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Cost {
    Tosses(u32),
    TossesBelow(u32, u32),
    KnuthYao(u64),
    Card,
    Direct,
}

impl Cost {
    fn value(self) -> BigRational {
        match self {
            Cost::Tosses(k) => ratio(k, 1),
            Cost::TossesBelow(k, n) => ratio(BigInt::from(k) << k, n),
            Cost::KnuthYao(n) => knuth_yao_expected_tosses(n),
            Cost::Card | Cost::Direct => BigRational::one(),
        }
    }
}

/// Answers a procedure's primitives from a path of choices, extending it with choice 0 where it
/// ends, and notes each primitive met for the first time (with the paths through it).
struct Tracer {
    path: Vec<(u64, u64)>,
    depth: usize,
    /// Product of the arities on the path so far (the inverse of its probability).
    weight: u128,
    overflow: bool,
    /// Newly met primitives of this run: cost and the weight of the path reaching them.
    met: Vec<(Cost, u128)>,
}

impl Tracer {
    fn choose(&mut self, arity: u64, cost: Cost) -> u64 {
        let choice = if self.depth < self.path.len() {
            self.path[self.depth].0
        } else {
            self.path.push((0, arity));
            self.met.push((cost, self.weight));
            0
        };
        self.depth += 1;
        match self.weight.checked_mul(u128::from(arity)) {
            Some(w) => self.weight = w,
            None => self.overflow = true,
        }
        choice
    }

    /// The next path in depth-first order, or false when all are done.
    fn advance(&mut self) -> bool {
        while let Some((choice, arity)) = self.path.pop() {
            if choice + 1 < arity {
                self.path.push((choice + 1, arity));
                return true;
            }
        }
        false
    }
}

impl Source for Tracer {
    fn tosses(&mut self, k: u32, _: &str) -> u32 {
        self.choose(1 << k, Cost::Tosses(k)) as u32
    }
    fn tosses_below(&mut self, k: u32, n: u32, _: &str) -> u32 {
        self.choose(u64::from(n), Cost::TossesBelow(k, n)) as u32
    }
    fn knuth_yao(&mut self, n: u64) -> u64 {
        self.choose(n, Cost::KnuthYao(n))
    }
    fn card(&mut self, pile: &[&str], _: &str) -> usize {
        self.choose(pile.len() as u64, Cost::Card) as usize
    }
    fn direct(&mut self, n: u64) -> u64 {
        self.choose(n, Cost::Direct)
    }
    fn say(&mut self, _: &dyn Fn() -> String) {}
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Runs `method` over `family` on every path, calling `leaf(start number, path weight)` and
/// `node(cost, weight)` for each primitive the first time it is met.
fn enumerate(
    method: Method,
    family: Family,
    leaf: &mut dyn FnMut(u32, u128),
    node: &mut dyn FnMut(Cost, u128),
) -> Result<u128, DrawError> {
    let mut t = Tracer {
        path: Vec::new(),
        depth: 0,
        weight: 1,
        overflow: false,
        met: Vec::new(),
    };
    let mut outcomes = 0u128;
    loop {
        t.depth = 0;
        t.weight = 1;
        let start = procedure(method, family, &mut t)?;
        if t.overflow {
            return Err(DrawError::TooLarge(method.name()));
        }
        t.path.truncate(t.depth);
        for (cost, w) in t.met.drain(..) {
            node(cost, w);
        }
        leaf(start.number, t.weight);
        outcomes += 1;
        if !t.advance() {
            return Ok(outcomes);
        }
    }
}

/// The exact analysis of drawing `family` by `method`.
pub fn analyse(method: Method, family: Family) -> Result<Analysis, DrawError> {
    method.check(family)?;
    let product = !family.mirrored() && matches!(method, Method::Cards | Method::Coins);
    let side_family = if product {
        family.side_family()
    } else {
        family
    };
    let side = analyse_enumerated(method, side_family)?;
    let a = if product { square(side, family) } else { side };
    Ok(a)
}

fn analyse_enumerated(method: Method, family: Family) -> Result<Analysis, DrawError> {
    // Pass 1: the common denominator of every path probability.
    let mut lcm = 1u128;
    let mut overflow = false;
    enumerate(
        method,
        family,
        &mut |_, w| match (lcm / gcd(lcm, w)).checked_mul(w) {
            Some(l) => lcm = l,
            None => overflow = true,
        },
        &mut |_, _| {},
    )?;
    let lcm_u64 = u64::try_from(lcm).map_err(|_| DrawError::TooLarge(method.name()))?;
    if overflow {
        return Err(DrawError::TooLarge(method.name()));
    }
    // Pass 2: per start, the sum of path probabilities over lcm; per primitive, the
    // probability of reaching it.
    let mut mass = vec![0u64; family.count() as usize];
    let mut reach: BTreeMap<Cost, u128> = BTreeMap::new();
    let outcomes = enumerate(
        method,
        family,
        &mut |n, w| mass[n as usize] += (lcm / w) as u64,
        &mut |cost, w| *reach.entry(cost).or_default() += lcm / w,
    )?;
    let denom = BigInt::from(lcm_u64);
    let mut expected = BigRational::zero();
    for (cost, r) in reach {
        expected += BigRational::new(BigInt::from(r), denom.clone()) * cost.value();
    }
    let mut classes: BTreeMap<u64, u64> = BTreeMap::new();
    for &m in &mass {
        *classes.entry(m).or_default() += 1;
    }
    let distribution: Vec<ProbabilityClass> = classes
        .iter()
        .map(|(&m, &count)| ProbabilityClass {
            probability: BigRational::new(BigInt::from(m), denom.clone()),
            starts: count,
        })
        .collect();
    Ok(summarise(method, family, outcomes, distribution, expected))
}

fn summarise(
    method: Method,
    family: Family,
    outcomes: u128,
    distribution: Vec<ProbabilityClass>,
    expected_cost: BigRational,
) -> Analysis {
    let starts = u64::from(family.count());
    let entropy_bits = distribution
        .iter()
        .filter(|c| !c.probability.is_zero())
        .map(|c| {
            let p = to_f64(&c.probability);
            -(c.starts as f64) * p * p.log2()
        })
        .sum();
    let reached = distribution
        .iter()
        .filter(|c| !c.probability.is_zero())
        .map(|c| c.starts)
        .sum();
    let min_probability = distribution[0].probability.clone();
    let max_probability = distribution[distribution.len() - 1].probability.clone();
    let optimal = knuth_yao_expected_tosses(starts);
    Analysis {
        method: method.name(),
        family: family.name(),
        starts,
        outcomes,
        reached,
        uniform: distribution.len() == 1 && reached == starts,
        min_probability,
        max_probability,
        distribution,
        unit: method.unit(),
        expected_cost_decimal: to_f64(&expected_cost),
        expected_cost,
        entropy_bits,
        uniform_entropy_bits: (starts as f64).log2(),
        optimal_uniform_tosses_decimal: to_f64(&optimal),
        optimal_uniform_tosses: optimal,
    }
}

/// Two independent side draws: probabilities multiply, costs and entropies add.
fn square(side: Analysis, family: Family) -> Analysis {
    let mut classes: BTreeMap<BigRational, u64> = BTreeMap::new();
    for a in &side.distribution {
        for b in &side.distribution {
            *classes.entry(&a.probability * &b.probability).or_default() += a.starts * b.starts;
        }
    }
    let distribution = classes
        .into_iter()
        .map(|(probability, starts)| ProbabilityClass {
            probability,
            starts,
        })
        .collect();
    let method = Method::parse(side.method).expect("a method's own name");
    summarise(
        method,
        family,
        side.outcomes * side.outcomes,
        distribution,
        side.expected_cost * ratio(2, 1),
    )
}

/// A fraction for people: exact when short, else its decimal and the number of digits.
fn shown(r: &BigRational) -> String {
    let exact = fraction(r);
    if exact.len() <= 40 {
        exact
    } else {
        format!(
            "an exact fraction of {} digits (--json prints it)",
            exact.len() - 1
        )
    }
}

impl Analysis {
    /// The report as text, one finding per line.
    pub fn report(&self) -> String {
        let mut out = format!(
            "method: {}\nfamily: {} ({} starts)\noutcomes enumerated: {}\nstarts reached: {}\nuniform: {}\nmin probability: {} ({:.6e})\nmax probability: {} ({:.6e})\n",
            self.method,
            self.family,
            self.starts,
            self.outcomes,
            self.reached,
            if self.uniform { "yes" } else { "no" },
            fraction(&self.min_probability),
            to_f64(&self.min_probability),
            fraction(&self.max_probability),
            to_f64(&self.max_probability),
        );
        if self.distribution.len() > 1 {
            for c in &self.distribution {
                out.push_str(&format!(
                    "  {} starts with probability {}\n",
                    c.starts,
                    fraction(&c.probability)
                ));
            }
        }
        out.push_str(&format!(
            "expected {}: {} ≈ {:.4}\nentropy of the draw: {:.4} bits (uniform: log2 {} = {:.4})\nfewest expected tosses of any uniform coin draw (Knuth–Yao): {} ≈ {:.4}\n",
            self.unit,
            shown(&self.expected_cost),
            self.expected_cost_decimal,
            self.entropy_bits,
            self.starts,
            self.uniform_entropy_bits,
            shown(&self.optimal_uniform_tosses),
            self.optimal_uniform_tosses_decimal,
        ));
        out
    }
}
