//! The draws that pick a start, as the sources describe them, and their exact analysis.
//!
//! - [`Method::Uniform`]: one number drawn directly from a random source (the worker uses the
//!   operating system's randomness), for any family.
//! - [`Method::Cards`]: the 14-card draw of the Greek source (bishops on a card of each file
//!   colour, the other six pieces in the order their cards come up; for Chess960 the king swaps
//!   with the nearest rook when it is not between them).
//! - [`Method::Coins`]: the coin-toss draw of the Polish source (11.5 tosses on average, as the
//!   source says; [`analysis`] shows that it is not uniform).
//! - [`Method::KnuthYao`]: a uniform coin-toss draw with the fewest expected tosses any exact
//!   fair-coin sampler can have (Knuth–Yao; for 960 starts 154/15 ≈ 10.27 tosses).
//!
//! Each procedure is written once, over [`Source`]: the live source reads a [`Randomness`] and
//! writes what a person at a board would do; the tracer of [`analysis`] enumerates every
//! outcome of the same code with its exact probability. `docs/draws.md` has the findings.

pub mod analysis;

use crate::family::{Family, FamilyError, Start, king_between_rooks};
use crate::startpos::Arrangement;
use crate::types::Role;

/// A source of fair randomness. The worker implements it over the operating system's random
/// generator; tests over a seeded generator.
pub trait Randomness {
    /// One fair coin toss: `true` for heads.
    fn coin(&mut self) -> bool;
    /// A uniform integer in `0..n` (`n ≥ 1`).
    fn below(&mut self, n: u64) -> u64;
}

/// How a start is drawn.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// One uniform number from the random source.
    Uniform,
    /// The 14-card draw (Greek source).
    Cards,
    /// The coin-toss draw (Polish source).
    Coins,
    /// Knuth–Yao: uniform from fair coin tosses, with the fewest expected tosses possible.
    KnuthYao,
}

impl Method {
    /// Every method.
    pub const ALL: [Method; 4] = [
        Method::Uniform,
        Method::Cards,
        Method::Coins,
        Method::KnuthYao,
    ];

    /// The name on the command line: `uniform`, `cards`, `coins`, `knuth-yao`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Uniform => "uniform",
            Method::Cards => "cards",
            Method::Coins => "coins",
            Method::KnuthYao => "knuth-yao",
        }
    }

    /// The inverse of [`Method::name`].
    pub fn parse(text: &str) -> Result<Method, DrawError> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| DrawError::UnknownMethod(text.to_string()))
    }

    /// What the method spends: `draws` (of the random source), `cards` or `tosses`.
    pub fn unit(self) -> &'static str {
        match self {
            Method::Uniform => "draws",
            Method::Cards => "cards",
            Method::Coins | Method::KnuthYao => "tosses",
        }
    }

    /// Whether the method can draw a start of `family`, and if not, why.
    pub fn check(self, family: Family) -> Result<(), DrawError> {
        let reason = match self {
            Method::Uniform | Method::KnuthYao => return Ok(()),
            Method::Cards if family.needs_opposite_bishops() => return Ok(()),
            Method::Coins if family.needs_king_between_rooks() => return Ok(()),
            Method::Cards => "the 14-card draw puts the bishops on opposite colours",
            Method::Coins => {
                "the coin-toss draw puts the bishops on opposite colours and the king between the rooks"
            }
        };
        Err(DrawError::NotApplicable {
            method: self,
            family,
            reason,
        })
    }
}

