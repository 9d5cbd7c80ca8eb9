//! `c960-coordinator`: serve the coordinator, manage campaigns, export tables, or run a whole
//! campaign on this machine.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use c960_coordinator::api::auth::{self, Enrolment};
use c960_coordinator::api::limits::Rate;
use c960_coordinator::api::{self, AppState, Config, Limits};
use c960_coordinator::checker::{self, CheckBudget};
use c960_coordinator::conn::{self, ConnLimits, GatedListener};
use c960_coordinator::export::{self, Format};
use c960_coordinator::proxies::TrustedProxies;
#[cfg(feature = "run")]
use c960_coordinator::run::{self, RunOptions, RunOutcome};
use c960_coordinator::store::{Store, postgres::is_postgres_url};
use c960_coordinator::trust::{AddressSeparation, Integrity};
use clap::{Parser, Subcommand};

mod cli_campaigns;
mod cli_config;
mod cli_tokens;
mod cli_workers;

/// c960 coordinator: hands out Chess960 perft workunits and accepts results by quorum.
#[derive(Parser)]
#[command(name = "c960-coordinator", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of `serve`'s variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API.
    Serve {
        /// Read options from this TOML file: each key is a flag's name in snake_case
        /// (`lease_secs = 600`, `open_enrolment = true`, `trusted_proxy = ["127.0.0.1"]`);
        /// flags on the command line override it. Secrets only by file (`admin_token_file`).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Address to listen on, e.g. 0.0.0.0:8960 (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:8960")]
        listen: String,
        /// SQLite database file (created if missing), or a PostgreSQL database
        /// (`postgres://user:password@host:port/db`; several coordinators may share one).
        #[arg(long)]
        db: PathBuf,
        /// A lease's whole life in seconds: its hard deadline, however often it is renewed.
        #[arg(long, default_value_t = 3600)]
        lease_secs: u64,
        /// Seconds a lease stays open without a renewal: workers renew the leases they compute
        /// every 30 s, so a worker that died gives its replicas back after this long (0: no
        /// renewals, leases last --lease-secs; else at least 60).
        #[arg(long, default_value_t = 90)]
        lease_renewal_secs: u64,
        /// Lost votes + refused results after which a worker gets no work (0: never).
        #[arg(long, default_value_t = 3)]
        max_strikes: u64,
        /// Seconds a worker is told to wait when there is no work.
        #[arg(long, default_value_t = 10)]
        retry_after_secs: u32,
        /// Workers must present this secret to register (prefer the environment variable:
        /// command lines are visible to other users).
        #[arg(long, env = "C960_ENROL_SECRET", hide_env_values = true)]
        enrol_secret: Option<String>,
        /// Read the enrolment secret from this file (its first line; a systemd or container
        /// secret), instead of --enrol-secret.
        #[arg(long, conflicts_with = "enrol_secret")]
        enrol_secret_file: Option<PathBuf>,
        /// Anyone may register a worker. Without this or --enrol-secret, nobody can.
        #[arg(long, conflicts_with_all = ["enrol_secret", "enrol_secret_file"])]
        open_enrolment: bool,
        /// `tokens`: workers register only with a per-volunteer enrolment token the operator
        /// minted (`token mint`, capped per token); replicas of one workunit never go to two
        /// workers of one token.
        #[arg(long, value_parser = ["tokens"], conflicts_with_all = ["enrol_secret", "open_enrolment"])]
        enrolment: Option<String>,
        /// Token for the admin endpoints (campaigns, bans, raw results); none: they are off.
        #[arg(long, env = "C960_ADMIN_TOKEN", hide_env_values = true)]
        admin_token: Option<String>,
        /// Read the admin token from this file (its first line), instead of --admin-token.
        #[arg(long, conflicts_with = "admin_token")]
        admin_token_file: Option<PathBuf>,
        /// Worker API requests per second per client address (0: no limit; raise it behind a
        /// reverse proxy, where all requests come from one address).
        #[arg(long, default_value_t = 50.0)]
        rate_per_address: f64,
        /// Worker API requests per second per worker (burst 4x; 0: no limit). A default worker
        /// paces itself to 4 a second at most.
        #[arg(long, default_value_t = c960_coordinator::api::state::DEFAULT_PER_WORKER.per_sec)]
        rate_per_worker: f64,
        /// Table exports per second per client address (burst 4x; 0: no limit); requests with
        /// the admin token are not limited.
        #[arg(long, default_value_t = 0.5)]
        export_rate_per_address: f64,
        /// Open leases one worker may hold at once (0: no cap).
        #[arg(long, default_value_t = 64)]
        max_open_leases: u64,
        /// Seconds a request may take before it is answered 503 timeout.
        #[arg(long, default_value_t = 30)]
        request_timeout_secs: u64,
        /// Share of untrusted workers' results the coordinator recomputes itself (0..1).
        #[arg(long, default_value_t = 0.25)]
        check_rate: f64,
        /// Share of trusted workers' results the coordinator recomputes itself (0..1).
        #[arg(long, default_value_t = 0.02)]
        check_rate_trusted: f64,
        /// Largest workunit (estimated perft nodes) the coordinator checks itself (0: no checks).
        #[arg(long, default_value_t = 500_000_000)]
        check_max_nodes: u64,
        /// Deepest built-in analysis the coordinator searches itself for a check (0: none).
        #[arg(long, default_value_t = 8)]
        check_max_analysis_depth: u32,
        /// Secret checks a worker must pass before its results count without a trusted peer.
        #[arg(long, default_value_t = 3)]
        trust_after: u64,
        /// Open leases of an untrusted worker (doubles with each passed check).
        #[arg(long, default_value_t = 4)]
        untrusted_lease_cap: u64,
        /// Open leases of all workers of one address block (IPv4 /24, IPv6 /48) together (0: no cap).
        #[arg(long, default_value_t = 512)]
        block_lease_cap: u64,
        /// Which address blocks (IPv4 /24, IPv6 /48) keep replicas of one workunit apart and
        /// share --block-lease-cap: `public` (loopback, private and link-local blocks do not:
        /// workers on one machine or one lab network pair), `everywhere`, or `off`.
        #[arg(long, value_enum, default_value_t = AddressSeparation::Public)]
        address_separation: AddressSeparation,
        /// Let workers of one address block hold replicas of the same workunit (behind a NAT or
        /// a proxy that hides the volunteers' addresses): `--address-separation off`.
        #[arg(long, conflicts_with = "address_separation")]
        shared_address_blocks: bool,
        /// Workers registered within this many seconds of each other from one address block never
        /// hold replicas of one workunit, even with --shared-address-blocks (0: off; behind a
        /// proxy, e.g. 600).
        #[arg(long, default_value_t = 0)]
        registration_burst_secs: u64,
        /// Share of validated perft values (without a public answer) the coordinator re-splits
        /// one ply deeper and recounts, trusted workers' too (0..1, within --check-max-nodes).
        #[arg(long, default_value_t = 0.01)]
        resplit_rate: f64,
        /// Share of validated values not vouched for by the coordinator or the operator's own
        /// workers that are audited: recomputed by the coordinator when it can (within
        /// --check-max-nodes, --check-max-analysis-depth), else see --audit-replica-rate (0..1).
        #[arg(long, default_value_t = 1.0)]
        audit_rate: f64,
        /// Share of the audits the coordinator cannot compute that go to one more hidden replica
        /// for another randomly drawn worker, when a trusted worker anchors the value (a value
        /// anchored by nothing but its quorum always gets one); the rest are exported as
        /// `unaudited` (0..1).
        #[arg(long, default_value_t = 0.1)]
        audit_replica_rate: f64,
        /// A passed check counts towards a worker's trust only this many seconds after the last
        /// one that counted (--trust-after checks spread over time; 0: every check counts).
        #[arg(long, default_value_t = 20)]
        trust_check_spacing_secs: u64,
        /// Hand each worker its replicas drawn at random from at least this many of a
        /// campaign's ready workunits, so that which workers share a workunit is the
        /// coordinator's choice, not the order of their fetches (0: in order, lowest id first).
        #[arg(long, default_value_t = c960_coordinator::scheduler::DRAW_POOL)]
        draw_pool: u64,
        /// Open leases of a worker in probation (untrusted, no result returned yet): free
        /// identities under --open-enrolment cannot hoard the work (0: no probation cap).
        #[arg(long, default_value_t = c960_coordinator::trust::PROBATION_LEASE_CAP)]
        probation_lease_cap: u64,
        /// Open leases of all workers in probation of one address block together, loopback and
        /// private blocks too (0: no cap).
        #[arg(long, default_value_t = c960_coordinator::trust::PROBATION_BLOCK_CAP)]
        probation_block_cap: u64,
        /// Percent of each campaign's remaining replicas that workers in probation may hold
        /// together (at least 4; a block holding none gets one more; 0: no share).
        #[arg(long, default_value_t = c960_coordinator::trust::PROBATION_SHARE_PCT, value_parser = clap::value_parser!(u64).range(0..=100))]
        probation_share_percent: u64,
        /// A UCI engine the coordinator audits UCI analyses and self-play games with, e.g.
        /// /usr/games/stockfish: the same build as the volunteers' (only the same build's values
        /// compare; others go to hidden audit replicas).
        #[arg(long, value_name = "COMMAND")]
        uci: Option<String>,
        /// Fastest plausible result, perft nodes per second from lease to receipt (0: off).
        #[arg(long, default_value_t = 20_000_000_000)]
        max_nodes_per_sec: u64,
        /// Registrations per hour per address block (bursts of 10; 0: no limit).
        #[arg(long, default_value_t = 60.0)]
        registrations_per_hour: f64,
        /// Registrations per hour from all addresses together (bursts of 200; 0: no limit).
        #[arg(long, default_value_t = c960_coordinator::api::state::DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR)]
        registrations_per_hour_total: f64,
        /// Connections one client address may hold open; more are closed at once (0: no cap;
        /// raise it behind a reverse proxy).
        #[arg(long, default_value_t = conn::DEFAULT_PER_ADDRESS)]
        max_connections_per_address: usize,
        /// Connections one address block (IPv4 /24, IPv6 /48) may hold open; more are closed at
        /// once (0: no cap).
        #[arg(long, default_value_t = conn::DEFAULT_PER_BLOCK)]
        max_connections_per_block: usize,
        /// Connections open in all (0: no cap). Default: from the open-file limit, which serve
        /// raises to the hard limit at start (7/8 of it, at most 16384). At the cap, a client of
        /// a lighter address block is still admitted: the oldest idle connection of the
        /// heaviest block is closed instead.
        #[arg(long)]
        max_connections: Option<usize>,
        /// Seconds a client may take to send a request's headers (idle keep-alives included).
        #[arg(long, default_value_t = 10)]
        header_timeout_secs: u64,
        /// Seconds a connection may move no byte while no request of it is handled.
        #[arg(long, default_value_t = 30)]
        idle_timeout_secs: u64,
        /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Log lines as `text` (colour only on a terminal) or `json` (one object a line).
        #[arg(long, default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
        /// A reverse proxy (an IP address or a CIDR block; repeatable) whose X-Forwarded-For
        /// names the client: requests from it are limited, blocked and logged by the rightmost
        /// forwarded address that is not itself a trusted proxy. From any other peer the
        /// header is ignored.
        #[arg(long, value_parser = c960_coordinator::proxies::parse_proxy)]
        trusted_proxy: Vec<ipnet::IpNet>,
    },
    /// Inspect and manage workers (list, show, ban, unban, trust, untrust).
    Worker {
        #[command(subcommand)]
        command: WorkerCommand,
    },
    /// Per-volunteer enrolment tokens (`serve --enrolment tokens`): mint, list, revoke.
    Token {
        #[command(subcommand)]
        command: cli_tokens::TokenCommand,
    },
    /// Manage campaigns.
    Campaign {
        #[command(subcommand)]
        command: cli_campaigns::CampaignCommand,
    },
    /// Move everything (campaigns with their names, priorities and states, enrolment tokens,
    /// workunits, leases, results, workers and their tokens, settings, counters) from one database into another, empty one, e.g. from SQLite to
    /// PostgreSQL when one coordinator is no longer enough. Stop the coordinators first.
    Migrate {
        /// The database to copy (a SQLite file or a `postgres://` URL).
        #[arg(long)]
        from: PathBuf,
        /// The empty database to fill (created and migrated if needed).
        #[arg(long)]
        to: PathBuf,
    },
    /// Export a campaign's table.
    Export {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Campaign id.
        #[arg(long)]
        campaign: u64,
        /// csv or json; for analysis campaigns also balance (JSON report), svg (chart) or depths
        /// (every completed depth of every result, CSV); for self-play campaigns also pgn.
        #[arg(long, default_value = "csv")]
        format: String,
        /// Output file (default stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a whole perft (or analysis) campaign on this machine with in-process workers, then
    /// print the table. Ctrl-C stops it: the workers give their leases back, it says what was
    /// done and how to resume (the same --db), and exits with status 130.
    #[cfg(feature = "run")]
    Run {
        /// Perft depth, or search depth with --analyse (not with --self-play).
        #[arg(
            long,
            required_unless_present = "self_play",
            allow_negative_numbers = true
        )]
        depth: Option<i64>,
        /// An analysis campaign (fixed-depth search per start position) instead of perft.
        #[arg(long, conflicts_with = "self_play")]
        analyse: bool,
        #[command(flatten)]
        self_play: SelfPlayArgs,
        /// With --analyse or --self-play: `builtin`, or `uci:COMMAND` for a UCI engine such as
        /// /usr/games/stockfish or "node /opt/sf/stockfish-19-single.js".
        #[arg(long)]
        engine: Option<String>,
        /// Perft: split each start position at this ply, merging transpositions (0: no split;
        /// auto: the smallest ply that keeps a workunit under ten minutes on one core).
        #[arg(long, default_value = "auto")]
        split_ply: String,
        /// Perft hash table per local worker in MiB, kept across workunits (0: none).
        #[arg(long, default_value_t = 256)]
        hash: u32,
        /// In-process workers (default: one per core, at least the quorum).
        #[arg(long)]
        local_workers: Option<usize>,
        /// SQLite database file, or a `postgres://` URL; run again with the same database to
        /// resume (on PostgreSQL not beside a `serve` of the same database: a run hands out
        /// again every open lease when it starts).
        #[arg(long, default_value = "c960-run.db")]
        db: PathBuf,
        /// Write the CSV table here (default: stdout, before the total).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        starts: StartsArgs,
        /// Agreeing results from distinct workers needed per workunit.
        #[arg(long, default_value_t = 2)]
        quorum: u32,
        /// Results per workunit after which it fails without quorum (default quorum + 2).
        #[arg(long)]
        max_results: Option<u32>,
        /// Lease duration in seconds.
        #[arg(long, default_value_t = 3600)]
        lease_secs: u64,
    },
}

