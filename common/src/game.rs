//! Games: the end of a game by the rules (mate, stalemate, threefold repetition, the fifty-move
//! rule, insufficient material) or a move cap, standard algebraic notation (SAN), Chess960 PGN
//! written and read back, and the seeded choice of opening plies that makes the games of one
//! self-play workunit differ from each other while every replica plays the same ones.
//!
//! Pure: an engine enters only as the `choose` callback of [`play_game`].

use std::collections::HashSet;
use std::fmt;

use crate::chess_move::{Move, MoveKind};
use crate::fen::CastlingNotation;
use crate::position::Position;
use crate::search::eval::insufficient_material;
use crate::search::is_capture;
use crate::types::{Color, Role};
use crate::zobrist::ZobristKey;

/// Plies chosen at random (uniformly among the legal moves, by a PRNG seeded from the
/// workunit) at the start of every self-play game: one move for each side.
pub const OPENING_PLIES: u32 = 2;

/// The move cap of a self-play game in plies; a game reaching it is adjudicated a draw.
pub const MAX_PLIES: u32 = 400;

/// How a game ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// 1-0.
    WhiteWins,
    /// ½-½.
    Draw,
    /// 0-1.
    BlackWins,
}

impl Outcome {
    /// The PGN result token: `1-0`, `1/2-1/2` or `0-1`.
    pub fn pgn(self) -> &'static str {
        match self {
            Outcome::WhiteWins => "1-0",
            Outcome::Draw => "1/2-1/2",
            Outcome::BlackWins => "0-1",
        }
    }

    /// The inverse of [`Outcome::pgn`].
    pub fn parse(token: &str) -> Option<Outcome> {
        match token {
            "1-0" => Some(Outcome::WhiteWins),
            "1/2-1/2" => Some(Outcome::Draw),
            "0-1" => Some(Outcome::BlackWins),
            _ => None,
        }
    }
}

/// Why a game ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The side to move is mated.
    Checkmate,
    /// The side to move has no legal move and is not in check.
    Stalemate,
    /// The position occurred for the third time (same pieces, side, castling and en passant).
    Repetition,
    /// A hundred plies without a capture or a pawn move.
    FiftyMoves,
    /// Neither side can mate: bare kings, or one minor piece against a bare king.
    InsufficientMaterial,
    /// The game reached the move cap ([`MAX_PLIES`]) and is adjudicated a draw.
    MoveCap,
}

impl Termination {
    /// The text of the PGN `Termination` tag.
    pub fn name(self) -> &'static str {
        match self {
            Termination::Checkmate => "checkmate",
            Termination::Stalemate => "stalemate",
            Termination::Repetition => "threefold repetition",
            Termination::FiftyMoves => "fifty-move rule",
            Termination::InsufficientMaterial => "insufficient material",
            Termination::MoveCap => "move cap",
        }
    }

    /// The inverse of [`Termination::name`].
    pub fn parse(text: &str) -> Option<Termination> {
        [
            Termination::Checkmate,
            Termination::Stalemate,
            Termination::Repetition,
            Termination::FiftyMoves,
            Termination::InsufficientMaterial,
            Termination::MoveCap,
        ]
        .into_iter()
        .find(|t| t.name() == text)
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A game in progress: the start, the moves, and the positions seen (for repetitions).
#[derive(Clone, Debug)]
pub struct Game {
    start: Position,
    current: Position,
    moves: Vec<Move>,
    keys: Vec<ZobristKey>,
}

impl Game {
    /// A game from `start`.
    pub fn new(start: Position) -> Game {
        Game {
            start,
            current: start,
            moves: Vec::new(),
            keys: vec![start.hash128()],
        }
    }

    /// The start position.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The position now.
    pub fn current(&self) -> &Position {
        &self.current
    }

    /// The moves played so far.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Plays a move, which must be legal in [`Game::current`].
    pub fn play(&mut self, m: Move) {
        self.current = self.current.play(m);
        self.moves.push(m);
        self.keys.push(self.current.hash128());
    }

    /// The end of the game in the current position, if it has ended: by the rules, in this
    /// order (mate and stalemate, insufficient material, threefold repetition, the fifty-move
    /// rule — mate on the hundredth ply still counts), else by the cap of `max_plies` plies.
    pub fn adjudicate(&self, max_plies: u32) -> Option<(Outcome, Termination)> {
        let pos = &self.current;
        if pos.legal_moves().is_empty() {
            if pos.is_check() {
                let winner = match pos.side_to_move() {
                    Color::White => Outcome::BlackWins,
                    Color::Black => Outcome::WhiteWins,
                };
                return Some((winner, Termination::Checkmate));
            }
            return Some((Outcome::Draw, Termination::Stalemate));
        }
        if insufficient_material(pos) {
            return Some((Outcome::Draw, Termination::InsufficientMaterial));
        }
        let now = pos.hash128();
        if self.keys.iter().filter(|&&k| k == now).count() >= 3 {
            return Some((Outcome::Draw, Termination::Repetition));
        }
        if pos.halfmove_clock() >= 100 {
            return Some((Outcome::Draw, Termination::FiftyMoves));
        }
        if self.moves.len() as u32 >= max_plies {
            return Some((Outcome::Draw, Termination::MoveCap));
        }
        None
    }
}

/// A finished game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedGame {
    /// The start position.
    pub start: Position,
    /// Every move, in order.
    pub moves: Vec<Move>,
    /// The result.
    pub outcome: Outcome,
    /// Why it ended.
    pub termination: Termination,
}

