//! Driving an external UCI engine (e.g. Debian's `/usr/games/stockfish`) in Chess960 mode.
//!
//! The engine runs as a child process; a reader thread forwards its stdout line by line over a
//! channel so that every wait has a deadline. Anything unexpected — no answer in time, the
//! process exiting, an illegal move — kills the process and becomes an error, never a result: a
//! volunteer's broken engine must produce a failed replica, not a wrong score.
//!
//! The protocol per analysis: `ucinewgame`, `isready`, `position fen <Shredder-FEN>`,
//! `go depth D`, then `info … score … pv …` lines up to `bestmove`. With `UCI_Chess960` set,
//! engines write castling as king-takes-rook, which [`Position::parse_uci_move`] reads.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use c960_common::search::{Analysis, Score, Wdl};
use c960_common::{CastlingNotation, Color, Move, Position};

/// How the engine is configured and how long it may take.
#[derive(Clone, Debug)]
pub struct UciConfig {
    /// The `Hash` option in MiB, fixed so that a depth-limited search is reproducible.
    pub hash_mib: usize,
    /// The longest wait for `uciok` / `readyok`.
    pub handshake_timeout: Duration,
    /// The longest wait for `bestmove` after `go`.
    pub search_timeout: Duration,
}

/// A running UCI engine, ready for `position` / `go`.
pub struct UciEngine {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    name: String,
    config: UciConfig,
    /// Set once something went wrong: the process has been killed and must not be used.
    dead: bool,
}

/// What one `info` line says (fields absent from the line stay `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoLine {
    /// `depth`.
    pub depth: Option<u32>,
    /// `multipv` (1 is the main line).
    pub multipv: Option<u32>,
    /// `score cp` / `score mate`, side to move's point of view.
    pub score: Option<Score>,
    /// True when the score carries `lowerbound` or `upperbound` (an aspiration-window result).
    pub bound: bool,
    /// `nodes`.
    pub nodes: Option<u64>,
    /// `wdl` (side to move's point of view).
    pub wdl: Option<Wdl>,
    /// `pv` moves as text.
    pub pv: Vec<String>,
}

/// Keywords that may follow a field in an `info` line; the `pv` list ends at one of these.
const INFO_KEYWORDS: &[&str] = &[
    "depth",
    "seldepth",
    "time",
    "nodes",
    "pv",
    "multipv",
    "score",
    "currmove",
    "currmovenumber",
    "hashfull",
    "nps",
    "tbhits",
    "sbhits",
    "cpuload",
    "string",
    "refutation",
    "currline",
    "wdl",
];

/// Parses an `info` line; `None` when the line is not one (or is an `info string`).
pub fn parse_info(line: &str) -> Option<InfoLine> {
    let mut tokens = line.split_whitespace().peekable();
    if tokens.next()? != "info" || tokens.peek() == Some(&"string") {
        return None;
    }
    let mut info = InfoLine::default();
    while let Some(token) = tokens.next() {
        match token {
            // Free text up to the end of the line.
            "string" => break,
            "depth" => info.depth = tokens.next().and_then(|t| t.parse().ok()),
            "multipv" => info.multipv = tokens.next().and_then(|t| t.parse().ok()),
            "nodes" => info.nodes = tokens.next().and_then(|t| t.parse().ok()),
            "wdl" => {
                let mut n = || tokens.next().and_then(|t| t.parse().ok());
                info.wdl = match (n(), n(), n()) {
                    (Some(win), Some(draw), Some(loss)) => Some(Wdl { win, draw, loss }),
                    _ => None,
                };
            }
            "score" => {
                let kind = tokens.next();
                let value: Option<i32> = tokens.next().and_then(|t| t.parse().ok());
                info.score = match (kind, value) {
                    (Some("cp"), Some(v)) => Some(Score::Cp(v)),
                    (Some("mate"), Some(v)) => Some(Score::Mate(v)),
                    _ => None,
                };
                while let Some(&t) = tokens.peek() {
                    if t == "lowerbound" || t == "upperbound" {
                        info.bound = true;
                        tokens.next();
                    } else {
                        break;
                    }
                }
            }
            "pv" => {
                while let Some(&t) = tokens.peek() {
                    if INFO_KEYWORDS.contains(&t) {
                        break;
                    }
                    info.pv.push(t.to_string());
                    tokens.next();
                }
            }
            _ => {}
        }
    }
    Some(info)
}

