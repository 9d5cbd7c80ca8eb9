//! `c960-worker`: the volunteer worker and the one-off perft / position tool.

mod cli_analyse;
mod cli_balance;
mod cli_bench;
mod cli_draw;
mod cli_perft;
mod cli_position;
mod cli_work;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// c960 worker: donate compute to Chess960, or run one-off perft and position queries.
#[derive(Parser)]
#[command(name = "c960-worker", version, about)]
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
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
