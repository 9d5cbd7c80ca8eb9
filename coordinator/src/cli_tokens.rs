//! `c960-coordinator token …`: the operator's per-volunteer enrolment tokens
//! (`c960_coordinator::integrity::enrolment`), on the database directly.

use std::path::Path;

use crate::Database;
use anyhow::Result;
use c960_coordinator::clock::now_ms;
use c960_coordinator::integrity::secrets;
use c960_coordinator::store::Store;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Mint a token for one volunteer; prints it once (only its hash is kept).
    Mint {
        #[command(flatten)]
        db: Database,
        /// Whom it is for (your note).
        #[arg(long)]
        name: String,
        /// Workers it may register (0: no cap).
        #[arg(long, default_value_t = 1)]
        cap: u64,
    },
    /// Every token: id, name, workers registered / cap, revoked.
    List {
        #[command(flatten)]
        db: Database,
    },
    /// Revoke a token: it registers nobody more (its workers keep working).
    Revoke {
        #[command(flatten)]
        db: Database,
        /// Token id (the part before the dot).
        id: u64,
    },
}

/// Runs one token subcommand.
pub fn run(command: TokenCommand, open: impl Fn(&Path) -> Result<Box<dyn Store>>) -> Result<()> {
    match command {
        TokenCommand::Mint { db, name, cap } => {
            let secret = secrets::new_secret();
            let t =
                open(&db)?.mint_enrolment_token(&name, cap, &secrets::sha256(&secret), now_ms())?;
            c960_cli::outln!("{}", secrets::format_token(t.id, &secret))?;
            eprintln!(
                "enrolment token {} for {:?}, up to {} workers: hand it to the volunteer (c960-worker work --enrol-secret TOKEN)",
                t.id,
                t.name,
                if t.cap == 0 {
                    "any number of".to_string()
                } else {
                    t.cap.to_string()
                }
            );
        }
        TokenCommand::List { db } => {
            c960_cli::outln!("{:>6}  {:>11}  {:<7}  name", "id", "used/cap", "state")?;
            for t in open(&db)?.enrolment_tokens()? {
                let cap = if t.cap == 0 {
                    "-".into()
                } else {
                    t.cap.to_string()
                };
                let state = if t.revoked { "revoked" } else { "active" };
                c960_cli::outln!(
                    "{:>6}  {:>11}  {state:<7}  {}",
                    t.id,
                    format!("{}/{cap}", t.used),
                    t.name
                )?;
            }
        }
        TokenCommand::Revoke { db, id } => {
            let t = open(&db)?.revoke_enrolment_token(id, now_ms())?;
            c960_cli::outln!(
                "enrolment token {} ({:?}) revoked; it registered {} workers",
                t.id,
                t.name,
                t.used
            )?;
        }
    }
    Ok(())
}
