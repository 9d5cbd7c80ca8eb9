//! Result digests: SHA-256 over a canonical byte encoding of (workunit, result): for perft the
//! counts and divide, for analysis the score, best move, PV, nodes, WDL and engine id.
//!
//! Replicas are compared by digest, and the coordinator recomputes the digest of every submitted
//! payload and refuses a mismatch. The encoding is written out by hand (not bincode) so that it is
//! fixed forever and easy to reimplement; `docs/protocol.md` specifies it:
//!
//! ```text
//! "c960-result-v1"                 14 ASCII bytes (domain separation)
//! workunit_id                      u64 big-endian
//! kind tag                         u8: 1 = perft, 2 = analysis
//!   position tag                   u8: 1 = start position, 2 = FEN
//!     start position               u16 big-endian
//!     FEN                          u32 big-endian byte length, UTF-8 bytes
//!   depth                          u32 big-endian
//!   (analysis only) engine tag     u8: 1 = built-in, 2 = UCI
//!   (analysis only) hash MiB       u32 big-endian
//! then, for a perft result:
//! nodes                            u64 big-endian
//! divide entry count               u32 big-endian
//! per entry, sorted by move bytes  u32 big-endian length, UTF-8 move, u64 big-endian count
//! or, for an analysis result:
//! result tag                       u8: 0xA1
//! engine id                        u32 big-endian length, UTF-8 bytes
//! score_cp                         u8 0 (absent) or 1 followed by i32 big-endian
//! mate                             u8 0 (absent) or 1 followed by i32 big-endian
//! best move                        u32 big-endian length (0 = none), UTF-8 bytes
//! pv move count                    u32 big-endian; per move u32 length, UTF-8 bytes (in order)
//! nodes                            u64 big-endian
//! wdl                              u8 0 (absent) or 1 followed by win, draw, loss as u16 BE
//! (result tag 0xA2 only) depth count u32 big-endian; per completed depth, shallowest first:
//!   depth u32, score_cp and mate as above, nodes u64, wdl as above
//! ```
//!
//! A self-play workunit (protocol 4) encodes its kind and result as
//!
//! ```text
//! kind tag                         u8: 3 = self-play
//!   position                       as above
//!   games u32, nodes per move u64, engine tag u8, hash MiB u32, opening plies u32,
//!   move cap u32, seed u64         all big-endian
//! result tag                       u8: 0xB1
//! engine id                        u32 big-endian length, UTF-8 bytes
//! nodes                            u64 big-endian
//! white wins, draws, black wins    u32 big-endian each
//! game count                       u32 big-endian; per game, in order: u32 length, PGN bytes
//! ```
//!
//! The result tag is 0xA1 when the result has no per-depth records (the built-in searcher), so
//! those digests are unchanged from protocol 2, and 0xA2 when it has them.
//!
//! The perft encoding is unchanged from protocol 1, so stored perft digests stay comparable.
//! Elapsed time and the worker's build name are not digested: honest replicas differ in them.
//! The analysis engine id is digested on purpose: different engines (or builds) legitimately
//! disagree, and must never be counted as one quorum.

use sha2::{Digest as _, Sha256};

use crate::wire::{
    AnalysisEngine, AnalysisResult, PerftResult, PositionSpec, SelfPlayResult, WorkResult,
    WorkUnitKind,
};

