//! `c960-coordinator run`: the main job on one machine. It serves the coordinator on 127.0.0.1
//! with an embedded SQLite store and runs N workers in the same process. The workers are the
//! library of `c960-worker`, speaking the same HTTP protocol as volunteers, so there is one code
//! path for scheduling, validation and storage; each has its own identity, so quorum 2 still
//! means two independent computations.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use c960_worker::runner::{self, RunnerConfig};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::watch;

use c960_common::wire::AnalysisEngine;

use crate::export;
use crate::model::{CampaignKind, CampaignProgress, RowStatus};
use crate::net::api::{self, AppState, Config};
use crate::store::Store;
use crate::work::campaign::{CampaignRequest, NewCampaign};

/// Options of `run`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The campaign, as `campaign add` asks for it: the same plan, checks and size bound
    /// ([`CampaignRequest::plan`]).
    pub campaign: CampaignRequest,
    /// The UCI engine the local workers drive (required for UCI analysis).
    pub uci: Option<c960_compute::uci_engine::UciCommand>,
    /// Hash table of each local worker's perft engine, in MiB (kept across workunits).
    pub hash_mib: u32,
    /// In-process workers (default: one per core, at least the quorum).
    pub local_workers: Option<usize>,
    /// The SQLite file or `postgres://` URL; running again with the same database resumes.
    pub db: PathBuf,
    /// Where the CSV goes (stdout if `None`, followed by the total).
    pub out: Option<PathBuf>,
    /// Lease duration.
    pub lease: Duration,
    /// Show the progress bar (drawn only when stderr is a terminal).
    pub progress: bool,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every workunit reached its quorum; the total node count.
    Complete(u128),
    /// Some workunits failed (no quorum within the result cap).
    Failed {
        /// Failed workunits.
        failed: u64,
    },
    /// Ctrl-C; run again with the same database to resume.
    Interrupted,
}

