//! Validation: quorum by digest among distinct workers, and the sanity checks a result must pass
//! before it may vote at all. Pure functions, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use c960_common::game::{self, Outcome};
use c960_common::search::ENGINE_ID;
use c960_common::wire::{
    AnalysisEngine, AnalysisResult, PerftResult, PositionSpec, SelfPlayResult, WorkResult,
    WorkUnitKind,
};
use c960_common::{Move, Position, StartPosition};

use crate::model::Digest;

/// One returned result as the validator sees it: who sent it and its digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vote {
    /// The worker that computed it.
    pub worker_id: u64,
    /// Its digest.
    pub digest: Digest,
}

/// Agreeing workers per digest. A worker counts once per digest, so a quorum always means
/// distinct computations even if a worker somehow returned twice.
fn tally(votes: &[Vote]) -> BTreeMap<Digest, BTreeSet<u64>> {
    let mut groups: BTreeMap<Digest, BTreeSet<u64>> = BTreeMap::new();
    for v in votes {
        groups.entry(v.digest).or_default().insert(v.worker_id);
    }
    groups
}

/// The canonical digest if `quorum` distinct workers agree on one, else `None`.
/// If two digests both reach the quorum (only possible with many liars), the larger group
/// wins, ties broken by digest order so the outcome is deterministic.
pub fn find_quorum(quorum: u32, votes: &[Vote]) -> Option<Digest> {
    tally(votes)
        .into_iter()
        .filter(|(_, w)| w.len() as u32 >= quorum.max(1))
        .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)))
        .map(|(d, _)| d)
}

/// Every digest on which at least `quorum` distinct workers agree, in digest order.
pub fn quorum_groups(quorum: u32, votes: &[Vote]) -> Vec<Digest> {
    tally(votes)
        .into_iter()
        .filter(|(_, w)| w.len() as u32 >= quorum.max(1))
        .map(|(d, _)| d)
        .collect()
}

/// The size of the largest group of distinct workers that agree on one digest.
pub fn best_agreement(votes: &[Vote]) -> u32 {
    tally(votes)
        .values()
        .map(|w| w.len() as u32)
        .max()
        .unwrap_or(0)
}

/// Why a result was refused before voting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The workunit's own position cannot be set up (corrupt store).
    #[error("workunit position is invalid: {0}")]
    BadWorkunit(String),
    /// The divide does not list exactly the legal root moves.
    #[error("divide does not list exactly the legal root moves: {0}")]
    Moves(String),
    /// The result is of another kind than the workunit.
    #[error("a {got} result for a {want} workunit")]
    WrongKind {
        /// What the workunit asks for.
        want: &'static str,
        /// What was sent.
        got: &'static str,
    },
    /// The analysis result is impossible (score, moves or engine id).
    #[error("impossible analysis: {0}")]
    Analysis(String),
    /// The self-play result is impossible (games, moves, results or engine id).
    #[error("impossible self-play result: {0}")]
    SelfPlay(String),
    /// A count is above what any position can have at that depth ([`subtree_bound`]).
    #[error("{mv} has {count} nodes, more than any position can have (at most {bound})")]
    Implausible {
        /// The root move.
        mv: String,
        /// Its claimed count.
        count: u64,
        /// The proven ceiling.
        bound: u128,
    },
    /// The divide does not sum to the node count.
    #[error("divide sums to {sum} but nodes is {nodes}")]
    Sum {
        /// Sum of the divide.
        sum: u128,
        /// Claimed total.
        nodes: u64,
    },
}

fn root(position: &PositionSpec) -> Result<Position, ShapeError> {
    Ok(match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n))
            .map_err(|e| ShapeError::BadWorkunit(e.to_string()))?
            .position(),
        PositionSpec::Fen(fen) => {
            Position::from_fen(fen).map_err(|e| ShapeError::BadWorkunit(e.to_string()))?
        }
    })
}