/// Why a draw or an analysis cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DrawError {
    /// Not a method name.
    #[error("unknown draw method {0:?}: use uniform, cards, coins or knuth-yao")]
    UnknownMethod(String),
    /// The method does not produce starts of this family.
    #[error("{} cannot draw {family}: {reason}", method.name())]
    NotApplicable {
        /// The method.
        method: Method,
        /// The family.
        family: Family,
        /// Why not.
        reason: &'static str,
    },
    /// A start could not be made (a bug: every procedure makes legal arrangements).
    #[error(transparent)]
    Family(#[from] FamilyError),
    /// The exact analysis outgrew its integers.
    #[error("the exact analysis of {0} outgrows 64-bit numerators")]
    TooLarge(&'static str),
}

/// The primitives every draw procedure is made of. Every primitive's outcomes are equally
/// likely, which the analysis relies on.
pub(crate) trait Source {
    /// `k` coin tosses read as a binary number, first toss highest; heads is 0, tails 1.
    fn tosses(&mut self, k: u32, what: &str) -> u32;
    /// `k` tosses repeated while the number is `n` or more (rejected outcomes are ignored).
    fn tosses_below(&mut self, k: u32, n: u32, what: &str) -> u32;
    /// A uniform number in `0..n` from fair tosses by the Knuth–Yao tree (see [`knuth_yao`]).
    fn knuth_yao(&mut self, n: u64) -> u64;
    /// The index of the card turned up from a pile holding `pile` (face down, shuffled).
    fn card(&mut self, pile: &[&str], what: &str) -> usize;
    /// One uniform draw in `0..n` from the random source.
    fn direct(&mut self, n: u64) -> u64;
    /// A line of the explanation (only built when someone reads it).
    fn say(&mut self, line: &dyn Fn() -> String);
}

/// The Knuth–Yao sampler for the uniform distribution on `0..n` (Lumbroso's "fast dice
/// roller" form): keep `c` uniform on `0..v`; each toss doubles both, adding the toss to `c`;
/// once `v ≥ n`, `c < n` is the answer, else both drop by `n` and tossing goes on. The steps at
/// which it can stop are the 1-bits of the binary expansion of `1/n`, which makes it the
/// Knuth–Yao tree of the uniform distribution: no exact fair-coin sampler needs fewer tosses
/// on average ([`analysis::knuth_yao_expected_tosses`] computes how many).
pub fn knuth_yao(n: u64, coin: &mut dyn FnMut() -> bool) -> u64 {
    assert!(n >= 1, "knuth_yao needs n ≥ 1");
    let (mut v, mut c) = (1u64, 0u64);
    loop {
        if v >= n {
            if c < n {
                return c;
            }
            v -= n;
            c -= n;
        }
        v *= 2;
        c = 2 * c + u64::from(!coin());
    }
}

/// A drawn start, with what was done to draw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drawn {
    /// The start.
    pub start: Start,
    /// Every card or toss, as a person at a board would do it (empty unless asked for).
    pub explanation: Vec<String>,
    /// Coin tosses made, rejected ones included.
    pub tosses: u64,
    /// Cards turned up.
    pub cards: u64,
}

struct Live<'a> {
    rng: &'a mut dyn Randomness,
    explain: bool,
    lines: Vec<String>,
    tosses: u64,
    cards: u64,
}

fn toss_word(tails: bool) -> &'static str {
    if tails { "tails" } else { "heads" }
}

impl Live<'_> {
    fn group(&mut self, k: u32) -> (u32, Vec<&'static str>) {
        let mut value = 0;
        let mut words = Vec::new();
        for _ in 0..k {
            let tails = !self.rng.coin();
            self.tosses += 1;
            value = 2 * value + u32::from(tails);
            words.push(toss_word(tails));
        }
        (value, words)
    }
}