/// Runs the campaign to the end and writes the table. Errors are setup problems (bad
/// arguments, unreadable database, no progress possible).
pub fn run(opts: RunOptions) -> Result<RunOutcome> {
    let (spec, _) = opts
        .campaign
        .plan()
        .map_err(|e| anyhow!(e.for_command_line()))?;
    if spec.work.engine() == Some(AnalysisEngine::Uci) && opts.uci.is_none() {
        bail!("a UCI engine's campaign needs the engine's command: --engine uci:COMMAND");
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let workers = opts
        .local_workers
        .unwrap_or(cores.max(spec.quorum as usize));
    if workers < spec.quorum as usize {
        bail!(
            "--local-workers {workers} cannot reach quorum {}: each replica needs a distinct worker",
            spec.quorum
        );
    }
    if let Some(out) = &opts.out {
        check_out_writable(out)?;
    }
    let store: Arc<dyn Store> = crate::store::open(&opts.db)?.into();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = rt.block_on(run_async(opts.clone(), spec, workers, store.clone()))?;
    // In-process engines stop at their next root move once cancelled; do not wait for them.
    rt.shutdown_timeout(Duration::from_millis(200));
    Ok(outcome)
}

async fn progress_of(store: &Arc<dyn Store>, id: u64) -> Result<CampaignProgress> {
    let store = store.clone();
    Ok(tokio::task::spawn_blocking(move || store.campaign_progress(id)).await??)
}

async fn run_async(
    opts: RunOptions,
    spec: NewCampaign,
    workers: usize,
    store: Arc<dyn Store>,
) -> Result<RunOutcome> {
    let now = crate::clock::now_ms();
    let campaign = match store.find_campaign(&spec)? {
        Some(c) => c,
        None => store.create_campaign(&spec, now)?,
    };
    // The leases of an earlier run belonged to in-process workers that are gone: hand them out
    // again now instead of waiting for their deadlines.
    let released = store.release_all_leases(now)?;
    let start = progress_of(&store, campaign.id).await?;
    eprintln!(
        "campaign {}: {} depth {} over {} start positions {}, quorum {}; {} of {} workunits already done{}",
        campaign.id,
        match (&campaign.engine, campaign.split_ply) {
            (Some(e), _) if campaign.kind == CampaignKind::SelfPlay => format!(
                "self-play ({e}, {} games a start at {} nodes a move)",
                campaign.games.unwrap_or(0),
                campaign.move_nodes.unwrap_or(0)
            ),
            (Some(e), _) => format!("analysis ({e})"),
            (None, 0) => "perft".into(),
            (None, k) => format!("perft split at ply {k}"),
        },
        campaign.depth,
        campaign.family,
        campaign.positions,
        campaign.quorum,
        start.valid + start.failed,
        start.total,
        if released > 0 {
            format!(", {released} stale leases released")
        } else {
            String::new()
        }
    );

    let interrupted = if start.valid + start.failed < start.total {
        serve_and_work(&opts, &store, campaign.id, workers, &start).await?
    } else {
        false
    };
    if interrupted {
        // What was done and how to resume, and nothing else: the workers have stopped and
        // given their leases back before the server went.
        let now = progress_of(&store, campaign.id).await?;
        let (done, before) = (now.valid + now.failed, start.valid + start.failed);
        eprintln!(
            "interrupted: {done} of {} workunits done ({} in this run)",
            now.total,
            done.saturating_sub(before)
        );
        eprintln!(
            "run again with --db {} to resume",
            crate::store::shown(&opts.db)
        );
        return Ok(RunOutcome::Interrupted);
    }

    if campaign.kind == CampaignKind::Analysis {
        return finish_analysis(&opts, &store, campaign.id).await;
    }
    if campaign.kind == CampaignKind::SelfPlay {
        return finish_self_play(&opts, &store, campaign.id).await;
    }
    if campaign.split_ply > 0 {
        return finish_split(&opts, &store, campaign.id).await;
    }
    let s2 = store.clone();
    let (c, rows) = tokio::task::spawn_blocking(move || s2.table(campaign.id)).await??;
    let csv = export::csv_for(&c, &rows);
    let total = export::total_nodes(&rows);
    let failed = rows
        .iter()
        .filter(|r| r.status == RowStatus::Failed)
        .count() as u64;
    write_table(opts.out.as_deref(), &csv, Some(total))?;
    let totals = rows
        .iter()
        .filter(|r| r.status == RowStatus::Valid)
        .filter_map(|r| Some((r.sp?, u128::from(r.nodes?))))
        .collect();
    let checked = report_check(campaign.depth, &totals);
    if failed > 0 {
        eprintln!("{failed} workunits failed: their replicas never agreed");
        return Ok(RunOutcome::Failed { failed });
    }
    if !checked {
        return Ok(RunOutcome::Failed { failed: 1 });
    }
    Ok(RunOutcome::Complete(total))
}

/// Refuses an `--out` that cannot be written before any work is done, rather than after a long
/// campaign (whose results the database keeps all the same). Leaves an existing file as it is.
fn check_out_writable(out: &std::path::Path) -> Result<()> {
    let existed = out.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(out)
        .with_context(|| format!("cannot write {}", out.display()))?;
    if !existed {
        let _ = std::fs::remove_file(out);
    }
    Ok(())
}

/// Writes the CSV table to `out` (or standard output), then the total, if any, on standard
/// output.
fn write_table(out: Option<&std::path::Path>, csv: &str, total: Option<u128>) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match out {
        Some(path) => {
            std::fs::write(path, csv).with_context(|| format!("cannot write {}", path.display()))?
        }
        None => stdout.write_all(csv.as_bytes())?,
    }
    if let Some(total) = total {
        writeln!(stdout, "{total}")?;
    }
    stdout.flush()?;
    Ok(())
}

/// Checks complete start positions against the reference table (depth ≤ 6) and, with all 960,
/// the sum against OEIS A157851; reports on standard error. False on any disagreement.
fn report_check(depth: u32, totals: &std::collections::BTreeMap<u16, u128>) -> bool {
    let check = crate::work::assembly::check(depth, totals);
    if check.compared > 0 {
        eprintln!(
            "reference table: {} of {} start positions agree",
            check.compared - check.mismatches.len(),
            check.compared
        );
    }
    for (sp, ours, want) in &check.mismatches {
        eprintln!("MISMATCH sp {sp}: {ours}, reference {want}");
    }
    if let Some((ours, want)) = &check.oeis {
        eprintln!(
            "OEIS A157851 depth {depth}: {ours} vs {want}: {}",
            if ours == want { "agrees" } else { "DIFFERS" }
        );
    }
    check.ok
}