/// The canonical byte encoding of a result, the input of [`result_digest`].
pub fn canonical_bytes(workunit_id: u64, kind: &WorkUnitKind, result: &WorkResult) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"c960-result-v1");
    out.extend_from_slice(&workunit_id.to_be_bytes());
    match kind {
        WorkUnitKind::Perft { position, depth } => {
            out.push(1);
            push_position(&mut out, position);
            out.extend_from_slice(&depth.to_be_bytes());
        }
        WorkUnitKind::Analysis {
            position,
            depth,
            engine,
            hash_mib,
        } => {
            out.push(2);
            push_position(&mut out, position);
            out.extend_from_slice(&depth.to_be_bytes());
            out.push(engine_tag(*engine));
            out.extend_from_slice(&hash_mib.to_be_bytes());
        }
        WorkUnitKind::SelfPlay {
            position,
            games,
            nodes,
            engine,
            hash_mib,
            opening_plies,
            max_plies,
            seed,
        } => {
            out.push(3);
            push_position(&mut out, position);
            out.extend_from_slice(&games.to_be_bytes());
            out.extend_from_slice(&nodes.to_be_bytes());
            out.push(engine_tag(*engine));
            out.extend_from_slice(&hash_mib.to_be_bytes());
            out.extend_from_slice(&opening_plies.to_be_bytes());
            out.extend_from_slice(&max_plies.to_be_bytes());
            out.extend_from_slice(&seed.to_be_bytes());
        }
    }
    match result {
        WorkResult::Perft(r) => push_perft(&mut out, r),
        WorkResult::Analysis(r) => push_analysis(&mut out, r),
        WorkResult::SelfPlay(r) => push_self_play(&mut out, r),
    }
    out
}

fn engine_tag(engine: AnalysisEngine) -> u8 {
    match engine {
        AnalysisEngine::Builtin => 1,
        AnalysisEngine::Uci => 2,
    }
}

fn push_self_play(out: &mut Vec<u8>, r: &SelfPlayResult) {
    out.push(0xB1);
    push_bytes(out, r.engine_id.as_bytes());
    out.extend_from_slice(&r.nodes.to_be_bytes());
    for n in [r.white_wins, r.draws, r.black_wins] {
        out.extend_from_slice(&n.to_be_bytes());
    }
    out.extend_from_slice(&(r.games.len() as u32).to_be_bytes());
    for g in &r.games {
        push_bytes(out, g.as_bytes());
    }
}

fn push_position(out: &mut Vec<u8>, position: &PositionSpec) {
    match position {
        PositionSpec::StartPosition(n) => {
            out.push(1);
            out.extend_from_slice(&n.to_be_bytes());
        }
        PositionSpec::Fen(fen) => {
            out.push(2);
            push_bytes(out, fen.as_bytes());
        }
    }
}