impl UciEngine {
    /// Starts the engine at `path`, completes the `uci` handshake and sets Chess960 mode, one
    /// thread and the fixed hash size. Fails if the engine does not support Chess960.
    pub fn start(path: &Path, config: UciConfig) -> Result<UciEngine> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start UCI engine {}", path.display()))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        // The reader ends when the engine closes its stdout (exit or kill); dropping the sender
        // then tells the waiting side that no more lines will come.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut engine = UciEngine {
            child,
            stdin,
            lines,
            name: String::new(),
            config,
            dead: false,
        };
        match engine.handshake() {
            Ok(()) => Ok(engine),
            Err(e) => {
                engine.kill();
                Err(e.context(format!("UCI engine {} failed to start", path.display())))
            }
        }
    }

    fn handshake(&mut self) -> Result<()> {
        self.send("uci")?;
        let deadline = Instant::now() + self.config.handshake_timeout;
        let mut options = Vec::new();
        loop {
            let line = self.read_line(deadline, "uciok")?;
            let line = line.trim();
            if line == "uciok" {
                break;
            }
            if let Some(name) = line.strip_prefix("id name ") {
                self.name = name.trim().to_string();
            } else if let Some(rest) = line.strip_prefix("option name ") {
                // The option name runs up to " type ".
                let name = rest.split(" type ").next().unwrap_or(rest).trim();
                options.push(name.to_string());
            }
        }
        if self.name.is_empty() {
            bail!("the engine sent no `id name`");
        }
        let has = |name: &str| options.iter().any(|o| o.eq_ignore_ascii_case(name));
        if !has("UCI_Chess960") {
            bail!("{} does not offer the UCI_Chess960 option", self.name);
        }
        self.send("setoption name UCI_Chess960 value true")?;
        if has("Threads") {
            self.send("setoption name Threads value 1")?;
        }
        if has("UCI_ShowWDL") {
            // Only adds the expectation to `info` lines; the search itself is unchanged.
            self.send("setoption name UCI_ShowWDL value true")?;
        }
        if has("Hash") {
            self.send(&format!(
                "setoption name Hash value {}",
                self.config.hash_mib
            ))?;
        }
        self.sync()
    }

    /// The engine's `id name`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `isready` and wait for `readyok`.
    fn sync(&mut self) -> Result<()> {
        self.send("isready")?;
        let deadline = Instant::now() + self.config.handshake_timeout;
        while self.read_line(deadline, "readyok")?.trim() != "readyok" {}
        Ok(())
    }

    /// Searches `pos` to `depth` plies from a fresh game (`ucinewgame` clears the engine's hash,
    /// which keeps the result reproducible). The score is converted to White's point of view.
    ///
    /// On any error the engine process is killed; the engine cannot be used afterwards.
    pub fn analyse(&mut self, pos: &Position, depth: u32) -> Result<Analysis> {
        if self.dead {
            bail!("the UCI engine was stopped after an earlier error");
        }
        let result = self.try_analyse(pos, depth);
        if result.is_err() {
            self.kill();
        }
        result
    }

    fn try_analyse(&mut self, pos: &Position, depth: u32) -> Result<Analysis> {
        self.send("ucinewgame")?;
        self.sync()?;
        self.send(&format!(
            "position fen {}",
            pos.to_fen(CastlingNotation::Shredder)
        ))?;
        self.send(&format!("go depth {depth}"))?;
        let deadline = Instant::now() + self.config.search_timeout;
        let mut main_line: Option<InfoLine> = None;
        let mut nodes = None;
        let best_text = loop {
            let line = self.read_line(deadline, "bestmove")?;
            if let Some(rest) = line.trim().strip_prefix("bestmove") {
                break rest.split_whitespace().next().unwrap_or("").to_string();
            }
            if let Some(info) = parse_info(&line) {
                nodes = info.nodes.or(nodes);
                // The final word is the last exact score of the main line; bound scores are
                // provisional aspiration results.
                if info.score.is_some() && !info.bound && info.multipv.unwrap_or(1) == 1 {
                    main_line = Some(info);
                }
            }
        };
        let info =
            main_line.ok_or_else(|| anyhow!("the engine gave `bestmove` without any score"))?;
        let best_move = match best_text.as_str() {
            "(none)" | "0000" | "" => None,
            text => Some(parse_move(pos, text, "bestmove")?),
        };
        if best_move.is_none() && !pos.legal_moves().is_empty() {
            bail!("the engine gave no best move in a position with legal moves");
        }
        let mut pv = Vec::new();
        let mut p = *pos;
        for text in &info.pv {
            let m = parse_move(&p, text, "pv")?;
            pv.push(m);
            p = p.play(m);
        }
        if pv.is_empty()
            && let Some(m) = best_move
        {
            pv.push(m);
        }
        let score = info.score.expect("main line has a score");
        let white = pos.side_to_move() == Color::White;
        let score = if white { score } else { score.negate() };
        let wdl = info.wdl.map(|w| if white { w } else { w.flip() });
        Ok(Analysis {
            score,
            best_move,
            pv,
            nodes: nodes.unwrap_or(0),
            depth: info.depth.unwrap_or(depth),
            wdl,
        })
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| anyhow!("cannot write to the engine ({e}); {}", self.exit_note()))
    }

    /// The next line, or an error when the deadline passes or the engine has exited.
    fn read_line(&mut self, deadline: Instant, waiting_for: &str) -> Result<String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                bail!("the engine timed out waiting for `{waiting_for}` and was killed")
            }
            Err(RecvTimeoutError::Disconnected) => {
                bail!(
                    "the engine closed its output before `{waiting_for}`; {}",
                    self.exit_note()
                )
            }
        }
    }

    /// How the process ended, if it has (briefly waiting for it to finish dying).
    fn exit_note(&mut self) -> String {
        for _ in 0..20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return format!("it exited with {status}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        "it stopped responding".to_string()
    }

    /// Kills and reaps the process (harmless if it already exited).
    fn kill(&mut self) {
        if !self.dead {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.dead = true;
        }
    }
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        if !self.dead {
            // A polite `quit` first, so a well-behaved engine exits on its own; then make sure.
            let _ = writeln!(self.stdin, "quit").and_then(|()| self.stdin.flush());
            for _ in 0..20 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    self.dead = true;
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            self.kill();
        }
    }
}