impl Source for Live<'_> {
    fn tosses(&mut self, k: u32, what: &str) -> u32 {
        let (value, words) = self.group(k);
        self.say(&|| format!("{what}: {} → no. {}", words.join(", "), value + 1));
        value
    }

    fn tosses_below(&mut self, k: u32, n: u32, what: &str) -> u32 {
        loop {
            let (value, words) = self.group(k);
            if value < n {
                self.say(&|| format!("{what}: {} → no. {}", words.join(", "), value + 1));
                return value;
            }
            self.say(&|| format!("{what}: {}: ignored, toss again", words.join(", ")));
        }
    }

    fn knuth_yao(&mut self, n: u64) -> u64 {
        let mut words = Vec::new();
        let rng = &mut *self.rng;
        let value = knuth_yao(n, &mut || {
            let heads = rng.coin();
            words.push(if heads { 'H' } else { 'T' });
            heads
        });
        self.tosses += words.len() as u64;
        let text: String = words.iter().collect();
        self.say(&|| {
            format!(
                "{} tosses {text} (H = 0, T = 1, read as a binary fraction by the Knuth–Yao tree) → {value}",
                text.len()
            )
        });
        value
    }

    fn card(&mut self, pile: &[&str], what: &str) -> usize {
        let i = self.rng.below(pile.len() as u64) as usize;
        self.cards += 1;
        self.say(&|| {
            format!(
                "{what}: turn a card from [{}] → {}",
                pile.join(" "),
                pile[i]
            )
        });
        i
    }

    fn direct(&mut self, n: u64) -> u64 {
        let v = self.rng.below(n);
        self.say(&|| format!("uniform number in 0..{n} from the random source → {v}"));
        v
    }

    fn say(&mut self, line: &dyn Fn() -> String) {
        if self.explain {
            self.lines.push(line());
        }
    }
}

/// Draws a start of `family` by `method` from `rng`; `explain` keeps every step's text.
pub fn draw(
    method: Method,
    family: Family,
    rng: &mut dyn Randomness,
    explain: bool,
) -> Result<Drawn, DrawError> {
    let mut live = Live {
        rng,
        explain,
        lines: Vec::new(),
        tosses: 0,
        cards: 0,
    };
    let start = procedure(method, family, &mut live)?;
    Ok(Drawn {
        start,
        explanation: live.lines,
        tosses: live.tosses,
        cards: live.cards,
    })
}

/// The whole procedure: a number for the uniform methods; one arrangement (or two, for the
/// families whose sides differ) for the cards and coins, then the family's start of it.
pub(crate) fn procedure<S: Source>(
    method: Method,
    family: Family,
    s: &mut S,
) -> Result<Start, DrawError> {
    method.check(family)?;
    let n = u64::from(family.count());
    let number = match method {
        Method::Uniform => Some(s.direct(n)),
        Method::KnuthYao => Some(s.knuth_yao(n)),
        Method::Cards | Method::Coins => None,
    };
    if let Some(number) = number {
        return Ok(family.start(number)?);
    }
    let side = family.side_family();
    let one = |s: &mut S, back: char| match method {
        Method::Coins => coins(s, back),
        _ => cards(side, s, back),
    };
    let white = one(s, '1');
    let black = if family.mirrored() {
        white
    } else {
        s.say(&|| "Black draws its own arrangement the same way:".to_string());
        one(s, '8')
    };
    let start = family.start_of(&white, &black)?;
    if start.white != white {
        s.say(&|| "no castling: the mirror image is the same game, so it is counted as its mirror (king on e-h)".to_string());
    }
    Ok(start)
}

const FILES: [char; 8] = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

/// A back rank being filled, and its number as a person reads it (`1` for White, `8` for Black).
struct Rank {
    pieces: [Option<Role>; 8],
    back: char,
}

impl Rank {
    fn new(back: char) -> Rank {
        Rank {
            pieces: [None; 8],
            back,
        }
    }

    fn empty(&self) -> Vec<usize> {
        (0..8).filter(|&f| self.pieces[f].is_none()).collect()
    }

