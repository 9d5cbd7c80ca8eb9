//! `c960-coordinator`: serve the coordinator, manage campaigns, export tables, or run a whole
//! campaign on this machine.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use c960_common::wire::AnalysisEngine;
use c960_coordinator::export::{self, Format};
use c960_coordinator::model::CampaignKind;
#[cfg(feature = "run")]
use c960_coordinator::run::{self, RunOptions, RunOutcome};
use c960_coordinator::store::{Store, postgres::is_postgres_url};
use c960_coordinator::work::campaign::{CampaignRequest, Named, SplitPly};
use clap::{CommandFactory, Parser, Subcommand};

mod cli_backup;
mod cli_boinc;
mod cli_campaigns;
mod cli_config;
mod cli_serve;
mod cli_tokens;
mod cli_workers;

/// c960 coordinator: hands out Chess960 perft workunits and accepts results by quorum.
#[derive(Parser)]
#[command(name = "c960-coordinator", version = c960_cli::build_info::version_line(), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of `serve`'s variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API.
    Serve(cli_serve::ServeArgs),
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
    /// The BOINC project side (`serve --boinc`): its code-signing key.
    Boinc {
        #[command(subcommand)]
        command: cli_boinc::BoincCommand,
    },
    /// Take a checked copy of a SQLite store while `serve` runs on it (SQLite's VACUUM INTO:
    /// one consistent snapshot); it is checked (integrity, schema, row counts) before it gets
    /// its name. The coordinator package runs it daily (c960-coordinator-backup.timer).
    Backup(cli_backup::BackupArgs),
    /// Put a copy written by `backup` in the place of a SQLite store (stop `serve` first); the
    /// database there is moved aside, never deleted.
    Restore(cli_backup::RestoreArgs),
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
        #[command(flatten)]
        db: Database,
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
        #[command(flatten)]
        campaign: CampaignArgs,
        /// With --analyse or --self-play: `builtin`, or `uci:COMMAND` for a UCI engine such as
        /// /usr/games/stockfish or "node /opt/sf/stockfish-19-single.js".
        #[arg(long)]
        engine: Option<String>,
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
        /// Lease duration in seconds.
        #[arg(long, default_value_t = 3600)]
        lease_secs: u64,
        /// Run it even when it is past the bound of `campaign add` (a million workunits, a day
        /// a workunit).
        #[arg(long)]
        force: bool,
    },
}

/// What a campaign computes and how it is validated: the options `campaign add` and `run`
/// share (one struct, so the two cannot drift).
#[derive(clap::Args)]
struct CampaignArgs {
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
    /// Perft: split each start position at this ply, merging transpositions (0: no split;
    /// auto: the smallest ply that keeps a workunit under ten minutes on one core).
    #[arg(long, default_value = "auto")]
    split_ply: String,
    #[command(flatten)]
    starts: StartsArgs,
    /// Agreeing results from distinct workers needed per workunit.
    #[arg(long, default_value_t = 2)]
    quorum: u32,
    /// Results per workunit after which it fails without quorum (default quorum + 2).
    #[arg(long)]
    max_results: Option<u32>,
}

/// The database a command reads or writes: the one `--db` of every command but `serve` and
/// `run` (whose databases are created when missing, and have a config file and a default).
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct Database {
    /// SQLite database file (`serve --db` creates it), or a `postgres://` URL.
    #[arg(long = "db", value_name = "DB")]
    path: PathBuf,
}

