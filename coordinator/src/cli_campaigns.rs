//! `campaign add | list | show | name | priority | pause | resume | cancel`: campaign management
//! on the command line, through the same request type ([`CampaignRequest`]), store calls and
//! rules as the admin HTTP endpoints.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use c960_coordinator::clock::now_ms;
use c960_coordinator::model::{Campaign, CampaignAction, CampaignChange, CampaignProgress};
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::{CampaignRequest, CampaignWarning, Named, check_name};
use c960_coordinator::work::transitioner::CampaignState;
use clap::Subcommand;

use crate::{CampaignArgs, Database};

#[derive(Subcommand)]
pub enum CampaignCommand {
    /// Add a perft (or analysis) campaign; prints its id on stdout, and on stderr its
    /// workunits, split ply and estimated nodes and CPU time. Refuses one of more than a
    /// million workunits, or of workunits longer than a day on one core, unless --force. Warns
    /// (and adds it all the same) when a campaign with the same parameters exists and is not
    /// cancelled.
    Add {
        #[command(flatten)]
        db: Database,
        #[command(flatten)]
        campaign: CampaignArgs,
        /// With --analyse or --self-play: `builtin` (default) or `uci` (volunteers' UCI engines).
        #[arg(long)]
        engine: Option<String>,
        /// A name for the campaign.
        #[arg(long)]
        name: Option<String>,
        /// Scheduling priority: campaigns of higher priority are served first.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        priority: i64,
        /// Create it even when it is past the bound (a million workunits, a day a workunit).
        #[arg(long)]
        force: bool,
    },
    /// List campaigns with their progress.
    List {
        #[command(flatten)]
        db: Database,
    },
    /// One campaign: its parameters, status and progress.
    Show {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
    },
    /// Name a campaign (without NAME: clear its name).
    Name {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
        /// The name.
        name: Option<String>,
    },
    /// Set a campaign's scheduling priority (higher first; default 0).
    Priority {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
        /// The priority.
        #[arg(allow_negative_numbers = true)]
        priority: i64,
    },
    /// Stop handing out a campaign's workunits (leases already out may still be answered).
    Pause {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
    },
    /// Hand out a paused campaign's workunits again.
    Resume {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
    },
    /// Stop a campaign for good (it cannot be resumed).
    Cancel {
        #[command(flatten)]
        db: Database,
        /// Campaign id.
        id: u64,
    },
}

/// `perft`, `analysis/ENGINE` or `selfplay/ENGINE`.
fn kind(c: &Campaign) -> String {
    match &c.engine {
        Some(e) => format!("{}/{e}", c.kind),
        None => c.kind.to_string(),
    }
}

fn name(c: &Campaign) -> String {
    c.name.as_deref().unwrap_or("-").escape_debug().to_string()
}

/// One line of `campaign list`.
fn line(p: &CampaignProgress) -> String {
    let c = &p.campaign;
    format!(
        "{}\t{}\t{}\tpriority {}\t{} depth {}\t{} positions {}\tquorum {}\t{}/{} valid\t{} failed",
        c.id,
        name(c),
        p.state().name(),
        c.priority,
        kind(c),
        c.depth,
        c.family,
        c.positions,
        c.quorum,
        p.valid,
        p.total,
        p.failed
    )
}