/// A self-play campaign's budget (`campaign add` and `run`).
#[derive(clap::Args)]
struct SelfPlayArgs {
    /// A self-play campaign: --games games per start, the engine against itself at --nodes
    /// nodes a move (`run` writes the per-start score table, CSV).
    #[arg(long, requires_all = ["games", "nodes"])]
    self_play: bool,
    /// With --self-play: games per start (one workunit each).
    #[arg(long, requires = "self_play")]
    games: Option<u32>,
    /// With --self-play: nodes per engine move (`go nodes`).
    #[arg(long, requires = "self_play")]
    nodes: Option<u64>,
}

impl SelfPlayArgs {
    /// The budget, when --self-play was given.
    fn budget(&self) -> Option<c960_coordinator::campaign::SelfPlayBudget> {
        match (self.self_play, self.games, self.nodes) {
            (true, Some(games), Some(nodes)) => {
                Some(c960_coordinator::campaign::SelfPlayBudget { games, nodes })
            }
            _ => None,
        }
    }
}

/// Which starts a campaign covers.
#[derive(clap::Args)]
struct StartsArgs {
    /// Start positions, e.g. 0-9,518 (default: the whole family, up to 5040 starts).
    #[arg(long)]
    positions: Option<String>,
    /// The family the positions are numbered in (docs/families.md): chess960, shuffle,
    /// bishops, chess960-nc, shuffle-nc, bishops-nc, transcendental, dfrc.
    #[arg(long, default_value = "chess960")]
    family: String,
    /// A reproducible sample of this many starts of the family instead of --positions.
    #[arg(long)]
    sample: Option<u32>,
    /// The seed of --sample.
    #[arg(long, default_value_t = 0, requires = "sample")]
    seed: u64,
}

