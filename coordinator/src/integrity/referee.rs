//! The verification game: two results of one perft workunit disagree, and the coordinator
//! cannot count the workunit itself. perft(p, d) = Σ perft(child, d − 1), so the referee asks
//! each side for the children of the node where they disagree, descends into the first child
//! whose counts differ, and repeats until the differing subtree fits the coordinator's budget;
//! the coordinator counts it there. Pure rules: the store keeps each dispute's state, the
//! checker thread ([`crate::integrity::checker`]) plays the referee's moves and counts leaves.
//!
//! **Why it is proof.** Each side is bound by its own earlier claim: an answer whose children
//! do not sum to the count it claimed for their parent, or that is not one count per legal
//! move, contradicts itself, and loses. If both answers hold up and the claims differ, some
//! child's counts differ (their sums do), so the descent never runs dry; at a leaf the
//! coordinator's own count is the truth, and a side whose claim differs from it is wrong —
//! and with it every claim above it, up to its result. So a side loses only by a wrong count, a
//! self-contradiction or silence (a deadline passed): an honest worker that answers in time
//! never loses, whatever the other side says. At most `depth` rounds; the coordinator counts
//! one subtree within its budget.
//!
//! **Cost.** An honest side answers one challenge per round, each a perft one ply shallower
//! than the last below a child of the node: about 1/b + 1/b² + … ≈ 1/(b − 1) of its workunit for
//! branching factor b (≈ 4 % at b = 25 in the opening). The coordinator counts one node's
//! subtree within its budget and generates the legal moves of one node per round.

use c960_common::{PerftEngine, Position};

use crate::model::disputes::{Advance, Answer, DisputeView, Side};
use crate::work::sizing::perft_estimate;

/// The referee's ruling on a node in dispute, given each side's claim for it and its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ruling {
    /// A challenge is open: wait for its answer or its deadline.
    Wait,
    /// These sides are proven wrong (silent, or contradicting their own claim), the other
    /// side's value stands.
    Convict(Vec<Side>),
    /// Both answers hold up: the first child (in legal-move order) whose counts differ.
    Descend {
        /// The move to it (UCI).
        mv: String,
        /// The child.
        child: Box<Position>,
        /// Each side's count for it.
        claims: [u64; 2],
    },
    /// Both answers hold up and name the same counts: nothing differs (the results'
    /// digests differed by something else), nobody is proven wrong.
    NoDifference,
}

/// Why an answer does not hold up, if it does not: its children must be exactly the legal
/// moves of `pos`, each once, and sum to `claim`.
pub fn contradiction(pos: &Position, claim: u64, divide: &[(String, u64)]) -> Option<String> {
    let legal: Vec<String> = pos
        .legal_moves()
        .as_slice()
        .iter()
        .map(|m| m.to_string())
        .collect();
    if divide.len() != legal.len() {
        return Some(format!(
            "{} children for {} legal moves",
            divide.len(),
            legal.len()
        ));
    }
    let mut named: Vec<&str> = divide.iter().map(|(m, _)| m.as_str()).collect();
    named.sort_unstable();
    let mut want: Vec<&str> = legal.iter().map(String::as_str).collect();
    want.sort_unstable();
    if named != want {
        return Some("its children are not the legal moves".into());
    }
    let sum: u128 = divide.iter().map(|(_, n)| u128::from(*n)).sum();
    (sum != u128::from(claim)).then(|| format!("its children sum to {sum}, it claimed {claim}"))
}

/// The ruling on the node `pos` (more than one ply deep), claimed `claims[i]` by side `i`,
/// which answered `answers[i]`.
pub fn rule(pos: &Position, claims: [u64; 2], answers: [&Answer; 2]) -> Ruling {
    let mut convicted = Vec::new();
    let mut divides: [Option<&[(String, u64)]>; 2] = [None, None];
    for side in Side::BOTH {
        match answers[side.index()] {
            Answer::Missed => convicted.push(side),
            Answer::Divide(d) => {
                if contradiction(pos, claims[side.index()], d).is_some() {
                    convicted.push(side);
                } else {
                    divides[side.index()] = Some(d);
                }
            }
            Answer::Waiting => {}
        }
    }
    if !convicted.is_empty() {
        return Ruling::Convict(convicted);
    }
    let [Some(a), Some(b)] = divides else {
        return Ruling::Wait;
    };
    for m in pos.legal_moves().as_slice() {
        let mv = m.to_string();
        let count = |d: &[(String, u64)]| d.iter().find(|(n, _)| *n == mv).map(|(_, c)| *c);
        let (Some(ca), Some(cb)) = (count(a), count(b)) else {
            continue; // Not reached: both name every legal move (contradiction above).
        };
        if ca != cb {
            return Ruling::Descend {
                mv,
                child: Box::new(pos.play(*m)),
                claims: [ca, cb],
            };
        }
    }
    Ruling::NoDifference
}

/// The sides whose claims differ from the coordinator's own count of a leaf.
pub fn wrong_at_leaf(truth: u64, claims: [u64; 2]) -> Vec<Side> {
    Side::BOTH
        .into_iter()
        .filter(|s| claims[s.index()] != truth)
        .collect()
}