/// Runs one campaign command against the store `open` opens (it refuses a missing file).
pub fn run(
    command: CampaignCommand,
    open: impl Fn(&PathBuf) -> Result<Box<dyn Store>>,
) -> Result<()> {
    let change = |db: &PathBuf, id: u64, change: CampaignChange| -> Result<()> {
        let c = open(db)?.update_campaign(id, &change)?;
        eprintln!(
            "campaign {}: {}, priority {}, name {}",
            c.id,
            c.status.name(),
            c.priority,
            name(&c)
        );
        Ok(())
    };
    match command {
        CampaignCommand::Add {
            db,
            campaign,
            engine,
            name: label,
            priority,
            force,
        } => {
            let (spec, estimate) = CampaignRequest {
                name: label,
                priority: Some(priority),
                force: Some(force),
                ..campaign.request(engine.map(Named::of_name))?
            }
            .plan()
            .map_err(|e| anyhow!(e.for_command_line()))?;
            let store = open(&db)?;
            let identical = store.find_campaign(&spec)?;
            let c = store.create_campaign(&spec, now_ms())?;
            if let Some(other) = identical {
                eprintln!("warning: {}", CampaignWarning::identical(other.id).message);
            }
            eprintln!(
                "campaign {}: {} depth {} over {} {}, quorum {}, priority {}",
                c.id,
                match (&c.engine, c.games, c.move_nodes) {
                    (Some(e), Some(g), Some(n)) =>
                        format!("self-play ({e}, {g} games a start at {n} nodes a move)"),
                    (Some(e), _, _) => format!("analysis ({e})"),
                    _ => "perft".into(),
                },
                c.depth,
                c.family,
                c.positions,
                c.quorum,
                c.priority
            );
            let workunits = store.campaign_progress(c.id)?.total;
            eprintln!("{}", estimate.summary(workunits, c.quorum));
            c960_cli::outln!("{}", c.id)?;
        }
        CampaignCommand::List { db } => {
            for p in open(&db)?.progress()? {
                c960_cli::outln!("{}", line(&p))?;
            }
        }
        CampaignCommand::Show { db, id } => {
            let p = open(&db)?.campaign_progress(id)?;
            let c = &p.campaign;
            c960_cli::outln!("campaign     {}", c.id)?;
            c960_cli::outln!("name         {}", name(c))?;
            c960_cli::outln!("state        {}", p.state().name())?;
            if let Some(stall) = c.stall.filter(|_| p.state() == CampaignState::Stalled) {
                c960_cli::outln!("stalled      {}", stall.waiting(c.id).describe())?;
            }
            c960_cli::outln!("operator     {}", c.status.name())?;
            c960_cli::outln!("priority     {}", c.priority)?;
            c960_cli::outln!("kind         {}", kind(c))?;
            c960_cli::outln!("depth        {}", c.depth)?;
            if let (Some(g), Some(n)) = (c.games, c.move_nodes) {
                c960_cli::outln!("self-play    {g} games a start, {n} nodes a move")?;
            }
            c960_cli::outln!("split ply    {}", c.split_ply)?;
            c960_cli::outln!("family       {}", c.family)?;
            c960_cli::outln!("positions    {}", c.positions)?;
            c960_cli::outln!(
                "quorum       {} (at most {} results)",
                c.quorum,
                c.max_results
            )?;
            c960_cli::outln!(
                "workunits    {} valid, {} failed of {}",
                p.valid,
                p.failed,
                p.total
            )?;
            c960_cli::outln!("in flight    {}", p.in_flight)?;
            c960_cli::outln!("queued       {}", p.queued_replicas)?;
            c960_cli::outln!("valid nodes  {}", p.nodes_valid)?;
        }
        CampaignCommand::Name { db, id, name } => {
            let name = name
                .map(|n| check_name(&n))
                .transpose()
                .map_err(|e| anyhow!(e))?;
            change(&db, id, CampaignChange::Name(name))?;
        }
        CampaignCommand::Priority { db, id, priority } => {
            change(&db, id, CampaignChange::Priority(priority))?;
        }
        CampaignCommand::Pause { db, id } => {
            change(&db, id, CampaignChange::Status(CampaignAction::Pause))?;
        }
        CampaignCommand::Resume { db, id } => {
            change(&db, id, CampaignChange::Status(CampaignAction::Resume))?;
        }
        CampaignCommand::Cancel { db, id } => {
            change(&db, id, CampaignChange::Status(CampaignAction::Cancel))?;
        }
    }
    Ok(())
}