/// Checks a result of either kind against its workunit: the kinds match, and the
/// kind's own shape check ([`check_perft_shape`], [`check_analysis_shape`]) passes.
pub fn check_result_shape(kind: &WorkUnitKind, result: &WorkResult) -> Result<(), ShapeError> {
    match (kind, result) {
        (WorkUnitKind::Perft { .. }, WorkResult::Perft(r)) => check_perft_shape(kind, r),
        (WorkUnitKind::Analysis { .. }, WorkResult::Analysis(r)) => check_analysis_shape(kind, r),
        (WorkUnitKind::SelfPlay { .. }, WorkResult::SelfPlay(r)) => check_self_play_shape(kind, r),
        (_, result) => Err(ShapeError::WrongKind {
            want: kind_name(kind),
            got: match result {
                WorkResult::Perft(_) => "perft",
                WorkResult::Analysis(_) => "analysis",
                WorkResult::SelfPlay(_) => "self-play",
            },
        }),
    }
}

/// The cheap checks of a result, bounded by its size and run before anything dear (the digest,
/// reading games, replaying moves): the kinds match, and a self-play result has the games asked
/// for, each no longer than a game of the workunit's move cap can be
/// ([`check_self_play_bounds`]). Perft and analysis results are bounded by the body limit and
/// their shape checks by the position and [`MAX_PV`].
pub fn check_result_bounds(kind: &WorkUnitKind, result: &WorkResult) -> Result<(), ShapeError> {
    match (kind, result) {
        (WorkUnitKind::SelfPlay { .. }, WorkResult::SelfPlay(r)) => check_self_play_bounds(kind, r),
        (WorkUnitKind::Perft { .. }, WorkResult::Perft(_))
        | (WorkUnitKind::Analysis { .. }, WorkResult::Analysis(_)) => Ok(()),
        (_, result) => Err(ShapeError::WrongKind {
            want: kind_name(kind),
            got: match result {
                WorkResult::Perft(_) => "perft",
                WorkResult::Analysis(_) => "analysis",
                WorkResult::SelfPlay(_) => "self-play",
            },
        }),
    }
}

/// The largest centipawn score accepted: beyond any evaluation, short of a mate.
pub const MAX_SCORE_CP: i32 = 100_000;
/// The longest mate distance (moves) and principal variation (plies) accepted.
pub const MAX_MATE: i32 = 1_000;
/// The longest principal variation accepted, in plies.
pub const MAX_PV: usize = 256;

/// Checks an analysis result without searching again: exactly one of centipawns and mate, in
/// range; the best move legal and first in the PV; every PV move legal in turn; WDL in per
/// mille; an engine id that fits the workunit's engine kind (the built-in id for built-in
/// workunits, anything else for UCI ones), so a worker cannot pass one engine off as the other.
/// A different score or move than the other replicas is for the quorum to catch.
pub fn check_analysis_shape(kind: &WorkUnitKind, r: &AnalysisResult) -> Result<(), ShapeError> {
    let WorkUnitKind::Analysis {
        position, engine, ..
    } = kind
    else {
        return Err(ShapeError::WrongKind {
            want: "perft",
            got: "analysis",
        });
    };
    let bad = |m: String| Err(ShapeError::Analysis(m));
    check_engine_id(*engine, &r.engine_id).map_err(ShapeError::Analysis)?;
    match (r.score_cp, r.mate) {
        (Some(cp), None) if cp.abs() <= MAX_SCORE_CP => {}
        (None, Some(m)) if m.abs() <= MAX_MATE => {}
        other => {
            return bad(format!(
                "score {other:?} is not one centipawn value or mate in range"
            ));
        }
    }
    if r.wdl.is_some_and(|w| w.iter().any(|&v| v > 1000)) {
        return bad("win/draw/loss beyond 1000 per mille".into());
    }
    check_depth_records(kind, r).map_err(ShapeError::Analysis)?;
    if r.pv.len() > MAX_PV {
        return bad(format!("principal variation of {} plies", r.pv.len()));
    }
    let mut pos = root(position)?;
    let has_moves = !pos.legal_moves().as_slice().is_empty();
    match (&r.best_move, has_moves) {
        (None, false) if r.pv.is_empty() => return Ok(()),
        (None, _) => return bad("no best move although moves are legal".into()),
        (Some(_), false) => return bad("a best move although no move is legal".into()),
        (Some(best), true) if r.pv.first() != Some(best) => {
            return bad(format!(
                "the principal variation does not start with {best}"
            ));
        }
        _ => {}
    }
    for (i, m) in r.pv.iter().enumerate() {
        let mv = pos
            .parse_uci_move(m)
            .map_err(|e| ShapeError::Analysis(format!("pv ply {}: {e}", i + 1)))?;
        // Only king-takes-rook castling is canonical: `e1g1` for `e1h1` would digest differently.
        if mv.to_string() != *m {
            return bad(format!("pv ply {}: {m} is not written as {mv}", i + 1));
        }
        pos = pos.play(mv);
    }
    Ok(())
}