/// Writes the split table (one row per start position, assembled from its workunits), the total
/// on stdout, and the reference / OEIS check on standard error.
async fn finish_split(
    opts: &RunOptions,
    store: &Arc<dyn Store>,
    campaign_id: u64,
) -> Result<RunOutcome> {
    let s2 = store.clone();
    let (campaign, rows) =
        tokio::task::spawn_blocking(move || export::split_table(&*s2, campaign_id)).await??;
    let csv = crate::work::assembly::split_csv(&rows);
    let totals = export::split_totals(&rows);
    let total: u128 = totals.values().sum();
    write_table(opts.out.as_deref(), &csv, Some(total))?;
    let checked = report_check(campaign.depth, &totals);
    let failed = rows
        .iter()
        .filter(|r| r.status == crate::work::assembly::SplitStatus::Failed)
        .count() as u64;
    if failed > 0 || !checked {
        eprintln!("{failed} start positions have failed workunits");
        return Ok(RunOutcome::Failed {
            failed: failed.max(1),
        });
    }
    Ok(RunOutcome::Complete(total))
}

/// Writes the self-play CSV ([`crate::export::self_play::csv`]) and prints the pooled score on
/// standard error.
async fn finish_self_play(
    opts: &RunOptions,
    store: &Arc<dyn Store>,
    campaign_id: u64,
) -> Result<RunOutcome> {
    let s2 = store.clone();
    let (campaign, rows) =
        tokio::task::spawn_blocking(move || s2.self_play_table(campaign_id)).await??;
    write_table(
        opts.out.as_deref(),
        &crate::export::self_play::csv(&campaign, &rows),
        None,
    )?;
    let p = crate::export::self_play::pooled(&rows);
    if let (Some(score), Some((lo, hi))) = (p.score, p.score_ci) {
        eprintln!(
            "self-play: {} games, White {} / draws {} / Black {}; White scores {:.3} [{lo:.3}, {hi:.3}] ({:+.0} Elo)",
            p.games,
            p.white_wins,
            p.draws,
            p.black_wins,
            score,
            p.elo.unwrap_or(f64::NAN)
        );
    }
    let failed = rows
        .iter()
        .filter(|r| r.status == RowStatus::Failed)
        .count() as u64;
    Ok(if failed > 0 {
        RunOutcome::Failed { failed }
    } else {
        RunOutcome::Complete(
            rows.iter()
                .filter_map(|r| r.result.as_ref())
                .map(|r| u128::from(r.nodes))
                .sum(),
        )
    })
}

/// Writes the analysis CSV (header `sp,fen,depth,score_cp,mate,best_move,engine,…`, or
/// `family,number,fen,…` for another family) and prints the
/// balance summary on standard error.
async fn finish_analysis(
    opts: &RunOptions,
    store: &Arc<dyn Store>,
    campaign_id: u64,
) -> Result<RunOutcome> {
    let s2 = store.clone();
    let (campaign, rows) =
        tokio::task::spawn_blocking(move || s2.analysis_table(campaign_id)).await??;
    let csv = export::analysis_csv_for(&campaign, &rows);
    write_table(opts.out.as_deref(), &csv, None)?;
    if let Ok((b, _)) = export::balance_report(&campaign, &rows) {
        let s = &b.summary;
        let classical = s.classical.as_ref().map_or(String::new(), |c| {
            format!(
                "; 518 ranks {} of {} ({})",
                c.rank,
                s.positions_scored,
                c.score_cp
                    .map_or_else(|| format!("mate {:?}", c.mate), |cp| format!("{cp:+} cp"))
            )
        });
        eprintln!(
            "balance: mean White edge {:+.1} cp, spread (sd) {:.1} cp, White better in {} of {}; most balanced sp {}, least balanced sp {}{classical}",
            s.mean_cp,
            s.std_dev_cp,
            s.white_better,
            s.positions_scored,
            s.most_balanced.first().map_or(0, |e| e.sp),
            s.least_balanced.first().map_or(0, |e| e.sp),
        );
    }
    let failed = rows
        .iter()
        .filter(|r| r.status == RowStatus::Failed)
        .count() as u64;
    if failed > 0 {
        eprintln!("{failed} workunits failed: their replicas never agreed");
        return Ok(RunOutcome::Failed { failed });
    }
    let nodes = rows
        .iter()
        .filter_map(|r| r.result.as_ref())
        .map(|a| u128::from(a.nodes))
        .sum();
    Ok(RunOutcome::Complete(nodes))
}

