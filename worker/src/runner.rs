//! The work loop: register once, then fetch → compute → submit, with backoff when the
//! coordinator is down, busy or idle, and a clean exit on shutdown that gives the lease back.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use c960_common::digest::result_digest;
use c960_common::wire::{
    Assignment, BatchedOutcome, BatchedResult, Capabilities, FetchBatchResponse, MAX_BATCH,
    WorkerAuth,
};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;

use c960_common::{PerftEngine, PerftOptions};

use crate::backoff::{Backoff, retry_after};
use crate::client::Client;
use crate::compute::{ComputeError, UciSlot, compute_any};
use crate::identity::{self, Identity};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// Coordinator base URL.
    pub server: String,
    /// Name shown on the status page.
    pub name: String,
    /// Perft threads per workunit (also reported at registration).
    pub threads: u32,
    /// Perft hash table in MiB, kept across workunits (0: none).
    pub hash_mib: u32,
    /// Stop after one workunit.
    pub once: bool,
    /// Where the identity is kept; `None` registers afresh and keeps it in memory only.
    pub state_file: Option<PathBuf>,
    /// First retry delay.
    pub backoff_base: Duration,
    /// Longest retry delay.
    pub backoff_cap: Duration,
    /// Show a progress bar per workunit (only drawn when stderr is a terminal).
    pub progress: bool,
    /// A UCI engine for UCI analysis workunits; without one the worker does not ask for them.
    pub uci: Option<PathBuf>,
    /// How long the UCI engine may search one workunit before it is killed.
    pub uci_timeout: Duration,
    /// The enrolment secret to present when registering.
    pub enrol_secret: Option<String>,
    /// PEM file of an extra CA to trust (a coordinator with a private certificate).
    pub ca_file: Option<PathBuf>,
    /// The most workunits fetched (and results submitted) per request. The worker starts with
    /// one and sizes each batch to take about [`BATCH_TARGET`], so long workunits still go one
    /// at a time while tiny ones do not cost a round trip each.
    pub max_batch: u32,
}

/// How long a batch of workunits should take to compute.
pub const BATCH_TARGET: Duration = Duration::from_secs(2);

/// The size of the next batch: as many workunits as fit in [`BATCH_TARGET`] at the last batch's
/// pace, between 1 and `max`.
pub fn next_batch_size(units: usize, elapsed: Duration, max: u32) -> u32 {
    let per_unit = elapsed.as_secs_f64() / units.max(1) as f64;
    let fits = if per_unit <= 0.0 {
        f64::from(max)
    } else {
        BATCH_TARGET.as_secs_f64() / per_unit
    };
    // At most double per step, so one fast batch does not overshoot for the next.
    let grown = (units.max(1) as f64 * 2.0).min(fits);
    (grown as u32).clamp(1, max.clamp(1, MAX_BATCH))
}

impl RunnerConfig {
    /// Defaults for a volunteer worker talking to `server`.
    pub fn new(server: &str) -> RunnerConfig {
        RunnerConfig {
            server: server.trim_end_matches('/').to_string(),
            name: "worker".into(),
            threads: 1,
            hash_mib: 0,
            once: false,
            state_file: None,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(300),
            progress: true,
            enrol_secret: None,
            ca_file: None,
            uci: None,
            uci_timeout: Duration::from_secs(600),
            max_batch: 64,
        }
    }

    /// What this worker asks for: perft and built-in analysis always, UCI analysis with an engine.
    pub fn capabilities(&self) -> Capabilities {
        Capabilities {
            uci_analysis: self.uci.is_some(),
            ..Capabilities::builtin()
        }
    }
}

/// What a worker did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Results accepted by the coordinator.
    pub submitted: u64,
    /// Results the coordinator refused (expired lease, …).
    pub refused: u64,
    /// Workunits the engine failed on (reported as failed replicas).
    pub failed: u64,
    /// Nodes computed.
    pub nodes: u128,
    /// Stopped by the shutdown signal.
    pub interrupted: bool,
}

/// Resolves when shutdown is signalled; never if the sender is gone without signalling.
async fn shutdown_signalled(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sleeps for `d`; returns true if shutdown came first.
async fn sleep_or_shutdown(d: Duration, rx: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = shutdown_signalled(rx) => true,
    }
}