fn push_perft(out: &mut Vec<u8>, result: &PerftResult) {
    out.extend_from_slice(&result.nodes.to_be_bytes());
    let mut divide: Vec<&(String, u64)> = result.divide.iter().collect();
    divide.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(&b.1)));
    out.extend_from_slice(&(divide.len() as u32).to_be_bytes());
    for (m, n) in divide {
        push_bytes(out, m.as_bytes());
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn push_opt_i32(out: &mut Vec<u8>, v: Option<i32>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
}

fn push_analysis(out: &mut Vec<u8>, r: &AnalysisResult) {
    out.push(if r.depths.is_empty() { 0xA1 } else { 0xA2 });
    push_bytes(out, r.engine_id.as_bytes());
    push_opt_i32(out, r.score_cp);
    push_opt_i32(out, r.mate);
    push_bytes(out, r.best_move.as_deref().unwrap_or("").as_bytes());
    out.extend_from_slice(&(r.pv.len() as u32).to_be_bytes());
    for m in &r.pv {
        push_bytes(out, m.as_bytes());
    }
    out.extend_from_slice(&r.nodes.to_be_bytes());
    push_wdl(out, r.wdl);
    if !r.depths.is_empty() {
        out.extend_from_slice(&(r.depths.len() as u32).to_be_bytes());
        for d in &r.depths {
            out.extend_from_slice(&d.depth.to_be_bytes());
            push_opt_i32(out, d.score_cp);
            push_opt_i32(out, d.mate);
            out.extend_from_slice(&d.nodes.to_be_bytes());
            push_wdl(out, d.wdl);
        }
    }
}

fn push_wdl(out: &mut Vec<u8>, wdl: Option<[u16; 3]>) {
    match wdl {
        None => out.push(0),
        Some(w) => {
            out.push(1);
            for v in w {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// SHA-256 of [`canonical_bytes`].
///
/// # Examples
///
/// Replicas agree when their digests do; any change to the result or the workunit changes it.
///
/// ```
/// use c960_common::digest::{result_digest, to_hex};
/// use c960_common::wire::{PerftResult, PositionSpec, WorkResult, WorkUnitKind};
///
/// let kind = WorkUnitKind::Perft { position: PositionSpec::StartPosition(518), depth: 1 };
/// let result = |nodes| WorkResult::Perft(PerftResult { nodes, divide: vec![] });
/// let d = result_digest(7, &kind, &result(20));
/// assert_eq!(to_hex(&d).len(), 64);
/// assert_eq!(d, result_digest(7, &kind, &result(20)));
/// assert_ne!(d, result_digest(7, &kind, &result(21)));
/// assert_ne!(d, result_digest(8, &kind, &result(20)));
/// ```
pub fn result_digest(workunit_id: u64, kind: &WorkUnitKind, result: &WorkResult) -> [u8; 32] {
    Sha256::digest(canonical_bytes(workunit_id, kind, result)).into()
}

/// Lower-case hex of a digest, for logs, JSON and the database.
pub fn to_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::DepthRecord;

    fn kind() -> WorkUnitKind {
        WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 2,
        }
    }

    fn result(divide: Vec<(&str, u64)>) -> WorkResult {
        WorkResult::Perft(PerftResult {
            nodes: divide.iter().map(|d| d.1).sum(),
            divide: divide
                .into_iter()
                .map(|(m, n)| (m.to_string(), n))
                .collect(),
        })
    }

    fn perft(r: &mut WorkResult) -> &mut PerftResult {
        match r {
            WorkResult::Perft(p) => p,
            _ => unreachable!(),
        }
    }

    #[test]
    fn divide_order_does_not_matter() {
        let a = result(vec![("a2a3", 20), ("b2b3", 20)]);
        let b = result(vec![("b2b3", 20), ("a2a3", 20)]);
        assert_eq!(result_digest(1, &kind(), &a), result_digest(1, &kind(), &b));
    }

    #[test]
    fn everything_digested_matters() {
        let base = result(vec![("a2a3", 20), ("b2b3", 20)]);
        let d = result_digest(1, &kind(), &base);
        assert_ne!(d, result_digest(2, &kind(), &base));
        let other_depth = WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 3,
        };
        assert_ne!(d, result_digest(1, &other_depth, &base));
        let mut n = base.clone();
        perft(&mut n).nodes += 1;
        assert_ne!(d, result_digest(1, &kind(), &n));
        let mut m = base.clone();
        perft(&mut m).divide[0].1 += 1;
        assert_ne!(d, result_digest(1, &kind(), &m));
    }

    #[test]
    fn fixed_vector() {
        // Pins the encoding: changing it silently would split every quorum across versions.
        let bytes = canonical_bytes(1, &kind(), &result(vec![("a2a3", 20)]));
        assert_eq!(bytes.len(), 14 + 8 + 1 + 1 + 2 + 4 + 8 + 4 + 4 + 4 + 8);
        assert_eq!(&bytes[..14], b"c960-result-v1");
    }

    fn analysis_kind(engine: AnalysisEngine) -> WorkUnitKind {
        WorkUnitKind::Analysis {
            position: PositionSpec::StartPosition(518),
            depth: 4,
            engine,
            hash_mib: 16,
        }
    }

    fn analysis() -> AnalysisResult {
        AnalysisResult {
            score_cp: Some(25),
            mate: None,
            best_move: Some("e2e4".into()),
            pv: vec!["e2e4".into(), "e7e5".into()],
            nodes: 12345,
            wdl: None,
            engine_id: "c960-builtin 0.1.0-s2".into(),
            depths: Vec::new(),
        }
    }

    fn depth(depth: u32, cp: i32) -> DepthRecord {
        DepthRecord {
            depth,
            score_cp: Some(cp),
            mate: None,
            wdl: Some([40, 950, 10]),
            nodes: u64::from(depth) * 1000,
        }
    }

    #[test]
    fn analysis_fields_are_digested() {
        let k = analysis_kind(AnalysisEngine::Builtin);
        let base = WorkResult::Analysis(analysis());
        let d = result_digest(7, &k, &base);
        assert_eq!(d, result_digest(7, &k, &base.clone()));
        assert_ne!(
            d,
            result_digest(7, &analysis_kind(AnalysisEngine::Uci), &base)
        );
        let variants: Vec<fn(&mut AnalysisResult)> = vec![
            |a| a.score_cp = Some(26),
            |a| {
                a.score_cp = None;
                a.mate = Some(25)
            },
            |a| a.best_move = Some("d2d4".into()),
            |a| a.pv.push("g1f3".into()),
            |a| a.nodes += 1,
            |a| a.wdl = Some([1, 998, 1]),
            |a| a.engine_id = "Stockfish 15.1".into(),
            |a| a.depths.push(depth(1, 25)),
        ];
        for change in variants {
            let mut a = analysis();
            change(&mut a);
            assert_ne!(d, result_digest(7, &k, &WorkResult::Analysis(a)));
        }
    }

    #[test]
    fn every_depth_record_is_digested() {
        let k = analysis_kind(AnalysisEngine::Uci);
        let mut base = analysis();
        base.depths = vec![depth(1, 20), depth(2, 25)];
        let d = result_digest(7, &k, &WorkResult::Analysis(base.clone()));
        let variants: Vec<fn(&mut DepthRecord)> = vec![
            |r| r.depth += 1,
            |r| r.score_cp = Some(21),
            |r| {
                r.score_cp = None;
                r.mate = Some(3)
            },
            |r| r.nodes += 1,
            |r| r.wdl = None,
        ];
        for change in variants {
            let mut a = base.clone();
            change(&mut a.depths[0]);
            assert_ne!(d, result_digest(7, &k, &WorkResult::Analysis(a)));
        }
        let mut fewer = base.clone();
        fewer.depths.pop();
        assert_ne!(d, result_digest(7, &k, &WorkResult::Analysis(fewer)));
    }

    #[test]
    fn self_play_kind_and_games_are_digested() {
        let kind = |seed: u64, nodes: u64| WorkUnitKind::SelfPlay {
            position: PositionSpec::StartPosition(518),
            games: 2,
            nodes,
            engine: AnalysisEngine::Uci,
            hash_mib: 16,
            opening_plies: 2,
            max_plies: 400,
            seed,
        };
        let base = SelfPlayResult {
            engine_id: "Stockfish 15.1 [sha256:0123]".into(),
            nodes: 5000,
            white_wins: 1,
            draws: 1,
            black_wins: 0,
            games: vec!["pgn one".into(), "pgn two".into()],
        };
        let d = result_digest(9, &kind(9, 1000), &WorkResult::SelfPlay(base.clone()));
        assert_ne!(
            d,
            result_digest(9, &kind(10, 1000), &WorkResult::SelfPlay(base.clone()))
        );
        assert_ne!(
            d,
            result_digest(9, &kind(9, 1001), &WorkResult::SelfPlay(base.clone()))
        );
        let variants: Vec<fn(&mut SelfPlayResult)> = vec![
            |r| r.engine_id.push('x'),
            |r| r.nodes += 1,
            |r| r.white_wins += 1,
            |r| r.draws += 1,
            |r| r.black_wins += 1,
            |r| r.games[1].push(' '),
            |r| r.games.swap(0, 1),
            |r| r.games[0] = "pgn onepgn".into(),
        ];
        for change in variants {
            let mut r = base.clone();
            change(&mut r);
            assert_ne!(
                d,
                result_digest(9, &kind(9, 1000), &WorkResult::SelfPlay(r))
            );
        }
    }

    #[test]
    fn length_prefixes_keep_fields_apart() {
        // "e2e4" + pv ["e7e5"] must not collide with "e2e4e7e5"-style concatenations.
        let k = analysis_kind(AnalysisEngine::Builtin);
        let mut a = analysis();
        a.engine_id = "ab".into();
        a.best_move = Some("c".into());
        let mut b = analysis();
        b.engine_id = "a".into();
        b.best_move = Some("bc".into());
        assert_ne!(
            result_digest(1, &k, &WorkResult::Analysis(a)),
            result_digest(1, &k, &WorkResult::Analysis(b))
        );
    }
}