#[derive(Subcommand)]
enum WorkerCommand {
    /// List every worker with its credit, strikes and state, most credit (validated nodes, then results) first.
    List {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
    },
    /// One worker's standing and its latest results.
    Show {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Worker id.
        id: u64,
    },
    /// Ban a worker: it gets nothing more, and what it helped validate is re-verified.
    Ban {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Worker id.
        id: u64,
    },
    /// Lift a ban or quarantine (and forgive the worker's strikes).
    Unban {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Worker id.
        id: u64,
    },
    /// Trust a worker (the operator vouches for it): its results anchor values at once.
    Trust {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Worker id.
        id: u64,
    },
    /// Withdraw a worker's trust (earned or granted).
    Untrust {
        /// SQLite database file, or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Worker id.
        id: u64,
    },
}

/// A `--depth` as given (none: 0, which self-play needs and perft refuses) as plies. Taken as a
/// signed number so that `--depth -1` is refused as a depth, not as an unknown flag; the range
/// of each kind is checked with the campaign ([`c960_coordinator::campaign::NewCampaign`]).
fn plies(depth: Option<i64>) -> Result<u32> {
    match depth {
        None => Ok(0),
        Some(d) => u32::try_from(d)
            .map_err(|_| anyhow!("--depth {d}: a depth is a number of plies, 1 or more")),
    }
}

