//! What the worker tells its volunteer: numbers people can read, log lines that a live
//! progress line does not garble, and that progress line (on a terminal only).

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use c960_common::wire::{AnalysisEngine, PositionSpec, WorkUnitKind};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The live progress line, while one is shown.
static LIVE: Mutex<Option<ProgressBar>> = Mutex::new(None);
/// Called once when stdout turns out to be a closed pipe (`c960-worker work | head`).
static ON_BROKEN_PIPE: OnceLock<Box<dyn Fn() + Send + Sync>> = OnceLock::new();

/// Whether the worker's output is a terminal (then: colours and a live progress line; else
/// plain log lines only).
pub fn is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Sets what to do when stdout is a closed pipe (the work loop stops as after a Ctrl-C).
pub fn on_broken_pipe(f: impl Fn() + Send + Sync + 'static) {
    let _ = ON_BROKEN_PIPE.set(Box::new(f));
}

/// The `tracing` writer of `work`: each log line goes to stdout above the live progress line.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

/// One log line being written (see [`LogWriter`]).
#[derive(Debug, Default)]
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let write = || {
            let mut out = std::io::stdout().lock();
            out.write_all(&self.0).and_then(|()| out.flush())
        };
        let live = LIVE.lock().ok().and_then(|l| l.clone());
        let written = match live {
            Some(bar) => bar.suspend(write),
            None => write(),
        };
        if let Err(e) = written
            && e.kind() == std::io::ErrorKind::BrokenPipe
            && let Some(f) = ON_BROKEN_PIPE.get()
        {
            f();
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;
    fn make_writer(&'a self) -> LogLine {
        LogLine::default()
    }
}

/// The live progress line of the workunit being computed; a no-op when the output is not a
/// terminal. Removed when dropped.
pub struct LiveLine(Option<ProgressBar>);

impl LiveLine {
    /// Shows a line with this prefix (on a terminal, when `show`), ticking every second.
    pub fn start(show: bool, prefix: String) -> LiveLine {
        if !show {
            return LiveLine(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        let style = ProgressStyle::with_template("{spinner} {prefix} · {msg} · {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(prefix);
        bar.set_message("starting");
        bar.enable_steady_tick(Duration::from_millis(250));
        if let Ok(mut live) = LIVE.lock() {
            *live = Some(bar.clone());
        }
        LiveLine(Some(bar))
    }

    /// Replaces the line's message.
    pub fn set(&self, msg: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(msg);
        }
    }
}

impl Drop for LiveLine {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
            if let Ok(mut live) = LIVE.lock() {
                *live = None;
            }
        }
    }
}

/// What a workunit is, in a volunteer's words: `start position 518, depth 7`,
/// `split position <FEN>, depth 5`, `analysis of start position 5 to depth 12 (built-in)`.
pub fn workunit(kind: &WorkUnitKind) -> String {
    let position = match kind.position() {
        PositionSpec::StartPosition(n) => format!("start position {n}"),
        PositionSpec::Fen(fen) => format!("split position {fen}"),
    };
    match kind {
        WorkUnitKind::Perft { depth, .. } => format!("{position}, depth {depth}"),
        WorkUnitKind::Analysis { depth, engine, .. } => {
            let engine = match engine {
                AnalysisEngine::Builtin => "built-in",
                AnalysisEngine::Uci => "UCI",
            };
            format!("analysis of {position} to depth {depth} ({engine})")
        }
        WorkUnitKind::SelfPlay {
            games,
            nodes,
            engine,
            ..
        } => {
            let engine = match engine {
                AnalysisEngine::Builtin => "built-in",
                AnalysisEngine::Uci => "UCI",
            };
            format!("{games} self-play games from {position} at {nodes} nodes a move ({engine})")
        }
    }
}

/// `n` things, with thousands separators: `1 result`, `1,234 results`.
pub fn count(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{} {thing}s", thousands(u128::from(n)))
    }
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u128) -> String {
    c960_common::text::thousands(n)
}

/// A duration as people say it: `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`, `3d 04h`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..60 => format!("{:.1} s", d.as_secs_f64()),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A node rate: `312.4 Mnodes/s`.
pub fn rate(nodes: u128, elapsed: Duration) -> String {
    let per_sec = nodes as f64 / elapsed.as_secs_f64().max(1e-3);
    if per_sec >= 1e9 {
        format!("{:.2} Gnodes/s", per_sec / 1e9)
    } else {
        format!("{:.1} Mnodes/s", per_sec / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_numbers() {
        assert_eq!(count(1, "result"), "1 result");
        assert_eq!(count(1234, "result"), "1,234 results");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(119_060_324), "119,060,324");
        assert_eq!(
            thousands(u128::from(u64::MAX)),
            "18,446,744,073,709,551,615"
        );
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_millis(12_340)), "12.3 s");
        assert_eq!(duration(Duration::from_secs(245)), "4m 05s");
        assert_eq!(duration(Duration::from_secs(7380)), "2h 03m");
        assert_eq!(duration(Duration::from_secs(273_600)), "3d 04h");
        assert_eq!(rate(312_400_000, Duration::from_secs(1)), "312.4 Mnodes/s");
        assert_eq!(rate(2_500_000_000, Duration::from_secs(1)), "2.50 Gnodes/s");
    }
}