/// Plays a game from `start`: first the `opening` moves (which must be legal in turn), then
/// `choose(start, moves so far, current position)` for every further move until the game ends
/// ([`Game::adjudicate`] with `max_plies`). A move `choose` returns that is not legal is an
/// error of the caller's engine, reported through `illegal`.
pub fn play_game<E>(
    start: Position,
    opening: &[Move],
    max_plies: u32,
    mut choose: impl FnMut(&Position, &[Move], &Position) -> Result<Move, E>,
    illegal: impl Fn(Move, &Position) -> E,
) -> Result<PlayedGame, E> {
    let mut game = Game::new(start);
    let mut opening = opening.iter();
    loop {
        if let Some((outcome, termination)) = game.adjudicate(max_plies) {
            return Ok(PlayedGame {
                start,
                moves: game.moves,
                outcome,
                termination,
            });
        }
        let m = match opening.next() {
            Some(&m) => m,
            None => choose(&game.start, &game.moves, &game.current)?,
        };
        if !game.current.legal_moves().as_slice().contains(&m) {
            return Err(illegal(m, &game.current));
        }
        game.play(m);
    }
}

/// SplitMix64: the PRNG of the opening choice, fixed forever (replicas must agree).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// An index below `n` (> 0) by multiply-shift (bias below 2⁻⁵⁶ for n ≤ 256).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// The opening plies of every game of a self-play workunit: `games` sequences of `plies`
/// random legal moves from `start`, drawn in order from [`SplitMix64`] seeded with `seed`, each
/// different from the earlier ones while the start has enough distinct openings (a sequence
/// already drawn is redrawn, up to 64 times). Sequences stop early at a position without moves.
pub fn openings(start: &Position, seed: u64, games: u32, plies: u32) -> Vec<Vec<Move>> {
    let mut rng = SplitMix64::new(seed);
    let mut seen = HashSet::new();
    let draw = |rng: &mut SplitMix64| {
        let mut pos = *start;
        let mut line = Vec::new();
        for _ in 0..plies {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let m = legal.as_slice()[rng.below(legal.len())];
            line.push(m);
            pos = pos.play(m);
        }
        line
    };
    (0..games)
        .map(|_| {
            let mut line = draw(&mut rng);
            for _ in 0..64 {
                if !seen.contains(&line) {
                    break;
                }
                line = draw(&mut rng);
            }
            seen.insert(line.clone());
            line
        })
        .collect()
}

fn role_letter(role: Role) -> char {
    role.char().to_ascii_uppercase()
}

