//! The search proper: negamax with principal-variation search, fail-soft, scores from the side
//! to move's point of view in centipawns, mates encoded as `MATE - plies`.

use super::eval::{evaluate, has_non_pawn_material, insufficient_material, ordering_value};
use super::tt::{Bound, Entry, TranspositionTable};
use super::{Analysis, Score, captured_role, white_view};
use crate::chess_move::{Move, MoveKind};
use crate::position::Position;
use crate::types::Role;

/// Deepest ply the search ever reaches (nominal depth, extensions and quiescence together).
const MAX_PLY: usize = 128;
/// Larger than any score.
const INFINITY: i32 = 32_000;
/// The score of delivering mate now; mate in `n` plies scores `MATE - n`.
const MATE: i32 = 31_000;
/// Scores beyond this magnitude are mates.
const MATE_BOUND: i32 = MATE - MAX_PLY as i32;

/// Move-ordering tiers: the hash move, then captures, then killers, then quiet moves by history.
const ORDER_HASH: i32 = 1 << 30;
const ORDER_CAPTURE: i32 = 1 << 28;
const ORDER_KILLER: i32 = 1 << 27;
/// History scores are halved when one reaches this, so quiet moves never outrank killers.
const HISTORY_MAX: i32 = 1 << 20;

/// The search state of one [`super::analyse`] call.
pub(crate) struct Searcher {
    tt: TranspositionTable,
    killers: [[Option<Move>; 2]; MAX_PLY],
    /// History heuristic by side, from-square and to-square.
    history: Box<[[[i32; 64]; 64]; 2]>,
    nodes: u64,
    /// Zobrist keys of the positions from the root to the current node, for repetition checks.
    path: Vec<u64>,
    /// Triangular principal-variation table: `pv[ply]` holds the line from `ply` onwards.
    pv: Box<[[Option<Move>; MAX_PLY]; MAX_PLY]>,
    pv_len: [usize; MAX_PLY],
    /// The previous iteration's best move, searched first at the root.
    root_best: Option<Move>,
}

impl Searcher {
    /// A fresh searcher with an empty table of `hash_mib` MiB.
    pub fn new(hash_mib: usize) -> Searcher {
        Searcher {
            tt: TranspositionTable::with_bytes(hash_mib.max(1) << 20),
            killers: [[None; 2]; MAX_PLY],
            history: Box::new([[[0; 64]; 64]; 2]),
            nodes: 0,
            path: Vec::with_capacity(MAX_PLY + 1),
            pv: Box::new([[None; MAX_PLY]; MAX_PLY]),
            pv_len: [0; MAX_PLY],
            root_best: None,
        }
    }

    /// Iterative deepening to `depth`; every iteration completes, so the result is that of the
    /// last one.
    pub fn run(mut self, root: &Position, depth: u32) -> Analysis {
        let mut score = 0;
        let mut pv = Vec::new();
        for d in 1..=depth as i32 {
            self.path.clear();
            self.path.push(root.hash());
            score = self.negamax(root, d, -INFINITY, INFINITY, 0, true);
            pv = self.pv[0][..self.pv_len[0]]
                .iter()
                .flatten()
                .copied()
                .collect();
            self.root_best = pv.first().copied();
        }
        Analysis {
            score: white_view(root, to_score(score)),
            best_move: pv.first().copied(),
            pv,
            nodes: self.nodes,
            depth,
            wdl: None,
            depths: Vec::new(),
        }
    }

    /// True when the current node (the last entry of `path`) is a draw regardless of the moves.
    fn is_draw(&self, pos: &Position) -> bool {
        if pos.halfmove_clock() >= 100 || insufficient_material(pos) {
            return true;
        }
        // Only positions since the last capture or pawn move can repeat, and only with the same
        // side to move, so step back two plies at a time. A single repetition inside the tree is
        // scored as a draw: if the line is good for neither side to leave, it would repeat again.
        let len = self.path.len();
        let reach = (pos.halfmove_clock() as usize).min(len - 1);
        let key = pos.hash();
        (4..=reach)
            .step_by(2)
            .any(|back| self.path[len - 1 - back] == key)
    }

