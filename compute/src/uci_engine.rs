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
//!
//! An engine is a command with arguments ([`UciCommand`], e.g. `node /opt/sf/stockfish.js`).
//! Its identity is the UCI `id name` plus SHA-256 prefixes of the engine file and of its network
//! file ([`EngineBuild`]); that identity is the result's engine id, which the digest covers, so
//! replicas of different builds never form one quorum.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use c960_common::search::{Analysis, DepthScore, Score, Wdl};
use c960_common::{CastlingNotation, Color, Move, Position};
use sha2::{Digest, Sha256};

/// How to start a UCI engine: a program and its arguments, split shell-style from one string
/// (`/usr/games/stockfish`, `node "/opt/sf/stockfish-19-single.js"`), with the build identity
/// computed once when the command is resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UciCommand {
    /// The program, as given (looked up on `PATH` when it has no `/`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The hashes that identify the engine build.
    pub build: EngineBuild,
}

/// What identifies an engine build beyond its `id name`: SHA-256 of the engine file (the last
/// argument that is a file, e.g. a `.js` script, else the program) and of its network file when
/// one is found beside it (the `.wasm` of a `.js` script's name, else the `*.nnue` files in the
/// engine file's folder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineBuild {
    /// The engine file that was hashed.
    pub engine_file: PathBuf,
    /// Lower-case hex SHA-256 of the engine file.
    pub engine_sha256: String,
    /// The network file and its hex SHA-256, when one was found.
    pub network: Option<(PathBuf, String)>,
}

/// Hex digits of each SHA-256 kept in the engine id: 64 bits tell builds apart (honest replicas
/// must agree; a liar can claim any id anyway, which the quorum rules handle).
const ID_HASH_HEX: usize = 16;

impl EngineBuild {
    /// The suffix of the engine id: `sha256:<16 hex>` and ` net:<16 hex>` when a network was found.
    pub fn tag(&self) -> String {
        let mut tag = format!("sha256:{}", &self.engine_sha256[..ID_HASH_HEX]);
        if let Some((_, net)) = &self.network {
            tag.push_str(&format!(" net:{}", &net[..ID_HASH_HEX]));
        }
        tag
    }
}

impl UciCommand {
    /// Splits `text` shell-style, finds the program and hashes the engine and network files.
    pub fn parse(text: &str) -> Result<UciCommand> {
        let words = shlex::split(text)
            .ok_or_else(|| anyhow!("UCI engine command {text:?}: unbalanced quotes"))?;
        let Some((program, args)) = words.split_first() else {
            bail!("UCI engine command is empty");
        };
        let program = PathBuf::from(program);
        let resolved = resolve_program(&program)
            .ok_or_else(|| anyhow!("UCI engine {}: no such program", program.display()))?;
        let engine_file = args
            .iter()
            .rev()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .unwrap_or(resolved);
        let engine_sha256 = sha256_file(&engine_file)?;
        let network = match network_file(&engine_file) {
            Some(net) => {
                let hash = sha256_file(&net)?;
                Some((net, hash))
            }
            None => None,
        };
        Ok(UciCommand {
            program,
            args: args.to_vec(),
            build: EngineBuild {
                engine_file,
                engine_sha256,
                network,
            },
        })
    }

    /// The command as one line (for logs).
    pub fn display(&self) -> String {
        let mut words = vec![self.program.display().to_string()];
        words.extend(self.args.iter().cloned());
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    }
}

/// `program` itself when it names a file, else the first match on `PATH`.
fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 || program.is_absolute() {
        return program.is_file().then(|| program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The network beside `engine_file`: `name.wasm` for `name.js`, else the `*.nnue` file of its
/// folder when there is exactly one.
fn network_file(engine_file: &Path) -> Option<PathBuf> {
    if engine_file.extension().is_some_and(|e| e == "js") {
        let wasm = engine_file.with_extension("wasm");
        return wasm.is_file().then_some(wasm);
    }
    let dir = engine_file.parent()?;
    let mut nets: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "nnue") && p.is_file())
        .collect();
    (nets.len() == 1).then(|| nets.remove(0))
}