/// Opens a database, creating it if missing (`serve` and `run` only).
fn open(db: &Path) -> Result<Box<dyn Store>> {
    c960_coordinator::store::open(db)
}

/// A secret kept in a file: its first line, without the line ending; an unreadable or empty
/// file is an error naming the flag.
fn secret_from_file(path: &Path, flag: &str) -> Result<String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("{flag} {}: {e}", path.display()))?;
    let secret = text.lines().next().unwrap_or("").trim_end();
    if secret.is_empty() {
        return Err(anyhow!(
            "{flag} {}: the file holds no secret",
            path.display()
        ));
    }
    Ok(secret.to_string())
}

/// Opens a database that must exist: a mistyped `--db` must not create an empty one. (A
/// PostgreSQL database exists or the connection fails; its schema is migrated on open.)
fn open_existing(db: &Path) -> Result<Box<dyn Store>> {
    if !is_postgres_url(&db.to_string_lossy()) && !db.is_file() {
        return Err(anyhow!(
            "no database at {} (`c960-coordinator serve --db PATH` creates one)",
            db.display()
        ));
    }
    open(db)
}

/// Logs to stderr as text (ANSI colour only when stderr is a terminal) or JSON lines.
fn init_tracing(default: &str, json: bool) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let fmt = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    if json {
        fmt.json().init();
    } else {
        fmt.with_ansi(std::io::stderr().is_terminal()).init();
    }
}

