//! `c960-worker work`: the volunteer loop against a coordinator.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, bail};
use c960_compute::uci_engine::UciCommand;
use c960_worker::report::{self, thousands};
use c960_worker::runner::{self, RunnerConfig, Stop};
use c960_worker::{identity, machine};

/// Arguments of `work`.
#[derive(clap::Args)]
pub struct WorkArgs {
    /// Coordinator URL, e.g. http://127.0.0.1:8960
    #[arg(long, env = "C960_SERVER")]
    server: String,
    /// Threads: a perft workunit uses them all (one shared table), analysis workunits run this
    /// many at a time (default: every logical core).
    #[arg(long)]
    threads: Option<u32>,
    /// Perft hash table in MiB, kept across workunits; 0: none (default: an eighth of the
    /// memory as a power of two, 16 to 2048 MiB).
    #[arg(long)]
    hash: Option<u32>,
    /// Name shown on the coordinator's status page.
    #[arg(long)]
    name: Option<String>,
    /// Do one workunit, then exit (non-zero after --attempts failed attempts in a row to reach
    /// the coordinator).
    #[arg(long)]
    once: bool,
    /// With --once: how many failed attempts in a row to reach the coordinator before giving up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    attempts: u32,
    /// Where the worker identity is kept (default: $XDG_STATE_HOME/c960/worker.json).
    #[arg(long)]
    state_file: Option<PathBuf>,
    /// A UCI engine command for UCI analysis workunits, split shell-style (e.g.
    /// /usr/games/stockfish, or "node /opt/sf/stockfish-19-single.js"); without it the worker
    /// takes perft and built-in analysis workunits only.
    #[arg(long)]
    uci: Option<String>,
    /// Seconds the UCI engine may search one workunit before it is killed and the workunit
    /// reported as failed.
    #[arg(long, default_value_t = 600)]
    uci_timeout: u64,
    /// The enrolment secret the coordinator's operator gave you (needed only to register).
    #[arg(long, env = "C960_ENROL_SECRET", hide_env_values = true)]
    enrol_secret: Option<String>,
    /// PEM file of an extra CA to trust for an https:// coordinator with a private certificate.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// The most workunits fetched per request (batches are sized to take about 2 s, so
    /// workunits of minutes still go one at a time).
    #[arg(long, default_value_t = c960_common::wire::MAX_BATCH, value_parser = clap::value_parser!(u32).range(1..=c960_common::wire::MAX_BATCH as i64))]
    max_batch: u32,
    /// Longest wait between retries, in seconds (a coordinator's Retry-After may ask for more).
    #[arg(long, default_value_t = 60)]
    max_backoff_secs: u64,
}

pub fn run(args: WorkArgs) -> Result<()> {
    if !(args.server.starts_with("http://") || args.server.starts_with("https://")) {
        bail!("--server must be an http:// URL, got {:?}", args.server);
    }
    let cores = machine::logical_cores();
    let threads = args.threads.unwrap_or(cores);
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let memory = machine::memory_mib();
    let hash = args
        .hash
        .unwrap_or_else(|| machine::default_hash_mib(memory));
    if hash > 65_536 {
        bail!("--hash must be at most 65536 MiB");
    }
    if args.uci_timeout == 0 {
        bail!("--uci-timeout must be at least 1 second");
    }
    let uci = args.uci.as_deref().map(parse_uci).transpose()?;
    // The log goes to stdout, above the live progress line on a terminal; piped or redirected,
    // it is plain lines without colours or progress lines.
    tracing_subscriber::fmt()
        .with_writer(report::LogWriter)
        .with_ansi(report::is_terminal())
        .with_target(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    tracing::info!(
        "using {threads} of {cores} logical cores and a {} MiB perft table{}",
        thousands(u128::from(hash)),
        match (args.hash, memory) {
            (None, Some(m)) => format!(
                " (about an eighth of {} MiB memory)",
                thousands(u128::from(m))
            ),
            _ => String::new(),
        }
    );
    let mut cfg = RunnerConfig::new(&args.server);
    cfg.name = args
        .name
        .unwrap_or_else(|| format!("c960-worker {}", c960_worker::ENGINE_VERSION));
    cfg.threads = threads;
    cfg.hash_mib = hash;
    cfg.once = args.once;
    cfg.give_up_after = args.once.then_some(args.attempts);
    cfg.uci = uci;
    cfg.uci_timeout = Duration::from_secs(args.uci_timeout);
    cfg.state_file = Some(args.state_file.unwrap_or_else(identity::default_path));
    cfg.backoff_cap = Duration::from_secs(args.max_backoff_secs.max(1));
    cfg.enrol_secret = args.enrol_secret;
    cfg.ca_file = args.ca_file;
    cfg.max_batch = args.max_batch;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = rt.block_on(async move {
        let (tx, rx) = tokio::sync::watch::channel(Stop::Run);
        let tx = std::sync::Arc::new(tx);
        // `c960-worker work | head`: once nobody reads the log, stop as after one Ctrl-C.
        let on_pipe = tx.clone();
        report::on_broken_pipe(move || {
            on_pipe.send_if_modified(|s| {
                let raise = *s < Stop::Finish;
                if raise {
                    *s = Stop::Finish;
                }
                raise
            });
        });
        // The handlers are installed before any work starts, so an early Ctrl-C is not fatal.
        // SIGTERM (service managers) is treated like Ctrl-C: the first finishes and submits the
        // workunits in hand, the second gives them back and stops at once.
        #[cfg(unix)]
        let (mut interrupt, mut terminate) = {
            use tokio::signal::unix::{SignalKind, signal};
            (
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            )
        };
        tokio::spawn(async move {
            for stop in [Stop::Finish, Stop::Now] {
                #[cfg(unix)]
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                #[cfg(not(unix))]
                let _ = tokio::signal::ctrl_c().await;
                match stop {
                    Stop::Finish => tracing::info!(
                        "stopping: finishing and submitting the workunits in hand \
                         (Ctrl-C again to give them back and stop now)"
                    ),
                    _ => tracing::info!("stopping now: giving the workunits in hand back"),
                }
                tx.send_modify(|s| *s = (*s).max(stop));
            }
        });
        let summary = runner::run_until(cfg, rx).await?;
        tracing::info!(
            "{}: {}",
            if summary.interrupted {
                "stopped"
            } else {
                "done"
            },
            summary.totals()
        );
        Ok(())
    });
    // The engine stops at the next root move once cancelled; do not wait for it.
    rt.shutdown_timeout(Duration::from_millis(200));
    out
}

/// `--uci`: a command split shell-style, its program found and its engine and network files
/// hashed (the engine id names the build).
pub fn parse_uci(text: &str) -> Result<UciCommand> {
    UciCommand::parse(text).map_err(|e| anyhow::anyhow!("--uci: {e:#}"))
}