/// Serves on 127.0.0.1, runs the workers and shows progress until the campaign is finished.
/// Returns true if interrupted.
async fn serve_and_work(
    opts: &RunOptions,
    store: &Arc<dyn Store>,
    campaign_id: u64,
    workers: usize,
    start: &CampaignProgress,
) -> Result<bool> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    // The local workers enrol with a secret made up for this run: nobody else on this machine
    // can register through the port. They are the operator's own and trusted, so rate limits,
    // address-block separation and secret checks are off.
    let secret = crate::integrity::secrets::new_secret();
    let config = Config {
        lease: opts.lease,
        retry_after_secs: 1,
        enrolment: crate::net::api::auth::Enrolment::secret(&secret),
        limits: api::Limits {
            per_address: crate::net::api::limits::Rate::UNLIMITED,
            per_worker: crate::net::api::limits::Rate::UNLIMITED,
            registrations_per_block: crate::net::api::limits::Rate::UNLIMITED,
            registrations_total: crate::net::api::limits::Rate::UNLIMITED,
            ..api::Limits::default()
        },
        // The local workers are the operator's own: trusted, on one address, not checked.
        trust_enrolled: true,
        integrity: crate::integrity::trust::Integrity {
            address_separation: crate::integrity::trust::AddressSeparation::Off,
            block_lease_cap: 0,
            check_rate_untrusted_ppm: 0,
            check_rate_trusted_ppm: 0,
            ..crate::integrity::trust::Integrity::default()
        },
        ..Config::default()
    };
    let _checker =
        crate::integrity::checker::spawn(store.clone(), config.checks, config.uci.clone());
    let app = api::app(AppState::new(store.clone(), config))
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    // Two stops, in this order: the workers first (they give their leases back and submit
    // what they computed), then the server they talk to. Stopping both at once made every
    // give-back fail with "connection refused".
    let (stop_tx, stop_rx) = watch::channel(false);
    let (server_stop_tx, server_stop_rx) = watch::channel(false);
    let server = {
        let mut rx = server_stop_rx;
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.wait_for(|s| *s).await;
                })
                .await
        })
    };
    let mut tasks = Vec::new();
    for i in 0..workers {
        let mut cfg = RunnerConfig::new(&url);
        cfg.name = format!("local-{i}");
        cfg.backoff_base = Duration::from_millis(50);
        cfg.backoff_cap = Duration::from_secs(1);
        cfg.progress = false;
        cfg.uci = opts.uci.clone();
        cfg.hash_mib = opts.hash_mib;
        cfg.enrol_secret = Some(secret.clone());
        // Its coordinator has no rate limits: nothing to pace for.
        cfg.pace = c960_worker::backoff::PaceRate::UNLIMITED;
        tasks.push(tokio::spawn(runner::run(cfg, stop_rx.clone())));
    }

    let bar = ProgressBar::with_draw_target(
        Some(start.total),
        if opts.progress && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template(
            "[{elapsed_precise}] {bar:40} {pos}/{len} workunits, {msg}, ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_position(start.valid + start.failed);
    bar.reset_eta();
    let began = Instant::now();
    let mut idle_polls = 0;
    let mut interrupted = false;
    let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
    let result: Result<()> = loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = &mut ctrl_c => { interrupted = true; break Ok(()); }
        }
        let p = progress_of(store, campaign_id).await?;
        bar.set_position(p.valid + p.failed);
        let rate = (p.nodes_computed.saturating_sub(start.nodes_computed)) as f64
            / began.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!("{:.1} Mnodes/s", rate / 1e6));
        if p.valid + p.failed >= p.total {
            break Ok(());
        }
        if tasks.iter().all(|t| t.is_finished()) {
            break Err(anyhow!("all local workers stopped"));
        }
        // Open workunits but no lease for three seconds: every worker is excluded from what is
        // left (each already returned a replica), so more local workers are needed.
        idle_polls = if crate::work::stall::waits_for_other_workers(&p) {
            idle_polls + 1
        } else {
            0
        };
        if idle_polls >= 12 {
            break Err(anyhow!(
                "no progress possible: the remaining workunits need a replica from a worker that has not \
                 computed them yet; run again with more --local-workers"
            ));
        }
    };
    bar.finish_and_clear();
    let _ = stop_tx.send(true);
    let workers_stopped = async {
        for t in tasks {
            match t.await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!("local worker: {e:#}"),
                Err(e) => tracing::warn!("local worker: {e}"),
            }
        }
    };
    tokio::select! {
        _ = workers_stopped => {}
        // A second Ctrl-C does not wait for the give-backs: the leases left open are released
        // when the next run starts.
        _ = tokio::signal::ctrl_c(), if interrupted => {
            return Ok(true);
        }
    }
    let _ = server_stop_tx.send(true);
    server.await??;
    result?;
    Ok(interrupted)
}