    fn negamax(
        &mut self,
        pos: &Position,
        mut depth: i32,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        allow_null: bool,
    ) -> i32 {
        self.pv_len[ply] = ply;
        let in_check = pos.is_check();
        if ply > 0 {
            if self.is_draw(pos) {
                self.nodes += 1;
                return 0;
            }
            // Mate-distance pruning: no line from here can beat a mate already found nearer the
            // root.
            alpha = alpha.max(-MATE + ply as i32);
            beta = beta.min(MATE - ply as i32 - 1);
            if alpha >= beta {
                self.nodes += 1;
                return alpha;
            }
        }
        if in_check {
            // Check extension: never stop the search with a check on the board.
            depth += 1;
        }
        if depth <= 0 || ply >= MAX_PLY - 2 {
            return self.quiescence(pos, alpha, beta, ply);
        }
        self.nodes += 1;
        let pv_node = beta - alpha > 1;
        let key = pos.hash();
        let entry = self.tt.probe(key);
        if let Some(e) = entry
            && ply > 0
            && !pv_node
            && e.depth >= depth
        {
            let score = score_from_tt(e.score, ply);
            let usable = match e.bound {
                Bound::Exact => true,
                Bound::Lower => score >= beta,
                Bound::Upper => score <= alpha,
            };
            if usable {
                return score;
            }
        }

        // Null-move pruning: if passing still leaves us at or above beta, a real move would too.
        // Skipped in check (passing is illegal) and without pieces (zugzwang).
        if allow_null
            && !pv_node
            && !in_check
            && depth >= 3
            && has_non_pawn_material(pos, pos.side_to_move())
        {
            let static_eval = evaluate(pos);
            if static_eval >= beta {
                let reduction = 2 + depth / 6;
                let child = pos.pass();
                self.path.push(child.hash());
                let score = -self.negamax(
                    &child,
                    depth - 1 - reduction,
                    -beta,
                    -beta + 1,
                    ply + 1,
                    false,
                );
                self.path.pop();
                if score >= beta {
                    return if score >= MATE_BOUND { beta } else { score };
                }
            }
        }

        let mut moves = canonical_moves(pos);
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let hash_move = if ply == 0 {
            self.root_best
        } else {
            entry.and_then(|e| e.best_move)
        };
        let mut order = self.order_scores(pos, &moves, hash_move, ply);
        let alpha_orig = alpha;
        let mut best = -INFINITY;
        let mut best_move = None;
        let moves = moves.as_mut_slice();
        for i in 0..moves.len() {
            pick_best(moves, &mut order, i);
            let m = moves[i];
            let child = pos.play(m);
            let quiet =
                captured_role(pos, m).is_none() && !matches!(m.kind(), MoveKind::Promotion(_));
            self.path.push(child.hash());
            let score = if i == 0 {
                -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1, true)
            } else {
                // Late-move reductions: quiet moves ordered late are rarely best; search them
                // shallower and with a null window, and re-search only if they surprise.
                let reduction = if depth >= 3 && i >= 3 && quiet && !in_check && !child.is_check() {
                    1 + i32::from(depth >= 6 && i >= 8)
                } else {
                    0
                };
                let mut s = -self.negamax(
                    &child,
                    depth - 1 - reduction,
                    -alpha - 1,
                    -alpha,
                    ply + 1,
                    true,
                );
                if s > alpha && reduction > 0 {
                    s = -self.negamax(&child, depth - 1, -alpha - 1, -alpha, ply + 1, true);
                }
                if s > alpha && s < beta {
                    s = -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1, true);
                }
                s
            };
            self.path.pop();
            if score > best {
                best = score;
                best_move = Some(m);
                if score > alpha {
                    alpha = score;
                    self.update_pv(ply, m);
                    if score >= beta {
                        if quiet {
                            self.reward_quiet(pos, m, depth, ply);
                        }
                        break;
                    }
                }
            }
        }
        let bound = if best >= beta {
            Bound::Lower
        } else if best > alpha_orig {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt.store(Entry {
            key,
            best_move,
            score: score_to_tt(best, ply),
            depth,
            bound,
        });
        best
    }

    /// Searches captures (and queen promotions) until the position is quiet, so that the static
    /// evaluation is never taken in the middle of an exchange. In check, every evasion is tried.
    fn quiescence(&mut self, pos: &Position, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.nodes += 1;
        self.pv_len[ply] = ply;
        if insufficient_material(pos) {
            return 0;
        }
        let in_check = pos.is_check();
        if ply >= MAX_PLY - 1 {
            return if in_check { 0 } else { evaluate(pos) };
        }
        let mut best = -INFINITY;
        if !in_check {
            // Stand pat: the side to move is not obliged to capture.
            best = evaluate(pos);
            if best >= beta {
                return best;
            }
            alpha = alpha.max(best);
        }
        let all = canonical_moves(pos);
        if all.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let mut moves = crate::movegen::MoveList::new();
        for &m in all.iter() {
            if in_check
                || captured_role(pos, m).is_some()
                || m.kind() == MoveKind::Promotion(Role::Queen)
            {
                moves.push(m);
            }
        }
        let mut order = self.order_scores(pos, &moves, None, ply);
        let moves = moves.as_mut_slice();
        for i in 0..moves.len() {
            pick_best(moves, &mut order, i);
            let child = pos.play(moves[i]);
            let score = -self.quiescence(&child, -beta, -alpha, ply + 1);
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }

    /// Ordering keys for `moves`, larger first.
    fn order_scores(
        &self,
        pos: &Position,
        moves: &[Move],
        hash_move: Option<Move>,
        ply: usize,
    ) -> Vec<i32> {
        let side = pos.side_to_move().index();
        moves
            .iter()
            .map(|&m| {
                if Some(m) == hash_move {
                    return ORDER_HASH;
                }
                let promotion = match m.kind() {
                    MoveKind::Promotion(role) => ordering_value(role),
                    _ => 0,
                };
                if let Some(victim) = captured_role(pos, m) {
                    // Most valuable victim first, then least valuable attacker.
                    let attacker = pos.role_at(m.from_index()).map_or(0, ordering_value);
                    return ORDER_CAPTURE + 16 * (ordering_value(victim) + promotion)
                        - attacker / 16;
                }
                if promotion > 0 {
                    return ORDER_CAPTURE + 16 * promotion;
                }
                if self.killers[ply][0] == Some(m) {
                    return ORDER_KILLER + 1;
                }
                if self.killers[ply][1] == Some(m) {
                    return ORDER_KILLER;
                }
                self.history[side][m.from_index() as usize][m.to_index() as usize]
            })
            .collect()
    }

    /// A quiet move caused a cutoff: remember it as a killer at this ply and in the history.
    fn reward_quiet(&mut self, pos: &Position, m: Move, depth: i32, ply: usize) {
        if self.killers[ply][0] != Some(m) {
            self.killers[ply][1] = self.killers[ply][0];
            self.killers[ply][0] = Some(m);
        }
        let side = pos.side_to_move().index();
        let slot = &mut self.history[side][m.from_index() as usize][m.to_index() as usize];
        *slot += depth * depth;
        if *slot >= HISTORY_MAX {
            for row in self.history[side].iter_mut() {
                for h in row.iter_mut() {
                    *h /= 2;
                }
            }
        }
    }

    /// `m` became the best move at `ply`: the PV here is `m` followed by the child's PV.
    fn update_pv(&mut self, ply: usize, m: Move) {
        self.pv[ply][ply] = Some(m);
        let child_len = self.pv_len[ply + 1].max(ply + 1);
        for i in ply + 1..child_len {
            self.pv[ply][i] = self.pv[ply + 1][i];
        }
        self.pv_len[ply] = child_len;
    }
}