/// An engine id that fits the workunit's engine kind: not empty, a label
/// ([`crate::integrity::label::check_label`]: at most 100 bytes, no control, line-break or bidirectional
/// character), the built-in searcher's for built-in workunits and anything else for UCI ones.
fn check_engine_id(engine: AnalysisEngine, id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("the engine id is empty".into());
    }
    crate::integrity::label::check_label(id)
        .map_err(|fault| format!("engine id {id:?} {fault}"))?;
    let builtin = id.starts_with("c960-builtin ");
    match engine {
        AnalysisEngine::Builtin if id != ENGINE_ID && !builtin => {
            Err(format!("engine id {id:?} is not the built-in searcher"))
        }
        AnalysisEngine::Uci if builtin => Err(format!(
            "engine id {id:?} is the built-in searcher, not a UCI engine"
        )),
        _ => Ok(()),
    }
}

/// The sizes of a self-play result, checked without reading a game: the engine id fits the
/// workunit, exactly the games asked for, and each game's PGN no longer than the canonical PGN
/// of a game of the workunit's move cap can be ([`game::max_pgn_bytes`]).
pub fn check_self_play_bounds(kind: &WorkUnitKind, r: &SelfPlayResult) -> Result<(), ShapeError> {
    let WorkUnitKind::SelfPlay {
        games,
        engine,
        max_plies,
        ..
    } = kind
    else {
        return Err(ShapeError::WrongKind {
            want: kind_name(kind),
            got: "self-play",
        });
    };
    let bad = |m: String| ShapeError::SelfPlay(m);
    check_engine_id(*engine, &r.engine_id).map_err(bad)?;
    if r.games.len() != *games as usize {
        return Err(bad(format!("{} games for {games} asked", r.games.len())));
    }
    let most = game::max_pgn_bytes(*max_plies);
    if let Some((i, text)) = r.games.iter().enumerate().find(|(_, t)| t.len() > most) {
        return Err(bad(format!(
            "game {}: {} bytes, more than a game of {max_plies} plies can take ({most})",
            i + 1,
            text.len()
        )));
    }
    Ok(())
}