/// The referee's move on dispute `d`: a conviction or no difference from the answers; else
/// the first differing child, counted with `engine` when its estimate is at most `leaf_nodes`
/// (the sides whose claims differ from the count lose), challenged otherwise. `None` while a
/// challenge is open.
pub fn next_move(engine: &PerftEngine, d: &DisputeView, leaf_nodes: u64) -> Option<Advance> {
    let decided = |losers: Vec<Side>, nodes: u64| Advance::Decided {
        losers: losers.into_iter().map(|s| d.workers[s.index()]).collect(),
        nodes,
    };
    let Ok(pos) = Position::from_fen(&d.fen) else {
        tracing::error!(
            dispute = d.id,
            fen = d.fen,
            "a dispute's position does not parse"
        );
        return Some(decided(Vec::new(), 0));
    };
    match rule(&pos, d.claims, [&d.answers[0], &d.answers[1]]) {
        Ruling::Wait => None,
        Ruling::Convict(sides) => Some(decided(sides, 0)),
        Ruling::NoDifference => Some(decided(Vec::new(), 0)),
        Ruling::Descend { mv, child, claims } => {
            let depth = d.depth.saturating_sub(1);
            if perft_estimate(&child, depth) <= u128::from(leaf_nodes) {
                let truth = engine.perft(&child, depth);
                Some(decided(wrong_at_leaf(truth, claims), truth))
            } else {
                Some(Advance::Challenge {
                    mv,
                    fen: child.to_fen(c960_common::CastlingNotation::Shredder),
                    depth,
                    claims,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use c960_common::{StartPosition, perft};

    fn divide(pos: &Position, depth: u32) -> Vec<(String, u64)> {
        pos.legal_moves()
            .as_slice()
            .iter()
            .map(|&m| (m.to_string(), perft(&pos.play(m), depth - 1)))
            .collect()
    }

    /// A liar's divide: the true one with `extra` added to the count of `mv`.
    fn lie(pos: &Position, depth: u32, mv: &str, extra: u64) -> Vec<(String, u64)> {
        divide(pos, depth)
            .into_iter()
            .map(|(m, n)| if m == mv { (m, n + extra) } else { (m, n) })
            .collect()
    }

    fn start() -> Position {
        StartPosition::new(518).unwrap().position()
    }

    #[test]
    fn a_wrong_count_three_plies_down_is_found_and_only_the_liar_loses() {
        // The liar adds one node under e2e4 e7e5 g1f3 at depth 5 and answers every challenge
        // consistently with it; the honest side answers the truth.
        let path = ["e2e4", "e7e5", "g1f3"];
        let truth_total = perft(&start(), 5);
        let mut pos = start();
        let mut claims = [truth_total, truth_total + 1];
        let mut depth = 5;
        for (ply, mv) in path.iter().enumerate() {
            let answers = [
                Answer::Divide(divide(&pos, depth)),
                Answer::Divide(lie(&pos, depth, mv, 1)),
            ];
            let Ruling::Descend {
                mv: got,
                child,
                claims: next,
            } = rule(&pos, claims, [&answers[0], &answers[1]])
            else {
                panic!("no descent at ply {ply}");
            };
            assert_eq!(got, *mv);
            assert_eq!(next[1], next[0] + 1);
            pos = *child;
            claims = next;
            depth -= 1;
        }
        // Three plies down, depth 2: the coordinator counts it.
        assert_eq!(wrong_at_leaf(perft(&pos, depth), claims), vec![Side::B]);
    }

    #[test]
    fn silence_and_self_contradiction_lose() {
        let pos = start();
        let truth = perft(&pos, 3);
        let honest = Answer::Divide(divide(&pos, 3));
        assert_eq!(
            rule(&pos, [truth, truth + 5], [&honest, &Answer::Missed]),
            Ruling::Convict(vec![Side::B])
        );
        assert_eq!(
            rule(&pos, [truth, truth + 5], [&honest, &Answer::Waiting]),
            Ruling::Wait
        );
        // Children that do not sum to the claim one level up: the true divide under a lie.
        assert_eq!(
            rule(&pos, [truth + 5, truth], [&honest, &honest]),
            Ruling::Convict(vec![Side::A])
        );
        // A missing move, a made-up move.
        let mut short = divide(&pos, 3);
        let (_, n) = short.pop().unwrap();
        short[0].1 += n;
        assert!(contradiction(&pos, truth, &short).is_some());
        let mut renamed = divide(&pos, 3);
        renamed[0].0 = "a1a8".into();
        assert!(contradiction(&pos, truth, &renamed).is_some());
        assert_eq!(contradiction(&pos, truth, &divide(&pos, 3)), None);
    }

    #[test]
    fn two_honest_sides_convict_nobody() {
        let pos = start();
        let truth = perft(&pos, 3);
        let mut reordered = divide(&pos, 3);
        reordered.reverse();
        let (a, b) = (Answer::Divide(divide(&pos, 3)), Answer::Divide(reordered));
        assert_eq!(rule(&pos, [truth, truth], [&a, &b]), Ruling::NoDifference);
        assert!(wrong_at_leaf(truth, [truth, truth]).is_empty());
    }
}