/// Resolves on Ctrl-C or SIGTERM. Stopping abruptly is safe too (every change is one
/// transaction); this only lets in-flight requests finish.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn serve(
    listen: String,
    db: PathBuf,
    config: Config,
    mut connections: ConnLimits,
    max_connections: Option<usize>,
    tls: Option<(PathBuf, PathBuf)>,
    json_logs: bool,
) -> Result<()> {
    init_tracing("info", json_logs);
    let descriptors = conn::raise_descriptor_limit();
    if max_connections.is_none() {
        connections.total = conn::total_for_descriptors(descriptors);
    } else if connections.total != 0 && connections.total as u64 + 256 > descriptors {
        tracing::warn!(
            descriptors,
            "--max-connections {} leaves fewer than 256 of the open-file limit for the database and logs",
            connections.total
        );
    }
    connections.held_refusals = conn::held_for_descriptors(descriptors, connections.total);
    tracing::info!(
        total = connections.total,
        per_block = connections.per_block,
        per_address = connections.per_address,
        descriptors,
        "connection caps"
    );
    let tls = match tls {
        Some((cert, key)) => Some(c960_coordinator::tls::server_config(&cert, &key)?),
        None => None,
    };
    let store: Arc<dyn Store> = Arc::from(open(&db)?);
    let _checker = checker::spawn(store.clone(), config.checks, config.uci.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = conn::bind(&listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        // The first stdout line names the address, so scripts and tests can use port 0.
        let scheme = if tls.is_some() { "https" } else { "http" };
        println!("listening on {scheme}://{}", listener.local_addr()?);
        let enrolment = match &config.enrolment {
            Enrolment::Open => "open",
            Enrolment::Secret(_) => "by secret",
            Enrolment::Tokens => "by token",
            Enrolment::Closed => "closed",
        };
        tracing::info!(db = %db.display(), enrolment, "serving");
        if !config.trusted_proxies.is_empty() {
            tracing::info!(proxies = ?config.trusted_proxies, "X-Forwarded-For believed from these peers");
        }
        let listener =
            GatedListener::behind(listener, connections, config.trusted_proxies.clone());
        let app = api::app(AppState::new(store, config));
        match tls {
            Some(tls) => {
                let listener = c960_coordinator::tls::TlsListener::new(listener, tls)?;
                conn::serve(listener, app, connections, stop_signal()).await?
            }
            None => conn::serve(listener, app, connections, stop_signal()).await?,
        }
        Ok(())
    })
}