/// Checks a self-play result without playing again: its sizes ([`check_self_play_bounds`]);
/// exactly
/// the games asked for, each a PGN that reads back to legal moves from the workunit's start,
/// opens with the seeded plies ([`c960_common::game::openings`]), ends where the rules (or
/// the move cap) end it with the result they give, and is byte for byte the canonical PGN of
/// its moves ([`c960_common::game::to_pgn`], players the engine id, rounds 1..n); and the
/// W/D/L counts are those of the games. Which moves the engine chose is for the quorum.
pub fn check_self_play_shape(kind: &WorkUnitKind, r: &SelfPlayResult) -> Result<(), ShapeError> {
    let WorkUnitKind::SelfPlay {
        position,
        games,
        opening_plies,
        max_plies,
        seed,
        ..
    } = kind
    else {
        return Err(ShapeError::WrongKind {
            want: kind_name(kind),
            got: "self-play",
        });
    };
    let bad = |m: String| ShapeError::SelfPlay(m);
    check_self_play_bounds(kind, r)?;
    let start = root(position)?;
    let openings = game::openings(&start, *seed, *games, *opening_plies);
    let mut wdl = [0u32; 3];
    for (i, (text, opening)) in r.games.iter().zip(&openings).enumerate() {
        let at = |m: String| bad(format!("game {}: {m}", i + 1));
        let parsed = game::parse_pgn_within(text, *max_plies).map_err(at)?;
        if parsed.start != start {
            return Err(at("does not start from the workunit's position".into()));
        }
        if !parsed.moves.starts_with(opening) {
            return Err(at("does not open with the seeded plies".into()));
        }
        let (outcome, termination) = game::check_finished(&parsed, *max_plies).map_err(at)?;
        let played = game::PlayedGame {
            start,
            moves: parsed.moves,
            outcome,
            termination,
        };
        if game::to_pgn(&played, &r.engine_id, i as u32 + 1) != *text {
            return Err(at("is not the canonical PGN of its moves".into()));
        }
        wdl[match outcome {
            Outcome::WhiteWins => 0,
            Outcome::Draw => 1,
            Outcome::BlackWins => 2,
        }] += 1;
    }
    if wdl != [r.white_wins, r.draws, r.black_wins] {
        return Err(bad(format!(
            "W/D/L {}/{}/{} but the games say {}/{}/{}",
            r.white_wins, r.draws, r.black_wins, wdl[0], wdl[1], wdl[2]
        )));
    }
    Ok(())
}

/// `perft`, `analysis` or `self-play`.
fn kind_name(kind: &WorkUnitKind) -> &'static str {
    match kind {
        WorkUnitKind::Perft { .. } => "perft",
        WorkUnitKind::Analysis { .. } => "analysis",
        WorkUnitKind::SelfPlay { .. } => "self-play",
    }
}

/// The per-depth records of an analysis: at most one per depth up to the workunit's depth,
/// strictly ascending, each with one score in range, WDL in per mille and node counts that
/// never go down.
fn check_depth_records(kind: &WorkUnitKind, r: &AnalysisResult) -> Result<(), String> {
    let max_depth = kind.depth().max(1) as usize;
    if r.depths.len() > max_depth.min(MAX_PV) {
        return Err(format!(
            "{} depth records for a depth-{max_depth} search",
            r.depths.len()
        ));
    }
    let mut last: Option<&c960_common::wire::DepthRecord> = None;
    for d in &r.depths {
        let valid_score = match (d.score_cp, d.mate) {
            (Some(cp), None) => cp.abs() <= MAX_SCORE_CP,
            (None, Some(m)) => m.abs() <= MAX_MATE,
            _ => false,
        };
        if !valid_score {
            return Err(format!("depth {}: not one score in range", d.depth));
        }
        if d.wdl.is_some_and(|w| w.iter().any(|&v| v > 1000)) {
            return Err(format!("depth {}: win/draw/loss beyond 1000", d.depth));
        }
        if let Some(prev) = last
            && (d.depth <= prev.depth || d.nodes < prev.nodes)
        {
            return Err(format!(
                "depth {} after depth {}: records out of order",
                d.depth, prev.depth
            ));
        }
        last = Some(d);
    }
    Ok(())
}

/// Most legal moves in one position, with room to spare: 218 is the proven maximum of
/// orthodox chess, and Chess960 castling adds at most two moves (king to g or c).
pub const MAX_MOVES: u128 = 220;

/// The most nodes perft(`child`, `depth`) can have, for the position a root move leads to: 1 at
/// depth 0 and [`MAX_MOVES`] at depth 1; deeper, the child's own legal moves times
/// `MAX_MOVES^(depth - 1)` (each of them has at most that many leaves below it). Saturates
/// beyond u128, so it never wraps. Depth 1 is not counted exactly on purpose: recounting is the
/// quorum's and the known-answer checks' job, this only refuses the impossible.
pub fn subtree_bound(child: &Position, depth: u32) -> u128 {
    match depth {
        0 => 1,
        1 => MAX_MOVES,
        d => (child.legal_moves().as_slice().len() as u128)
            .saturating_mul(MAX_MOVES.saturating_pow(d - 1)),
    }
}