impl std::ops::Deref for Database {
    type Target = PathBuf;

    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl CampaignArgs {
    /// What the flags ask for: perft, unless --analyse or --self-play.
    fn kind(&self) -> CampaignKind {
        match (self.analyse, self.self_play.self_play) {
            (_, true) => CampaignKind::SelfPlay,
            (true, false) => CampaignKind::Analysis,
            (false, false) => CampaignKind::Perft,
        }
    }

    /// The campaign these options ask for, searched or played with `engine`: the one recipe of
    /// `campaign add` and `run`, which both plan it as the HTTP API does.
    fn request(self, engine: Option<Named<AnalysisEngine>>) -> Result<CampaignRequest> {
        let budget = self.self_play.budget();
        Ok(CampaignRequest {
            depth: plies(self.depth)?,
            kind: Some(Named::Known(self.kind())),
            engine,
            games: budget.map(|b| b.games),
            nodes: budget.map(|b| b.nodes),
            split_ply: Some(SplitPly::Text(self.split_ply)),
            quorum: Some(self.quorum),
            max_results: self.max_results,
            positions: self.starts.positions,
            family: Some(self.starts.family),
            sample: self.starts.sample,
            seed: Some(self.starts.seed),
            ..CampaignRequest::default()
        })
    }
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
    fn budget(&self) -> Option<c960_coordinator::work::campaign::SelfPlayBudget> {
        match (self.self_play, self.games, self.nodes) {
            (true, Some(games), Some(nodes)) => {
                Some(c960_coordinator::work::campaign::SelfPlayBudget { games, nodes })
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
        #[command(flatten)]
        db: Database,
    },
    /// One worker's standing and its latest results.
    Show {
        #[command(flatten)]
        db: Database,
        /// Worker id.
        id: u64,
    },
    /// Ban a worker: it gets nothing more, and what it helped validate is re-verified.
    Ban {
        #[command(flatten)]
        db: Database,
        /// Worker id.
        id: u64,
    },
    /// Lift a ban or quarantine (and forgive the worker's strikes).
    Unban {
        #[command(flatten)]
        db: Database,
        /// Worker id.
        id: u64,
    },
    /// Trust a worker (the operator vouches for it): its results anchor values at once.
    Trust {
        #[command(flatten)]
        db: Database,
        /// Worker id.
        id: u64,
    },
    /// Withdraw a worker's trust (earned or granted).
    Untrust {
        #[command(flatten)]
        db: Database,
        /// Worker id.
        id: u64,
    },
}

/// A `--depth` as given (none: 0, which self-play needs and perft refuses) as plies. Taken as a
/// signed number so that `--depth -1` is refused as a depth, not as an unknown flag; the range
/// of each kind is checked with the campaign ([`c960_coordinator::work::campaign::NewCampaign`]).
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

#[cfg(feature = "run")]
use c960_compute::uci_engine::UciCommand;

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
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = c960_cli::install_files::intercept(&args, <Cli as CommandFactory>::command)
    {
        return code;
    }
    let cli: Cli = match cli_config::parse(args) {
        Ok(cli) => cli,
        Err(cli_config::Refusal::File(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
        Err(cli_config::Refusal::Clap(e)) => e.exit(),
    };
    let result: Result<ExitCode> = (|| match cli.command {
        Command::Serve(args) => args.run(),
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
            c960_cli::outln!(
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
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Campaign { command } => {
            cli_campaigns::run(command, |db| open_existing(db))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Backup(args) => {
            cli_backup::run_backup(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Restore(args) => {
            cli_backup::run_restore(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Boinc { command } => {
            cli_boinc::run(command)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate { from, to } => {
            let source = open_existing(&from)?;
            let target = open(&to)?;
            let counts = c960_coordinator::store::copy::copy_store(&*source, &*target)
                .with_context(|| "migrate: nothing was written".to_string())?;
            for (table, n) in counts {
                c960_cli::outln!("{table}: {n} rows")?;
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
                None => std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?,
            }
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(feature = "run")]
        Command::Run {
            campaign,
            engine,
            hash,
            local_workers,
            db,
            out,
            lease_secs,
            force,
        } => {
            let (analysis, uci) = if campaign.kind() != CampaignKind::Perft {
                parse_run_engine(engine.as_deref().unwrap_or("builtin"))?
            } else if engine.is_some() {
                anyhow::bail!("--engine is for --analyse and --self-play");
            } else {
                (None, None)
            };
            init_tracing("warn", false);
            let opts = RunOptions {
                campaign: CampaignRequest {
                    force: Some(force),
                    ..campaign.request(analysis.map(Named::Known))?
                },
                uci,
                hash_mib: hash,
                local_workers,
                db,
                out,
                lease: std::time::Duration::from_secs(lease_secs.max(1)),
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
        // Whoever read the output (`… | head`) has all they wanted.
        Err(e) if c960_cli::stdout::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