#[cfg(feature = "run")]
use {c960_common::wire::AnalysisEngine, c960_compute::uci_engine::UciCommand};

#[cfg(feature = "run")]
/// `builtin` or `uci:COMMAND` (the `--engine` of `run --analyse`; the command is split
/// shell-style, e.g. `uci:node /opt/sf/stockfish-19-single.js`).
fn parse_run_engine(text: &str) -> Result<(Option<AnalysisEngine>, Option<UciCommand>)> {
    match text.split_once(':') {
        None if text == "builtin" => Ok((Some(AnalysisEngine::Builtin), None)),
        Some(("uci", command)) if !command.trim().is_empty() => Ok((
            Some(AnalysisEngine::Uci),
            Some(UciCommand::parse(command).map_err(|e| anyhow!("--engine: {e:#}"))?),
        )),
        _ => Err(anyhow!("--engine {text:?}: use builtin or uci:COMMAND")),
    }
}

fn main() -> ExitCode {
    let cli: Cli = match cli_config::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(cli_config::Refusal::File(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Err(cli_config::Refusal::Clap(e)) => e.exit(),
    };
    let result: Result<ExitCode> = (|| match cli.command {
        Command::Serve {
            config: _,
            listen,
            db,
            lease_secs,
            max_strikes,
            retry_after_secs,
            enrol_secret,
            enrol_secret_file,
            open_enrolment,
            enrolment,
            admin_token,
            admin_token_file,
            rate_per_address,
            rate_per_worker,
            export_rate_per_address,
            max_open_leases,
            request_timeout_secs,
            max_connections_per_address,
            max_connections_per_block,
            max_connections,
            header_timeout_secs,
            idle_timeout_secs,
            tls_cert,
            tls_key,
            trusted_proxy,
            check_rate,
            check_rate_trusted,
            check_max_nodes,
            check_max_analysis_depth,
            trust_after,
            untrusted_lease_cap,
            block_lease_cap,
            lease_renewal_secs,
            address_separation,
            shared_address_blocks,
            registration_burst_secs,
            resplit_rate,
            audit_rate,
            audit_replica_rate,
            trust_check_spacing_secs,
            draw_pool,
            probation_lease_cap,
            probation_block_cap,
            probation_share_percent,
            uci,
            max_nodes_per_sec,
            registrations_per_hour,
            registrations_per_hour_total,
            log_format,
        } => {
            let heartbeat = c960_common::wire::HEARTBEAT_SECS;
            if lease_renewal_secs != 0 && lease_renewal_secs < 2 * heartbeat {
                bail!(
                    "--lease-renewal-secs must be 0 (no renewals) or at least {} (workers renew every {heartbeat} s)",
                    2 * heartbeat
                );
            }
            let ppm = |name: &str, r: f64| -> Result<u64> {
                if !(0.0..=1.0).contains(&r) {
                    return Err(anyhow!("--{name} must be between 0 and 1, got {r}"));
                }
                Ok((r * 1e6).round() as u64)
            };
            let enrol_secret = match enrol_secret_file {
                Some(path) => Some(secret_from_file(&path, "--enrol-secret-file")?),
                None => enrol_secret,
            };
            let admin_token = match admin_token_file {
                Some(path) => Some(secret_from_file(&path, "--admin-token-file")?),
                None => admin_token,
            };
            let enrolment = match (enrol_secret, open_enrolment) {
                _ if enrolment.is_some() => Enrolment::Tokens,
                (Some(s), _) if s.len() < 16 => {
                    return Err(anyhow!("--enrol-secret must be at least 16 characters"));
                }
                (Some(s), _) => Enrolment::secret(&s),
                (None, true) => Enrolment::Open,
                (None, false) => {
                    eprintln!(
                        "warning: enrolment is closed (no --enrol-secret, no --open-enrolment): only registered workers can work"
                    );
                    Enrolment::Closed
                }
            };
            if admin_token.as_ref().is_some_and(|t| t.len() < 16) {
                return Err(anyhow!("--admin-token must be at least 16 characters"));
            }
            let config = Config {
                lease: Duration::from_secs(lease_secs.max(1)),
                max_strikes,
                retry_after_secs,
                enrolment,
                admin_token_hash: admin_token.as_deref().map(auth::sha256),
                limits: Limits {
                    per_address: Rate::new(rate_per_address, rate_per_address * 4.0),
                    per_worker: Rate::new(rate_per_worker, rate_per_worker * 4.0),
                    max_open_leases,
                    request_timeout: Duration::from_secs(request_timeout_secs.max(1)),
                    registrations_per_block: Rate::new(registrations_per_hour / 3600.0, 10.0),
                    registrations_total: Rate::new(
                        registrations_per_hour_total / 3600.0,
                        c960_coordinator::api::state::REGISTRATIONS_TOTAL_BURST,
                    ),
                    export_per_address: Rate::new(
                        export_rate_per_address,
                        export_rate_per_address * 4.0,
                    ),
                    ..Limits::default()
                },
                integrity: Integrity {
                    trust_after_checks: trust_after,
                    check_rate_untrusted_ppm: ppm("check-rate", check_rate)?,
                    check_rate_trusted_ppm: ppm("check-rate-trusted", check_rate_trusted)?,
                    untrusted_lease_cap,
                    address_separation: if shared_address_blocks {
                        AddressSeparation::Off
                    } else {
                        address_separation
                    },
                    block_lease_cap,
                    max_nodes_per_sec,
                    registration_burst_ms: registration_burst_secs.saturating_mul(1000),
                    resplit_rate_ppm: ppm("resplit-rate", resplit_rate)?,
                    lease_renewal_ms: lease_renewal_secs * 1000,
                    audit_rate_ppm: ppm("audit-rate", audit_rate)?,
                    audit_replica_rate_ppm: ppm("audit-replica-rate", audit_replica_rate)?,
                    trust_check_spacing_ms: trust_check_spacing_secs.saturating_mul(1000),
                    draw_pool,
                    probation_lease_cap,
                    probation_block_cap,
                    probation_share_pct: probation_share_percent,
                },
                checks: CheckBudget {
                    max_nodes: check_max_nodes,
                    max_analysis_depth: check_max_analysis_depth,
                    ..CheckBudget::default()
                },
                uci: uci
                    .as_deref()
                    .map(c960_compute::uci_engine::UciCommand::parse)
                    .transpose()
                    .map_err(|e| anyhow!("--uci: {e:#}"))?,
                trust_enrolled: false,
                trusted_proxies: TrustedProxies::new(trusted_proxy),
            };
            let connections = ConnLimits {
                per_address: max_connections_per_address,
                per_block: max_connections_per_block,
                // Without the flag, sized by `serve` once it has raised the descriptor limit.
                total: max_connections.unwrap_or(0),
                held_refusals: 0,
                header_timeout: Duration::from_secs(header_timeout_secs.max(1)),
                idle_timeout: Duration::from_secs(idle_timeout_secs.max(1)),
            };
            serve(
                listen,
                db,
                config,
                connections,
                max_connections,
                tls_cert.zip(tls_key),
                log_format == "json",
            )
            .map(|_| ExitCode::SUCCESS)
        }
        Command::Token { command } => {
            cli_tokens::run(command, open_existing)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker { command } => {
            let w = match command {
                WorkerCommand::List { db } => {
                    cli_workers::list(&*open_existing(&db)?)?;
                    return Ok(ExitCode::SUCCESS);
                }
                WorkerCommand::Show { db, id } => {
                    cli_workers::show(&*open_existing(&db)?, id)?;
                    return Ok(ExitCode::SUCCESS);
                }
                WorkerCommand::Ban { db, id } => {
                    open_existing(&db)?.set_banned(id, true, c960_coordinator::clock::now_ms())?
                }
                WorkerCommand::Unban { db, id } => {
                    open_existing(&db)?.set_banned(id, false, c960_coordinator::clock::now_ms())?
                }
                WorkerCommand::Trust { db, id } => open_existing(&db)?.set_trust(id, true)?,
                WorkerCommand::Untrust { db, id } => open_existing(&db)?.set_trust(id, false)?,
            };
            println!(
                "worker {} ({}): trust {}, banned {}, quarantined {}, {} valid, {} lost votes, {} refused, checks {} passed {} failed",
                w.id,
                w.name,
                w.trust,
                w.banned,
                w.quarantined,
                w.valid,
                w.lost_votes,
                w.refused,
                w.checks_passed,
                w.checks_failed
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Campaign { command } => {
            cli_campaigns::run(command, |db| open_existing(db))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate { from, to } => {
            let source = open_existing(&from)?;
            let target = open(&to)?;
            let counts = c960_coordinator::store::copy::copy_store(&*source, &*target)
                .with_context(|| "migrate: nothing was written".to_string())?;
            for (table, n) in counts {
                println!("{table}: {n} rows");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Export {
            db,
            campaign,
            format,
            out,
        } => {
            let format = Format::parse(&format).map_err(|e| anyhow!("--format: {e}"))?;
            let mut text =
                export::render(&*open_existing(&db)?, campaign, format)?.map_err(|e| anyhow!(e))?;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            match out {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => print!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "run")]
        Command::Run {
            depth,
            analyse,
            self_play,
            engine,
            split_ply,
            hash,
            local_workers,
            db,
            out,
            starts,
            quorum,
            max_results,
            lease_secs,
        } => {
            let (analysis, uci) = if analyse || self_play.self_play {
                parse_run_engine(engine.as_deref().unwrap_or("builtin"))?
            } else if engine.is_some() {
                bail!("--engine is for --analyse and --self-play");
            } else {
                (None, None)
            };
            let self_play = self_play.budget();
            init_tracing("warn", false);
            let opts = RunOptions {
                depth: plies(depth)?,
                analysis,
                uci,
                self_play,
                split_ply,
                hash_mib: hash,
                local_workers,
                db,
                out,
                positions: starts.positions,
                family: starts.family,
                sample: starts.sample,
                seed: starts.seed,
                quorum,
                max_results,
                lease: Duration::from_secs(lease_secs.max(1)),
                progress: true,
            };
            Ok(match run::run(opts)? {
                RunOutcome::Complete(_) => ExitCode::SUCCESS,
                RunOutcome::Failed { .. } => ExitCode::FAILURE,
                RunOutcome::Interrupted => ExitCode::from(130),
            })
        }
    })();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