/// Checks what can be checked cheaply without redoing the work: the divide names exactly the
/// legal root moves, once each, each count within [`subtree_bound`], and sums to the node
/// count. Catches broken or careless clients, and counts no position can reach (such as
/// 2^64 - 1 at depth 2), early; wrong counts that pass this are caught by the quorum.
pub fn check_perft_shape(kind: &WorkUnitKind, result: &PerftResult) -> Result<(), ShapeError> {
    let WorkUnitKind::Perft { position, depth } = kind else {
        return Err(ShapeError::WrongKind {
            want: "analysis",
            got: "perft",
        });
    };
    let pos = root(position)?;
    let sum: u128 = result.divide.iter().map(|(_, n)| u128::from(*n)).sum();
    if *depth == 0 {
        return if result.nodes == 1 && result.divide.is_empty() {
            Ok(())
        } else {
            Err(ShapeError::Moves("depth 0 has no divide and 1 node".into()))
        };
    }
    // A few dozen moves: names compared in place, no sets (this runs for every result a
    // coordinator receives).
    let moves = pos.legal_moves();
    let legal: Vec<(String, Move)> = moves
        .as_slice()
        .iter()
        .map(|&m| (m.to_string(), m))
        .collect();
    // For each legal move, the divide's count of it.
    let mut counts: Vec<Option<u64>> = vec![None; legal.len()];
    for (m, c) in &result.divide {
        let Some(i) = legal.iter().position(|(name, _)| name == m) else {
            return Err(ShapeError::Moves(format!("{m} is not a legal root move")));
        };
        if counts[i].replace(*c).is_some() {
            return Err(ShapeError::Moves(format!("{m} listed twice")));
        }
    }
    let listed = counts.iter().flatten().count();
    if listed != legal.len() {
        return Err(ShapeError::Moves(format!(
            "{listed} of {} root moves listed",
            legal.len()
        )));
    }
    for ((name, m), count) in legal.into_iter().zip(counts) {
        let count = count.unwrap_or(0);
        let bound = subtree_bound(&pos.play(m), depth - 1);
        if u128::from(count) > bound {
            return Err(ShapeError::Implausible {
                mv: name,
                count,
                bound,
            });
        }
    }
    if sum != u128::from(result.nodes) {
        return Err(ShapeError::Sum {
            sum,
            nodes: result.nodes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use c960_common::divide;

    fn v(worker_id: u64, d: u8) -> Vote {
        Vote {
            worker_id,
            digest: [d; 32],
        }
    }

    #[test]
    fn quorum_needs_distinct_workers() {
        assert_eq!(find_quorum(2, &[v(1, 1)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(1, 1)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 1)]), Some([1; 32]));
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 2)]), None);
        assert_eq!(find_quorum(2, &[v(1, 1), v(2, 2), v(3, 2)]), Some([2; 32]));
        assert_eq!(find_quorum(3, &[v(1, 1), v(2, 1)]), None);
        assert_eq!(find_quorum(1, &[v(1, 7)]), Some([7; 32]));
    }

    #[test]
    fn best_agreement_counts_workers() {
        assert_eq!(best_agreement(&[]), 0);
        assert_eq!(best_agreement(&[v(1, 1), v(2, 2), v(3, 2), v(3, 2)]), 2);
    }

    fn honest(depth: u32) -> (WorkUnitKind, PerftResult) {
        let kind = WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth,
        };
        let pos = StartPosition::new(518).unwrap().position();
        let d: Vec<(String, u64)> = divide(&pos, depth)
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        let nodes = d.iter().map(|x| x.1).sum();
        (kind, PerftResult { nodes, divide: d })
    }

    #[test]
    fn shape_checks() {
        let (kind, good) = honest(2);
        assert_eq!(check_perft_shape(&kind, &good), Ok(()));
        let mut bad_sum = good.clone();
        bad_sum.nodes += 1;
        assert!(matches!(
            check_perft_shape(&kind, &bad_sum),
            Err(ShapeError::Sum { .. })
        ));
        let mut missing = good.clone();
        let (_, n) = missing.divide.pop().unwrap();
        missing.nodes -= n;
        assert!(matches!(
            check_perft_shape(&kind, &missing),
            Err(ShapeError::Moves(_))
        ));
        let mut dup = good.clone();
        dup.divide[1].0 = dup.divide[0].0.clone();
        assert!(check_perft_shape(&kind, &dup).is_err());
        let mut illegal = good.clone();
        illegal.divide[0].0 = "e2e5".into();
        assert!(check_perft_shape(&kind, &illegal).is_err());
        // Consistent but wrong counts pass the shape check: only the quorum catches them.
        let mut liar = good;
        liar.divide[0].1 += 1;
        liar.nodes += 1;
        assert_eq!(check_perft_shape(&kind, &liar), Ok(()));
    }

    fn honest_at(position: PositionSpec, depth: u32) -> (WorkUnitKind, PerftResult) {
        let pos = root(&position).unwrap();
        let d: Vec<(String, u64)> = divide(&pos, depth)
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        let nodes = d.iter().map(|x| x.1).sum();
        (
            WorkUnitKind::Perft { position, depth },
            PerftResult { nodes, divide: d },
        )
    }

    #[test]
    fn impossible_counts_are_refused() {
        // perft(2) = 2^64 - 1, the count that was once validated and exported.
        let (kind, good) = honest(2);
        let mut max = good.clone();
        let rest: u64 = max.divide[1..].iter().map(|x| x.1).sum();
        max.divide[0].1 = u64::MAX - rest;
        max.nodes = u64::MAX;
        assert!(matches!(
            check_perft_shape(&kind, &max),
            Err(ShapeError::Implausible { bound: 220, .. })
        ));
        // Depth 1: one node per root move, at most.
        let (k1, mut one) = honest(1);
        one.divide[0].1 = 2;
        one.nodes += 1;
        assert!(matches!(
            check_perft_shape(&k1, &one),
            Err(ShapeError::Implausible { bound: 1, .. })
        ));
        // Deeper: exactly at the child's bound passes the shape check, one more does not.
        let (k3, good3) = honest(3);
        let pos = StartPosition::new(518).unwrap().position();
        let first = pos
            .legal_moves()
            .as_slice()
            .iter()
            .copied()
            .find(|m| m.to_string() == good3.divide[0].0)
            .unwrap();
        let bound = subtree_bound(&pos.play(first), 2);
        assert_eq!(
            bound,
            20 * 220,
            "every reply of 518's first move leaves 20 moves"
        );
        let mut at = good3.clone();
        at.nodes = at.nodes - at.divide[0].1 + bound as u64;
        at.divide[0].1 = bound as u64;
        assert_eq!(check_perft_shape(&k3, &at), Ok(()));
        at.divide[0].1 += 1;
        at.nodes += 1;
        assert!(matches!(
            check_perft_shape(&k3, &at),
            Err(ShapeError::Implausible { .. })
        ));
        // Saturation instead of wrapping far beyond u128.
        assert_eq!(subtree_bound(&pos, 40), u128::MAX);
    }

    #[test]
    fn honest_counts_are_within_the_bound() {
        for sp in [0, 1, 518, 959] {
            for depth in 1..=4 {
                let (kind, r) = honest_at(PositionSpec::StartPosition(sp), depth);
                assert_eq!(check_perft_shape(&kind, &r), Ok(()), "{sp} depth {depth}");
            }
        }
        // Positions with many moves (a split sub-position and a dense middlegame).
        for fen in [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1",
        ] {
            for depth in 1..=3 {
                let (kind, r) = honest_at(PositionSpec::Fen(fen.into()), depth);
                if depth == 1 && fen.starts_with("R6R") {
                    assert_eq!(r.nodes, 218, "the most moves of any position");
                }
                assert_eq!(check_perft_shape(&kind, &r), Ok(()), "{fen} depth {depth}");
            }
        }
    }

    fn analysis_kind(engine: AnalysisEngine) -> WorkUnitKind {
        WorkUnitKind::Analysis {
            position: PositionSpec::StartPosition(518),
            depth: 3,
            engine,
            hash_mib: 1,
        }
    }

    fn builtin_result() -> AnalysisResult {
        let pos = StartPosition::new(518).unwrap().position();
        let a = c960_common::search::analyse(
            &pos,
            &c960_common::search::SearchLimits {
                depth: 3,
                hash_mib: 1,
            },
        );
        AnalysisResult {
            score_cp: a.score.cp(),
            mate: a.score.mate(),
            best_move: a.best_move.map(|m| m.to_string()),
            pv: a.pv.iter().map(|m| m.to_string()).collect(),
            nodes: a.nodes,
            wdl: None,
            engine_id: ENGINE_ID.into(),
            depths: Vec::new(),
        }
    }

    fn depth_record(depth: u32, cp: i32, nodes: u64) -> c960_common::wire::DepthRecord {
        c960_common::wire::DepthRecord {
            depth,
            score_cp: Some(cp),
            mate: None,
            wdl: Some([30, 960, 10]),
            nodes,
        }
    }

    #[test]
    fn analysis_shape_checks() {
        let k = analysis_kind(AnalysisEngine::Builtin);
        let good = builtin_result();
        assert_eq!(check_analysis_shape(&k, &good), Ok(()));
        assert_eq!(
            check_result_shape(&k, &WorkResult::Analysis(good.clone())),
            Ok(())
        );
        let (pk, pr) = honest(1);
        assert!(matches!(
            check_result_shape(&k, &WorkResult::Perft(pr.clone())),
            Err(ShapeError::WrongKind { .. })
        ));
        assert!(matches!(
            check_result_shape(&pk, &WorkResult::Analysis(good.clone())),
            Err(ShapeError::WrongKind { .. })
        ));
        // A built-in result passed off as a UCI engine, and a UCI id on a built-in workunit.
        assert!(check_analysis_shape(&analysis_kind(AnalysisEngine::Uci), &good).is_err());
        let mut sf = good.clone();
        sf.engine_id = "Stockfish 15.1".into();
        assert!(check_analysis_shape(&k, &sf).is_err());
        assert_eq!(
            check_analysis_shape(&analysis_kind(AnalysisEngine::Uci), &sf),
            Ok(())
        );
        let mut with_depths = good.clone();
        with_depths.depths = (1..=3).map(|d| depth_record(d, 10, u64::from(d))).collect();
        assert_eq!(check_analysis_shape(&k, &with_depths), Ok(()));
        let changes: Vec<fn(&mut AnalysisResult)> = vec![
            |a| a.mate = Some(3),
            |a| {
                a.score_cp = None;
                a.mate = None
            },
            |a| a.score_cp = Some(MAX_SCORE_CP + 1),
            |a| a.best_move = Some("e2e5".into()),
            |a| a.best_move = None,
            |a| a.pv.insert(0, "a2a3".into()),
            |a| a.pv.push("a1a8".into()),
            |a| a.wdl = Some([1001, 0, 0]),
            |a| a.engine_id = String::new(),
            |a| a.depths = vec![depth_record(2, 10, 50), depth_record(2, 12, 60)],
            |a| a.depths = vec![depth_record(2, 10, 50), depth_record(3, 12, 40)],
            |a| a.depths = vec![depth_record(1, MAX_SCORE_CP + 1, 5)],
            |a| a.depths = (1..=4).map(|d| depth_record(d, 0, u64::from(d))).collect(),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut a = good.clone();
            change(&mut a);
            assert!(check_analysis_shape(&k, &a).is_err(), "change {i}");
        }
    }
}