fn parse_move(pos: &Position, text: &str, what: &str) -> Result<Move> {
    pos.parse_uci_move(text).map_err(|e| {
        anyhow!(
            "the engine's {what} move {text:?} is not legal in {}: {e}",
            pos.to_fen(CastlingNotation::Shredder)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stockfish_info_lines() {
        let line = "info depth 12 seldepth 16 multipv 1 score cp -23 nodes 48120 nps 900000 hashfull 12 tbhits 0 \
                    time 53 pv e2e4 e7e5 g1f3";
        let info = parse_info(line).unwrap();
        assert_eq!(info.depth, Some(12));
        assert_eq!(info.multipv, Some(1));
        assert_eq!(info.score, Some(Score::Cp(-23)));
        assert!(!info.bound);
        assert_eq!(info.nodes, Some(48120));
        assert_eq!(info.pv, vec!["e2e4", "e7e5", "g1f3"]);

        let bound = parse_info("info depth 9 score cp 30 lowerbound nodes 10 pv d2d4").unwrap();
        assert!(bound.bound);
        assert_eq!(bound.pv, vec!["d2d4"]);

        let mate =
            parse_info("info depth 3 score mate -2 wdl 0 0 1000 pv a1a2 string done").unwrap();
        assert_eq!(mate.score, Some(Score::Mate(-2)));
        assert_eq!(
            mate.wdl,
            Some(Wdl {
                win: 0,
                draw: 0,
                loss: 1000
            })
        );
        assert_eq!(mate.pv, vec!["a1a2"]);

        assert_eq!(parse_info("info string NNUE evaluation enabled"), None);
        assert_eq!(parse_info("bestmove e2e4"), None);
    }
}