struct Worker {
    cfg: RunnerConfig,
    client: Client,
    backoff: Backoff,
    shutdown: watch::Receiver<bool>,
    summary: Summary,
    /// The UCI engine, kept running across workunits; moved into the compute task and back.
    uci: Option<UciSlot>,
    /// The perft engine, kept across workunits so its hash table carries over; its Zobrist seed
    /// is drawn per worker, so replicas from two workers cross-check hash collisions too.
    perft: Arc<PerftEngine>,
    /// Workunits to ask for in the next fetch.
    batch: u32,
}

/// What became of one assignment.
enum Step {
    /// Computed; to be submitted with its batch.
    Computed(BatchedResult),
    /// Not computed, and already reported (engine failure) or given back.
    Skipped,
    /// Shutdown interrupted it; its lease was given back.
    Interrupted,
}

/// Runs a worker until shutdown is signalled (or, with `once`, after one workunit).
/// Returns an error only for refusals that retrying cannot fix (enrolment refused, protocol
/// mismatch). A quarantined or banned worker keeps asking with backoff, so that an `unban` lets
/// it resume without a restart (with `once` it gives up instead).
pub async fn run(cfg: RunnerConfig, shutdown: watch::Receiver<bool>) -> Result<Summary> {
    let ca = match &cfg.ca_file {
        Some(p) => {
            Some(std::fs::read(p).with_context(|| format!("cannot read CA file {}", p.display()))?)
        }
        None => None,
    };
    let client =
        Client::with_ca(&cfg.server, ca.as_deref())?.with_enrol_secret(cfg.enrol_secret.clone());
    let backoff = Backoff::new(cfg.backoff_base, cfg.backoff_cap);
    let uci = cfg
        .uci
        .clone()
        .map(|path| UciSlot::new(path, cfg.uci_timeout));
    let perft = Arc::new(PerftEngine::new(PerftOptions {
        threads: cfg.threads.max(1) as usize,
        hash_mib: cfg.hash_mib as usize,
        seed: rand::random(),
    }));
    let mut w = Worker {
        perft,
        uci,
        cfg,
        client,
        backoff,
        shutdown,
        summary: Summary::default(),
        batch: 1,
    };
    w.main_loop().await?;
    Ok(w.summary)
}