    fn squares(&self, files: &[usize]) -> String {
        files
            .iter()
            .map(|&f| format!("{}{}", FILES[f], self.back))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn place<S: Source>(&mut self, s: &mut S, file: usize, role: Role) {
        self.pieces[file] = Some(role);
        s.say(&|| format!("  {} on {}{}", role.name(), FILES[file], self.back));
    }

    fn finish(self) -> Arrangement {
        self.pieces.map(|r| r.expect("every square filled"))
    }
}

/// The coin-toss draw of a Chess960 arrangement, as the Polish source gives it.
fn coins<S: Source>(s: &mut S, back: char) -> Arrangement {
    let mut rank = Rank::new(back);
    let light = rank.squares(&[1, 3, 5, 7]);
    let i = s.tosses(
        2,
        &format!("light-square bishop, one of {light} (two tosses)"),
    ) as usize;
    rank.place(s, 2 * i + 1, Role::Bishop);
    let dark = rank.squares(&[0, 2, 4, 6]);
    let i = s.tosses(
        2,
        &format!("dark-square bishop, one of {dark} (two tosses)"),
    ) as usize;
    rank.place(s, 2 * i, Role::Bishop);
    let empty = rank.empty();
    let inner = &empty[1..5];
    let what = format!(
        "king, one of the inner empty squares {} (two tosses)",
        rank.squares(inner)
    );
    let k = s.tosses(2, &what) as usize;
    rank.place(s, inner[k], Role::King);
    // The king splits the five squares left 1:4, 2:3, 3:2 or 4:1.
    for side in [&empty[..k + 1], &empty[k + 2..]] {
        let names = rank.squares(side);
        let i = match side.len() {
            1 => {
                s.say(&|| format!("rook on the single square {names} of the short side"));
                0
            }
            2 => s.tosses(1, &format!("rook, one of {names} (one toss)")) as usize,
            3 => s.tosses_below(
                2,
                3,
                &format!("rook, one of {names} (two tosses, two tails ignored)"),
            ) as usize,
            _ => s.tosses(2, &format!("rook, one of {names} (two tosses)")) as usize,
        };
        rank.place(s, side[i], Role::Rook);
    }
    let rest = rank.empty();
    let what = format!(
        "queen, one of {} (two tosses, two tails ignored)",
        rank.squares(&rest)
    );
    let q = s.tosses_below(2, 3, &what) as usize;
    rank.place(s, rest[q], Role::Queen);
    for f in rank.empty() {
        rank.place(s, f, Role::Knight);
    }
    rank.finish()
}

/// The 14-card draw: one card from each pile of four file cards (a c e g, then b d f h) for the
/// bishops, then the six piece cards turned up one by one onto the empty squares from a to h;
/// for Chess960 the king then swaps places with the nearest rook if it is not between them.
fn cards<S: Source>(side: Family, s: &mut S, back: char) -> Arrangement {
    let mut rank = Rank::new(back);
    let dark = s.card(&["a", "c", "e", "g"], "first colour (a c e g) for a bishop");
    rank.place(s, 2 * dark, Role::Bishop);
    let light = s.card(
        &["b", "d", "f", "h"],
        "second colour (b d f h) for the other bishop",
    );
    rank.place(s, 2 * light + 1, Role::Bishop);
    let mut pile = vec![
        Role::King,
        Role::Queen,
        Role::Rook,
        Role::Rook,
        Role::Knight,
        Role::Knight,
    ];
    for f in rank.empty() {
        let names: Vec<&str> = pile.iter().map(|&r| r.name()).collect();
        let i = s.card(&names, "piece card");
        let role = pile.remove(i);
        rank.place(s, f, role);
    }
    let mut arr = rank.finish();
    if side.needs_king_between_rooks() && !king_between_rooks(&arr) {
        let king = arr.iter().position(|&r| r == Role::King).expect("a king");
        let rook = (0..8)
            .filter(|&f| arr[f] == Role::Rook)
            .min_by_key(|&f| f.abs_diff(king))
            .expect("two rooks");
        arr.swap(king, rook);
        s.say(&|| {
            format!(
                "the king must stand between the rooks: it swaps with the nearest rook ({}{back} ↔ {}{back})",
                FILES[king], FILES[rook]
            )
        });
    }
    arr
}