/// The move in standard algebraic notation: `Nf3`, `exd5`, `e8=Q+`, `Rad1`, `O-O` (castling
/// toward the h-side) and `O-O-O`, with `+` for check and `#` for mate.
pub fn san(pos: &Position, m: Move) -> String {
    let mut text = san_plain(pos, m);
    let after = pos.play(m);
    if after.is_check() {
        text.push(if after.legal_moves().is_empty() {
            '#'
        } else {
            '+'
        });
    }
    text
}

/// SAN without the check suffix.
fn san_plain(pos: &Position, m: Move) -> String {
    if m.kind() == MoveKind::Castle {
        return if m.to().file() > m.from().file() {
            "O-O".into()
        } else {
            "O-O-O".into()
        };
    }
    let role = pos.role_at(m.from_index()).unwrap_or(Role::Pawn);
    let capture = is_capture(pos, m);
    let mut text = String::new();
    if role == Role::Pawn {
        if capture {
            text.push((b'a' + m.from().file()) as char);
            text.push('x');
        }
        text.push_str(&m.to().to_string());
        if let MoveKind::Promotion(r) = m.kind() {
            text.push('=');
            text.push(role_letter(r));
        }
        return text;
    }
    text.push(role_letter(role));
    let rivals: Vec<Move> = pos
        .legal_moves()
        .as_slice()
        .iter()
        .copied()
        .filter(|o| {
            *o != m
                && o.kind() != MoveKind::Castle
                && o.to() == m.to()
                && pos.role_at(o.from_index()) == Some(role)
        })
        .collect();
    if !rivals.is_empty() {
        let file = (b'a' + m.from().file()) as char;
        let rank = (b'1' + m.from().rank()) as char;
        if rivals.iter().all(|o| o.from().file() != m.from().file()) {
            text.push(file);
        } else if rivals.iter().all(|o| o.from().rank() != m.from().rank()) {
            text.push(rank);
        } else {
            text.push(file);
            text.push(rank);
        }
    }
    if capture {
        text.push('x');
    }
    text.push_str(&m.to().to_string());
    text
}

/// The legal move written `text` in SAN (check suffixes, annotations `!?` and `0-0` spellings
/// accepted), or why not.
pub fn parse_san(pos: &Position, text: &str) -> Result<Move, String> {
    let plain = text
        .trim_end_matches(['+', '#', '!', '?'])
        .replace("0-0-0", "O-O-O")
        .replace("0-0", "O-O");
    pos.legal_moves()
        .as_slice()
        .iter()
        .copied()
        .find(|&m| san_plain(pos, m) == plain)
        .ok_or_else(|| {
            format!(
                "{text:?} is not a legal move in {}",
                pos.to_fen(CastlingNotation::Shredder)
            )
        })
}

