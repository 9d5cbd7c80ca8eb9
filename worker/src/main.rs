//! `c960-worker`: the volunteer worker and the one-off perft / position tool.

/// `println!` that returns an error instead of panicking when stdout is gone (a closed pipe:
/// `c960-worker position 5 | head -1`); `main` ends such a run quietly with success.
macro_rules! outln {
    () => {
        std::io::Write::write_all(&mut std::io::stdout(), b"\n")?
    };
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` as [`outln!`] does `println!`.
macro_rules! out {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout(), format_args!($($arg)*))?
    };
}

mod cli_analyse;
mod cli_balance;
mod cli_bench;
mod cli_draw;
mod cli_perft;
mod cli_position;
mod cli_work;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// c960 worker: donate compute to Chess960, or run one-off perft and position queries.
#[derive(Parser)]
#[command(name = "c960-worker", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaves of the legal move tree (perft).
    Perft(cli_perft::PerftArgs),
    /// Measure perft speed on a fixed set of positions.
    Bench(cli_bench::BenchArgs),
    /// Show a start position by number, or find the number of an arrangement or FEN.
    Position(cli_position::PositionArgs),
    /// Draw a start by the uniform, card or coin procedure, or analyse a procedure exactly.
    Draw(cli_draw::DrawArgs),
    /// Donate compute: fetch workunits from a coordinator, compute them, submit the results.
    Work(cli_work::WorkArgs),
    /// Search a position with the built-in engine or a UCI engine (score from White's view).
    Analyse(cli_analyse::AnalyseArgs),
    /// Summarise per-position scores: ranking, mean White edge, spread, 518, correlation, chart.
    Balance(cli_balance::BalanceArgs),
    /// Compute one workunit as a BOINC application, in the slot directory the BOINC client
    /// starts it in (wu.json in, result.json out); not for running by hand.
    BoincApp(BoincAppArgs),
}

#[derive(clap::Args)]
struct BoincAppArgs {
    /// The computing child of the supervising `boinc-app` (progress lines on stdout).
    #[arg(long, hide = true)]
    compute: bool,
}

/// The version line: the build (version, commit, protocol), and the CPU features its perft
/// engine picked on this machine.
fn version() -> String {
    let line = c960_cli::build_info::version_line();
    let features = c960_common::perft::cpu_features();
    // `0.2.0 (commit …, protocol 5, perft: …)`
    format!("{}, perft: {features})", line.trim_end_matches(')'))
}

/// `boinc-app --compute`: the workunit of the current directory, a progress line on stdout for
/// the supervisor after each step (none when it is gone).
fn boinc_compute() -> anyhow::Result<()> {
    let mut stdout = std::io::stdout();
    c960_worker::boinc_app::compute(std::path::Path::new("."), |done, total| {
        let line = c960_worker::boinc_app::progress_line(done, total);
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    })
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The packaged man pages name the build, not the CPU of the machine that built them.
    let plain = || Cli::command().version(c960_cli::build_info::version_line());
    if let Some(code) = c960_cli::install_files::intercept(&args, plain) {
        return code;
    }
    // Built once per process; clap keeps `&'static str`s.
    let command = Cli::command().version(&*Box::leak(version().into_boxed_str()));
    let cli = match command
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with success; usage errors exit 2 via clap.
            e.exit();
        }
    };
    let result = match cli.command {
        Command::Perft(args) => cli_perft::run(args),
        Command::Position(args) => cli_position::run(args),
        Command::Draw(args) => cli_draw::run(args),
        Command::Bench(args) => cli_bench::run(args),
        Command::Work(args) => cli_work::run(args),
        Command::Analyse(args) => cli_analyse::run(args),
        Command::Balance(args) => cli_balance::run(args),
        Command::BoincApp(args) if args.compute => boinc_compute(),
        Command::BoincApp(_) => match c960_worker::boinc_app::run(std::path::Path::new(".")) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Whoever read the output has all they wanted.
        Err(e) if c960_cli::stdout::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