/// The legal moves in a fixed order (by encoding), so that the search, and so every replica's
/// result, does not depend on the order the move generator happens to produce.
fn canonical_moves(pos: &Position) -> crate::movegen::MoveList {
    let mut moves = pos.legal_moves();
    moves.as_mut_slice().sort_unstable_by_key(|m| m.to_u16());
    moves
}

/// Moves the best-ordered remaining move to index `i` (selection sort, one step per move tried:
/// cheap because most nodes cut off after a few moves).
fn pick_best(moves: &mut [Move], order: &mut [i32], i: usize) {
    let mut best = i;
    for j in i + 1..moves.len() {
        // Strictly greater keeps generation order among equals, which keeps the search
        // reproducible.
        if order[j] > order[best] {
            best = j;
        }
    }
    moves.swap(i, best);
    order.swap(i, best);
}

/// Mate scores are stored relative to the node, not the root, so that a table hit at another
/// ply reports the right distance.
fn score_to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score + ply as i32
    } else if score <= -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

fn score_from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score - ply as i32
    } else if score <= -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

/// Search units to a [`Score`] for the side to move: mate in plies becomes mate in moves.
fn to_score(score: i32) -> Score {
    if score >= MATE_BOUND {
        Score::Mate((MATE - score + 1) / 2)
    } else if score <= -MATE_BOUND {
        Score::Mate(-(MATE + score) / 2)
    } else {
        Score::Cp(score)
    }
}