/// The PGN of a self-play game: the seven-tag roster (players: `engine`; `Round`: `round`;
/// the date unknown, so that replicas write identical bytes), `Variant "Chess960"`, `SetUp "1"`,
/// `FEN` (X-FEN castling), `PlyCount`, `Termination`, then the SAN movetext wrapped at 79
/// columns and the result.
pub fn to_pgn(game: &PlayedGame, engine: &str, round: u32) -> String {
    let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::new();
    let tags = [
        ("Event", "c960 self-play".to_string()),
        ("Site", "c960".into()),
        ("Date", "????.??.??".into()),
        ("Round", round.to_string()),
        ("White", engine.into()),
        ("Black", engine.into()),
        ("Result", game.outcome.pgn().into()),
        ("Variant", "Chess960".into()),
        ("SetUp", "1".into()),
        ("FEN", game.start.to_fen(CastlingNotation::XFen)),
        ("PlyCount", game.moves.len().to_string()),
        ("Termination", game.termination.name().into()),
    ];
    for (key, value) in tags {
        out.push_str(&format!("[{key} \"{}\"]\n", quote(&value)));
    }
    out.push('\n');
    let mut tokens = Vec::with_capacity(game.moves.len() * 3 / 2 + 1);
    let mut pos = game.start;
    for &m in &game.moves {
        let number = pos.fullmove_number();
        if pos.side_to_move() == Color::White {
            tokens.push(format!("{number}."));
        } else if tokens.is_empty() {
            tokens.push(format!("{number}..."));
        }
        tokens.push(san(&pos, m));
        pos = pos.play(m);
    }
    tokens.push(game.outcome.pgn().to_string());
    let mut line = String::new();
    for token in tokens {
        if !line.is_empty() && line.len() + 1 + token.len() > 79 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A PGN game read back: its tags, start position, moves (each checked legal) and result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedGame {
    /// The tags in order, values unescaped.
    pub tags: Vec<(String, String)>,
    /// The `FEN` tag's position (the standard start without one).
    pub start: Position,
    /// The moves.
    pub moves: Vec<Move>,
    /// The result token of the movetext.
    pub outcome: Option<Outcome>,
}

impl ParsedGame {
    /// The value of a tag.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The longest canonical PGN ([`to_pgn`]) of a game of at most `max_plies` plies whose engine
/// id is a label (at most 100 bytes): the tags in 1 KiB (two engine ids escaped to 200 bytes
/// each, the longest FEN and counts), then per ply a SAN move of at most 7 bytes ("Qa1xb2+",
/// "exd8=Q+") and a space, a move number every two plies ("123. ") and the result. Generous, so
/// no honest game is near it; a coordinator refuses a longer text before reading a move of it.
pub fn max_pgn_bytes(max_plies: u32) -> usize {
    let plies = max_plies as usize;
    let number = (plies / 2 + 1).to_string().len() + 2;
    1024 + plies * 8 + (plies / 2 + 1) * number + 16
}

/// Reads one PGN game: tags, then movetext (move numbers, comments in braces, NAGs and the
/// result token skipped or read); every move must be legal in turn. Errors name what is wrong.
pub fn parse_pgn(text: &str) -> Result<ParsedGame, String> {
    parse_pgn_within(text, u32::MAX)
}

/// [`parse_pgn`] of a game of at most `max_plies` plies: a longer movetext is refused at the
/// first move past the cap, so the work is bounded by the cap, not by the text.
pub fn parse_pgn_within(text: &str, max_plies: u32) -> Result<ParsedGame, String> {
    let mut tags = Vec::new();
    let mut movetext = String::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(tag) = line.strip_prefix('[') {
            let tag = tag
                .strip_suffix(']')
                .ok_or_else(|| format!("tag line {line:?} is not closed"))?;
            let (key, value) = tag
                .split_once(' ')
                .ok_or_else(|| format!("tag line {line:?} has no value"))?;
            let value = value
                .trim()
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .ok_or_else(|| format!("tag {key} value is not quoted"))?;
            tags.push((
                key.to_string(),
                value.replace("\\\"", "\"").replace("\\\\", "\\"),
            ));
        } else {
            movetext.push_str(line);
            movetext.push(' ');
        }
    }
    let start = match tags.iter().find(|(k, _)| k == "FEN") {
        Some((_, fen)) => Position::from_fen(fen).map_err(|e| format!("FEN tag: {e}"))?,
        None => crate::StartPosition::new(518)
            .map_err(|e| e.to_string())?
            .position(),
    };
    let mut pos = start;
    let mut moves = Vec::new();
    let mut outcome = None;
    let mut rest = movetext.as_str();
    while let Some(c) = rest.trim_start().chars().next() {
        rest = rest.trim_start();
        if c == '{' {
            let end = rest.find('}').ok_or("unclosed comment")?;
            rest = &rest[end + 1..];
            continue;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        if let Some(o) = Outcome::parse(token) {
            outcome = Some(o);
            continue;
        }
        // "12." / "12..." (possibly glued to the move: "12.Nf3").
        let token = token.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        if token.is_empty() || token.starts_with('$') || token == "*" {
            continue;
        }
        if moves.len() as u64 >= u64::from(max_plies) {
            return Err(format!("more than {max_plies} plies"));
        }
        let m = parse_san(&pos, token).map_err(|e| format!("ply {}: {e}", moves.len() + 1))?;
        moves.push(m);
        pos = pos.play(m);
    }
    Ok(ParsedGame {
        tags,
        start,
        moves,
        outcome,
    })
}

/// Checks that a parsed game is a finished game of these rules: no earlier ply ended it,
/// its last position ends it with `max_plies`, and its result and `Termination` tag say how.
/// Returns the outcome and termination.
pub fn check_finished(game: &ParsedGame, max_plies: u32) -> Result<(Outcome, Termination), String> {
    let mut g = Game::new(game.start);
    for (i, &m) in game.moves.iter().enumerate() {
        if let Some((_, t)) = g.adjudicate(max_plies) {
            return Err(format!("the game was over ({t}) before ply {}", i + 1));
        }
        g.play(m);
    }
    let (outcome, termination) = g
        .adjudicate(max_plies)
        .ok_or("the game is not over at its last move")?;
    if game.outcome != Some(outcome) {
        return Err(format!(
            "the result is {:?}, but the game ended {} by {termination}",
            game.outcome.map(Outcome::pgn),
            outcome.pgn()
        ));
    }
    if game.tag("Result") != Some(outcome.pgn())
        || game.tag("Termination") != Some(termination.name())
    {
        return Err("the Result or Termination tag does not match the game".into());
    }
    Ok((outcome, termination))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StartPosition;

    fn start(n: u32) -> Position {
        StartPosition::new(n).unwrap().position()
    }

    fn line(pos: &Position, uci: &[&str]) -> Vec<Move> {
        let mut p = *pos;
        uci.iter()
            .map(|t| {
                let m = p.parse_uci_move(t).unwrap();
                p = p.play(m);
                m
            })
            .collect()
    }

    fn scripted(pos: Position, uci: &[&str]) -> Result<PlayedGame, String> {
        let moves = line(&pos, uci);
        play_game(
            pos,
            &moves,
            MAX_PLIES,
            |_, _, _| Err("out of moves".to_string()),
            |m, _| format!("illegal {m}"),
        )
    }

    #[test]
    fn fools_mate_is_mate_with_san_and_pgn_that_read_back() {
        let g = scripted(start(518), &["f2f3", "e7e5", "g2g4", "d8h4"]).unwrap();
        assert_eq!(
            (g.outcome, g.termination),
            (Outcome::BlackWins, Termination::Checkmate)
        );
        let pgn = to_pgn(&g, "test engine", 3);
        assert!(pgn.contains("1. f3 e5 2. g4 Qh4# 0-1"), "{pgn}");
        assert!(pgn.contains("[Variant \"Chess960\"]") && pgn.contains("[SetUp \"1\"]"));
        assert!(pgn.contains("[FEN \"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\"]"));
        let back = parse_pgn(&pgn).unwrap();
        assert_eq!((back.start, &back.moves), (g.start, &g.moves));
        assert_eq!(
            check_finished(&back, MAX_PLIES).unwrap(),
            (Outcome::BlackWins, Termination::Checkmate)
        );
        // A false result or a game continued past its end is refused.
        let lie = pgn.replace(" 0-1", " 1-0");
        assert!(check_finished(&parse_pgn(&lie).unwrap(), MAX_PLIES).is_err());
        assert!(parse_pgn(&pgn.replace("Qh4#", "Qh5")).is_err());
    }

    #[test]
    fn the_pgn_bound_holds_for_long_games_and_the_ply_cap_stops_reading() {
        // Games to the cap with the longest engine id (every byte escaped).
        let id = "\\\"".repeat(50);
        assert_eq!(id.len(), 100);
        for seed in 0..4u64 {
            let mut n = seed;
            let g = play_game(
                start(seed as u32 * 200),
                &[],
                MAX_PLIES,
                |_, _, pos| {
                    n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let legal = pos.legal_moves();
                    Ok(legal.as_slice()[(n >> 33) as usize % legal.as_slice().len()])
                },
                |m, _| format!("illegal {m}"),
            )
            .unwrap();
            let pgn = to_pgn(&g, &id, 100);
            assert!(pgn.len() <= max_pgn_bytes(MAX_PLIES), "{}", pgn.len());
            let back = parse_pgn_within(&pgn, g.moves.len() as u32).unwrap();
            assert_eq!(back.moves, g.moves);
            if !g.moves.is_empty() {
                let short = parse_pgn_within(&pgn, g.moves.len() as u32 - 1).unwrap_err();
                assert!(short.contains("more than"), "{short}");
            }
        }
        assert!(max_pgn_bytes(MAX_PLIES) < 8 * 1024);
    }

    #[test]
    fn repetition_and_castling_in_chess960() {
        // Knights out and back twice: the start position occurs a third time.
        let g = scripted(
            start(518),
            &[
                "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
            ],
        )
        .unwrap();
        assert_eq!(g.termination, Termination::Repetition);
        assert_eq!(g.moves.len(), 8);
        // Rooks on b1 and g1, king on e1 (Shredder-FEN castling GB): king-takes-rook in UCI.
        let after = Position::from_fen("r3k2r/8/8/8/8/8/8/1R2K1R1 w GB - 0 1").unwrap();
        let castle = after.parse_uci_move("e1g1").unwrap();
        assert_eq!(castle.kind(), MoveKind::Castle);
        assert_eq!(san(&after, castle), "O-O");
        assert_eq!(san(&after, after.parse_uci_move("e1b1").unwrap()), "O-O-O");
        assert_eq!(parse_san(&after, "O-O").unwrap(), castle);
        assert_eq!(parse_san(&after, "0-0").unwrap(), castle);
    }

    #[test]
    fn san_disambiguates_and_promotes() {
        let p = Position::from_fen("4k3/P7/8/8/8/8/8/R3K2R w - - 0 1").unwrap();
        let promo = p.parse_uci_move("a7a8q").unwrap();
        assert_eq!(san(&p, promo), "a8=Q+");
        let p = Position::from_fen("4k3/8/8/8/8/8/4K3/R6R w - - 0 1").unwrap();
        let rook = p.parse_uci_move("a1d1").unwrap();
        assert_eq!(san(&p, rook), "Rad1");
        assert_eq!(parse_san(&p, "Rhd1").unwrap().from().to_string(), "h1");
        let p = Position::from_fen("k7/8/8/8/8/8/8/KN6 w - - 0 1").unwrap();
        assert_eq!(
            Game::new(p).adjudicate(MAX_PLIES),
            Some((Outcome::Draw, Termination::InsufficientMaterial))
        );
    }

    #[test]
    fn openings_are_seeded_distinct_and_legal() {
        let p = start(518);
        let a = openings(&p, 7, 32, OPENING_PLIES);
        assert_eq!(a, openings(&p, 7, 32, OPENING_PLIES));
        assert_ne!(a, openings(&p, 8, 32, OPENING_PLIES));
        let distinct: HashSet<_> = a.iter().collect();
        assert_eq!(distinct.len(), 32);
        for o in &a {
            assert_eq!(o.len(), 2);
            let mut pos = p;
            for &m in o {
                assert!(pos.legal_moves().as_slice().contains(&m));
                pos = pos.play(m);
            }
        }
    }

    #[test]
    fn the_move_cap_and_illegal_engine_moves() {
        let p = start(518);
        let cap = play_game(
            p,
            &[],
            6,
            |_, _, pos: &Position| Ok::<_, String>(pos.legal_moves().as_slice()[0]),
            |m, _| format!("illegal {m}"),
        )
        .unwrap();
        assert_eq!(
            (cap.moves.len(), cap.termination),
            (6, Termination::MoveCap)
        );
        let bad = Move::new(0, 63, MoveKind::Normal);
        assert!(play_game(p, &[], 6, |_, _, _| Ok(bad), |m, _| format!("illegal {m}")).is_err());
    }
}