impl Worker {
    fn stopping(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Registers (or loads the stored identity), retrying while the coordinator is unreachable.
    async fn identity(&mut self, force_new: bool) -> Result<Option<WorkerAuth>> {
        if !force_new
            && let Some(path) = &self.cfg.state_file
            && let Some(id) = identity::load(path, &self.cfg.server)?
        {
            return Ok(Some(id.auth()));
        }
        loop {
            match self
                .client
                .register(&self.cfg.name, self.cfg.threads, self.cfg.hash_mib)
                .await
            {
                Ok(auth) => {
                    self.backoff.reset();
                    if let Some(path) = &self.cfg.state_file {
                        let id = Identity {
                            server: self.cfg.server.clone(),
                            worker_id: auth.worker_id,
                            token: auth.token.clone(),
                        };
                        identity::save(path, &id)?;
                    }
                    tracing::info!(worker_id = auth.worker_id, "registered");
                    return Ok(Some(auth));
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e);
                    tracing::warn!("{e}; retrying in {d:.1?}");
                    if sleep_or_shutdown(d, &mut self.shutdown).await {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(anyhow!(e)).context("registration refused"),
            }
        }
    }

    async fn main_loop(&mut self) -> Result<()> {
        let Some(mut auth) = self.identity(false).await? else {
            self.summary.interrupted = true;
            return Ok(());
        };
        let mut reregistered = false;
        loop {
            if self.stopping() {
                self.summary.interrupted = true;
                return Ok(());
            }
            let capabilities = self.cfg.capabilities();
            let fetched = tokio::select! {
                r = self.client.fetch_batch(&auth, &capabilities, if self.cfg.once { 1 } else { self.batch }) => r,
                _ = shutdown_signalled(&mut self.shutdown) => { self.summary.interrupted = true; return Ok(()) }
            };
            match fetched {
                Ok(FetchBatchResponse::Assigned(batch)) => {
                    self.backoff.reset();
                    reregistered = false;
                    if !self.work_batch(&auth, batch).await? {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                    if self.cfg.once {
                        return Ok(());
                    }
                }
                Ok(FetchBatchResponse::NoWork { retry_after_secs }) => {
                    self.backoff.reset();
                    let d = retry_after(retry_after_secs, self.cfg.backoff_cap);
                    tracing::debug!("no work; asking again in {d:.1?}");
                    if sleep_or_shutdown(d, &mut self.shutdown).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e);
                    tracing::warn!("{e}; retrying in {d:.1?}");
                    if sleep_or_shutdown(d, &mut self.shutdown).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                // The coordinator does not know this identity (e.g. a new database): enrol again,
                // once; a second refusal in a row is a real error.
                Err(e)
                    if matches!(e.code(), Some("unknown_worker" | "bad_token"))
                        && !reregistered =>
                {
                    tracing::warn!("{e}; registering again");
                    reregistered = true;
                    match self.identity(true).await? {
                        Some(a) => auth = a,
                        None => {
                            self.summary.interrupted = true;
                            return Ok(());
                        }
                    }
                }
                // Quarantined or banned: the operator may lift it (`worker unban`), so keep
                // asking, politely (the backoff grows to its cap), and resume by ourselves.
                Err(e)
                    if matches!(e.code(), Some("worker_quarantined" | "worker_banned"))
                        && !self.cfg.once =>
                {
                    let d = self.backoff.next_delay();
                    tracing::warn!("{e}; asking again in {d:.1?}");
                    if sleep_or_shutdown(d, &mut self.shutdown).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                Err(e) => return Err(anyhow!(e)),
            }
        }
    }

    /// Computes a batch of assignments in order and submits their results together. Returns
    /// false if shutdown interrupted it: the lease being computed and those not started are
    /// given back, and results already computed are still submitted.
    async fn work_batch(&mut self, auth: &WorkerAuth, batch: Vec<Assignment>) -> Result<bool> {
        let started = Instant::now();
        let units = batch.len();
        let mut results = Vec::with_capacity(units);
        let mut pending = batch.into_iter();
        let mut interrupted = false;
        for a in pending.by_ref() {
            match self.compute(auth, a).await? {
                Step::Computed(r) => results.push(r),
                Step::Skipped => {}
                Step::Interrupted => {
                    interrupted = true;
                    break;
                }
            }
        }
        if interrupted {
            for a in pending {
                self.give_back(auth, a.lease_id).await;
            }
        } else {
            self.batch = next_batch_size(units, started.elapsed(), self.cfg.max_batch);
        }
        if !results.is_empty() && !self.submit(auth, results).await {
            interrupted = true;
        }
        Ok(!interrupted)
    }

    /// Gives a lease back, best effort: if the coordinator is unreachable it simply expires.
    async fn give_back(&mut self, auth: &WorkerAuth, lease_id: u64) {
        let give_back = self.client.abandon(auth, lease_id);
        match tokio::time::timeout(Duration::from_secs(5), give_back).await {
            Ok(Ok(_)) => tracing::info!(lease = lease_id, "lease given back"),
            Ok(Err(e)) => tracing::warn!(lease = lease_id, "could not give the lease back: {e}"),
            Err(_) => tracing::warn!(lease = lease_id, "could not give the lease back: timeout"),
        }
    }

    /// Computes one assignment.
    async fn compute(&mut self, auth: &WorkerAuth, a: Assignment) -> Result<Step> {
        let started = Instant::now();
        let bar = self.progress_bar(&a);
        let cancel = Arc::new(AtomicBool::new(false));
        let task = {
            let cancel = cancel.clone();
            let kind = a.kind.clone();
            let bar = bar.clone();
            let mut uci = self.uci.take();
            let perft = self.perft.clone();
            tokio::task::spawn_blocking(move || {
                let r = compute_any(
                    &kind,
                    &cancel,
                    &perft,
                    uci.as_mut(),
                    |done, total, nodes| {
                        if let Some(bar) = &bar {
                            bar.set_length(total as u64);
                            bar.set_position(done as u64);
                            let secs = started.elapsed().as_secs_f64().max(1e-3);
                            bar.set_message(format!(
                                "{nodes} nodes, {:.1} Mnodes/s",
                                nodes as f64 / secs / 1e6
                            ));
                        }
                    },
                );
                (r, uci)
            })
        };
        let outcome = tokio::select! {
            r = task => r,
            _ = shutdown_signalled(&mut self.shutdown) => {
                cancel.store(true, Ordering::Relaxed);
                if let Some(bar) = &bar { bar.abandon_with_message("interrupted"); }
                self.give_back(auth, a.lease_id).await;
                return Ok(Step::Interrupted);
            }
        };
        let outcome = outcome.map(|(r, uci)| {
            self.uci = uci;
            r
        });
        let result = match outcome {
            Ok(Ok(r)) => r,
            Ok(Err(ComputeError::Cancelled)) => return Ok(Step::Interrupted),
            Ok(Err(ComputeError::EngineFailed(reason))) => {
                // Never a result: the replica is closed as failed and goes to another worker.
                tracing::error!(lease = a.lease_id, "engine failed: {reason}");
                if let Err(e) = self.client.fail(auth, a.lease_id, &reason).await {
                    tracing::warn!(lease = a.lease_id, "could not report the failure: {e}");
                }
                self.summary.failed += 1;
                return Ok(Step::Skipped);
            }
            Ok(Err(e)) => {
                // A position this engine refuses: give the lease back so someone else tries.
                tracing::error!(lease = a.lease_id, "{e}");
                let _ = self.client.abandon(auth, a.lease_id).await;
                self.summary.refused += 1;
                return Ok(Step::Skipped);
            }
            Err(e) => return Err(anyhow!("engine task failed: {e}")),
        };
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        Ok(Step::Computed(BatchedResult {
            lease_id: a.lease_id,
            workunit_id: a.workunit_id,
            digest: result_digest(a.workunit_id, &a.kind, &result),
            result,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }))
    }

    /// Submits computed results in one request, retrying while the coordinator is unreachable
    /// or busy (a computed result is worth it). Returns false if shutdown came first.
    async fn submit(&mut self, auth: &WorkerAuth, results: Vec<BatchedResult>) -> bool {
        loop {
            match self.client.submit_batch(auth, results.clone()).await {
                Ok(answer) => {
                    self.backoff.reset();
                    for (r, outcome) in results.iter().zip(answer.outcomes) {
                        let nodes = r.result.nodes();
                        match outcome {
                            BatchedOutcome::Accepted => {
                                self.summary.submitted += 1;
                                self.summary.nodes += u128::from(nodes);
                                tracing::info!(
                                    workunit = r.workunit_id,
                                    nodes,
                                    elapsed_ms = r.elapsed_ms,
                                    "submitted"
                                );
                            }
                            BatchedOutcome::Refused(e) => {
                                tracing::warn!(
                                    workunit = r.workunit_id,
                                    "result not accepted: {} ({})",
                                    e.message,
                                    e.code
                                );
                                self.summary.refused += 1;
                            }
                        }
                    }
                    return true;
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e);
                    tracing::warn!("{e}; retrying the submission in {d:.1?}");
                    if sleep_or_shutdown(d, &mut self.shutdown).await {
                        return false;
                    }
                }
                Err(e) => {
                    tracing::warn!("results not accepted: {e}");
                    self.summary.refused += results.len() as u64;
                    return true;
                }
            }
        }
    }

    /// The wait before retrying after a transient error: the backoff, but never less than the
    /// coordinator's `Retry-After` (plus jitter, so rate-limited workers do not return in step).
    fn retry_delay(&mut self, e: &crate::client::ClientError) -> Duration {
        let backoff = self.backoff.next_delay();
        match e.retry_after() {
            Some(ra) => backoff.max(retry_after(
                ra.as_secs().min(u64::from(u32::MAX)) as u32,
                self.cfg.backoff_cap.max(ra),
            )),
            None => backoff,
        }
    }

    fn progress_bar(&self, a: &Assignment) -> Option<ProgressBar> {
        if !self.cfg.progress || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::new(0);
        let style = ProgressStyle::with_template(
            "wu {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} root moves, {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(a.workunit_id.to_string());
        Some(bar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_grow_for_tiny_workunits_and_shrink_for_long_ones() {
        let ms = Duration::from_millis;
        // 1 ms per workunit: doubles each time, up to the cap.
        assert_eq!(next_batch_size(1, ms(1), 64), 2);
        assert_eq!(next_batch_size(32, ms(32), 64), 64);
        assert_eq!(next_batch_size(64, ms(64), 64), 64);
        assert_eq!(next_batch_size(64, ms(64), 1000), 128);
        // 100 ms per workunit: 20 fit in the target.
        assert_eq!(next_batch_size(16, ms(1600), 64), 20);
        // A minute per workunit: one at a time.
        assert_eq!(next_batch_size(1, Duration::from_secs(60), 64), 1);
        assert_eq!(next_batch_size(8, Duration::from_secs(16), 64), 1);
        // Never zero, whatever comes in.
        assert_eq!(next_batch_size(0, Duration::ZERO, 0), 1);
    }
}