/// Lower-case hex SHA-256 of a file, read in chunks (networks are ~100 MB).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read engine file {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read engine file {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

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
    /// [`EngineBuild::tag`] of the command that started it.
    build_tag: String,
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
    /// Starts the engine `command`, completes the `uci` handshake and sets Chess960 mode, one
    /// thread and the fixed hash size. Fails if the engine does not support Chess960.
    pub fn start(command: &UciCommand, config: UciConfig) -> Result<UciEngine> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start UCI engine {}", command.display()))?;
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
            build_tag: command.build.tag(),
            config,
            dead: false,
        };
        match engine.handshake() {
            Ok(()) => Ok(engine),
            Err(e) => {
                engine.kill();
                Err(e.context(format!("UCI engine {} failed to start", command.display())))
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

    /// The engine id of its results: `id name [sha256:… net:…]`, so that only replicas of one
    /// build agree.
    pub fn id(&self) -> String {
        format!("{} [{}]", self.name, self.build_tag)
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
        self.guarded(|e| e.try_analyse(pos, depth))
    }

    /// Runs `work` on a live engine and kills the process when it fails: an engine that
    /// answered nonsense once is not trusted again.
    fn guarded<T>(&mut self, work: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.dead {
            bail!("the UCI engine was stopped after an earlier error");
        }
        let result = work(self);
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
        // The last exact main-line score of every completed depth, in depth order.
        let mut depths: Vec<InfoLine> = Vec::new();
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
                    if let Some(d) = info.depth {
                        match depths.last_mut() {
                            Some(last) if last.depth == Some(d) => *last = info.clone(),
                            _ => depths.push(info.clone()),
                        }
                    }
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
        let depths = depths
            .iter()
            .map(|line| DepthScore {
                depth: line.depth.unwrap_or(0),
                score: line
                    .score
                    .map(|s| if white { s } else { s.negate() })
                    .expect("kept lines have a score"),
                wdl: line.wdl.map(|w| if white { w } else { w.flip() }),
                nodes: line.nodes.unwrap_or(0),
            })
            .collect();
        Ok(Analysis {
            score,
            best_move,
            pv,
            nodes: nodes.unwrap_or(0),
            depth: info.depth.unwrap_or(depth),
            wdl,
            depths,
        })
    }

    /// Starts a new game: `ucinewgame` (which clears the engine's hash) and `isready`.
    pub fn new_game(&mut self) -> Result<()> {
        self.guarded(|e| e.send("ucinewgame").and_then(|()| e.sync()))
    }

    /// The engine's move after `moves` from `start` with `go nodes {nodes}`, and the nodes it
    /// reported searching. The whole game goes in the `position` command, so the engine sees
    /// repetitions as a game would. On any error the engine process is killed.
    pub fn best_move_nodes(
        &mut self,
        start: &Position,
        moves: &[Move],
        current: &Position,
        nodes: u64,
    ) -> Result<(Move, u64)> {
        self.guarded(|e| e.try_best_move_nodes(start, moves, current, nodes))
    }

    fn try_best_move_nodes(
        &mut self,
        start: &Position,
        moves: &[Move],
        current: &Position,
        nodes: u64,
    ) -> Result<(Move, u64)> {
        let mut command = format!("position fen {}", start.to_fen(CastlingNotation::Shredder));
        if !moves.is_empty() {
            command.push_str(" moves");
            for m in moves {
                command.push(' ');
                command.push_str(&m.to_string());
            }
        }
        self.send(&command)?;
        self.send(&format!("go nodes {nodes}"))?;
        let deadline = Instant::now() + self.config.search_timeout;
        let mut searched = 0;
        let best = loop {
            let line = self.read_line(deadline, "bestmove")?;
            if let Some(rest) = line.trim().strip_prefix("bestmove") {
                break rest.split_whitespace().next().unwrap_or("").to_string();
            }
            if let Some(n) = parse_info(&line).and_then(|i| i.nodes) {
                searched = n;
            }
        };
        Ok((parse_move(current, &best, "bestmove")?, searched))
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

    #[test]
    fn commands_split_shell_style_and_name_their_build() {
        let dir = tempfile::tempdir().unwrap();
        let js = dir.path().join("my engine.js");
        std::fs::write(&js, "script").unwrap();
        std::fs::write(js.with_extension("wasm"), "network").unwrap();
        let cmd = UciCommand::parse(&format!("/bin/sh '{}' --flag", js.display())).unwrap();
        assert_eq!(cmd.program, PathBuf::from("/bin/sh"));
        assert_eq!(cmd.args, vec![js.display().to_string(), "--flag".into()]);
        // The script (last file argument) and the .wasm beside it identify the build.
        assert_eq!(cmd.build.engine_file, js);
        assert_eq!(cmd.build.engine_sha256, sha256_file(&js).unwrap());
        let net = cmd.build.network.clone().unwrap();
        assert_eq!(net.0, js.with_extension("wasm"));
        assert_eq!(
            cmd.build.tag(),
            format!(
                "sha256:{} net:{}",
                &cmd.build.engine_sha256[..16],
                &net.1[..16]
            )
        );
        // Another network file is another build.
        std::fs::write(js.with_extension("wasm"), "other network").unwrap();
        let other = UciCommand::parse(&format!("/bin/sh '{}' --flag", js.display())).unwrap();
        assert_ne!(other.build.tag(), cmd.build.tag());
        // A program found on PATH with no file argument is hashed itself; no network.
        let sh = UciCommand::parse("sh").unwrap();
        assert!(sh.build.engine_file.is_absolute() && sh.build.network.is_none());
        assert!(UciCommand::parse("").is_err());
        assert!(UciCommand::parse("sh 'unclosed").is_err());
        assert!(UciCommand::parse("/nonexistent/engine").is_err());
    }
}
