//! The work loop: register once, then fetch → compute → submit, with backoff when the
//! coordinator is down, busy or idle, and a two-stage stop: finish and submit what is in hand,
//! or (the second time) give it back and exit at once.

use c960_common::error_code::ErrorCode;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use c960_common::wait::Waiting;
use c960_common::wire::{
    Assignment, BatchedOutcome, BatchedResult, Capabilities, FetchBatchResponse, HEARTBEAT_SECS,
    WorkResult, WorkUnitKind, WorkerAuth,
};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use c960_common::{PerftEngine, PerftOptions};

use crate::assignment::{UciPool, batched_result, compute_one};
use crate::backoff::{Backoff, Pace, PaceRate, retry_after};
use crate::client::Client;
use crate::identity::{self, Identity};
use crate::report::{self, thousands};
use c960_compute::compute::ComputeError;

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
    pub uci: Option<c960_compute::uci_engine::UciCommand>,
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
    /// Give up (an error) after this many failed attempts in a row to reach the coordinator;
    /// `None`: keep trying. `work --once` sets it, so a script never waits forever.
    pub give_up_after: Option<u32>,
    /// The most fetches and submissions a second ([`DEFAULT_PACE`]).
    pub pace: PaceRate,
}

/// How often a worker asks at most, by default: 4 requests a second on average (two
/// fetch–submit rounds), 10 at once after a quiet spell.
///
/// Why: a round trip per batch sized to [`BATCH_TARGET`] is one request a second, but when
/// the coordinator caps the batch (an untrusted worker holds 4 leases) and workunits take
/// milliseconds (a depth-5 perft), a worker would otherwise ask 20 times a second or more and
/// run into the coordinator's limit of 10 a second per worker (`--rate-per-worker`, bursts of
/// 40) with a 429 every second. At 4 a second it stays under that limit with room to spare:
/// 2.5 times the rate and 30 requests of burst for what is not paced (giving leases back,
/// failure reports) and for requests that arrive bunched. It costs nothing on real
/// workunits, and on tiny capped ones it is about what the limit let through before, without
/// the refusals (8 results a second at 4 leases). The coordinator's tests check the two
/// defaults against each other.
pub const DEFAULT_PACE: PaceRate = PaceRate {
    per_sec: 4.0,
    burst: 10.0,
};

/// The longest wait between retries by default: a coordinator back from a restart gets its
/// workers back within a minute.
pub const DEFAULT_BACKOFF_CAP: Duration = Duration::from_secs(60);

pub use crate::backoff::{BATCH_TARGET, next_batch_size};

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
            backoff_cap: DEFAULT_BACKOFF_CAP,
            progress: true,
            enrol_secret: None,
            ca_file: None,
            uci: None,
            uci_timeout: Duration::from_secs(600),
            max_batch: c960_common::wire::MAX_BATCH,
            give_up_after: None,
            pace: DEFAULT_PACE,
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

pub use crate::summary::{Stop, Summary, TOTALS_EVERY};
use crate::summary::{sleep_or_stop, stop_reached};

struct Worker {
    cfg: RunnerConfig,
    client: Client,
    backoff: Backoff,
    shutdown: watch::Receiver<Stop>,
    summary: Summary,
    /// The UCI engines, kept running across workunits.
    uci: UciPool,
    /// The perft engine, kept across workunits so its hash table carries over; its Zobrist seed
    /// is drawn per worker, so replicas from two workers cross-check hash collisions too.
    perft: Arc<PerftEngine>,
    /// Workunits to ask for in the next fetch.
    batch: u32,
    /// Keeps fetches and submissions under [`RunnerConfig::pace`].
    pace: Pace,
    /// Held while the worker runs, so no other process uses the same identity.
    _state_lock: Option<identity::StateLock>,
    /// The stored identity (with the lifetime totals), when there is a state file.
    stored: Option<Identity>,
    started: Instant,
    /// When the totals were last logged.
    totals_logged: Instant,
    /// Since when the coordinator has had no work for this worker.
    idle_since: Option<Instant>,
    /// When "no work" was last logged.
    idle_logged: Option<Instant>,
    /// Why, as last told.
    idle_reason: Option<Waiting>,
    /// The identity in use, once registered or loaded.
    auth: Option<WorkerAuth>,
}

/// Runs a worker until shutdown is signalled (or, with `once`, after one workunit); `true` on
/// `shutdown` is [`Stop::Now`]: the leases in hand are given back.
/// Returns an error only for refusals that retrying cannot fix (see [`run_until`]).
pub async fn run(cfg: RunnerConfig, mut shutdown: watch::Receiver<bool>) -> Result<Summary> {
    let (tx, rx) = watch::channel(Stop::Run);
    tokio::spawn(async move {
        while !*shutdown.borrow_and_update() {
            if shutdown.changed().await.is_err() {
                return;
            }
        }
        let _ = tx.send(Stop::Now);
    });
    run_until(cfg, rx).await
}

/// Runs a worker until the stop says (see [`Stop`]), or, with `once`, after one workunit.
/// Returns an error only for refusals that retrying cannot fix (enrolment refused, protocol
/// mismatch). A quarantined or banned worker keeps asking with backoff, so that an `unban` lets
/// it resume without a restart (with `once` it gives up instead).
pub async fn run_until(mut cfg: RunnerConfig, shutdown: watch::Receiver<Stop>) -> Result<Summary> {
    // Claim the state file first: the lock makes this process the only user of the identity,
    // and the check that the file can be written comes before any registration.
    let state_lock = match &cfg.state_file {
        Some(path) => {
            let lock = identity::claim(path, &cfg.server)?;
            if lock.path != *path && lock.knows_server {
                tracing::info!(
                    "{} holds this worker's identity for {}",
                    lock.path.display(),
                    cfg.server
                );
            } else if lock.path != *path {
                tracing::info!(
                    "{} is in use by another running worker; this one uses {}",
                    path.display(),
                    lock.path.display()
                );
            }
            cfg.state_file = Some(lock.path.clone());
            Some(lock)
        }
        None => None,
    };
    let ca = match &cfg.ca_file {
        Some(p) => {
            Some(std::fs::read(p).with_context(|| format!("cannot read CA file {}", p.display()))?)
        }
        None => None,
    };
    // The perft table's Zobrist seed, drawn per worker, is named with every result.
    let seed: u64 = rand::random();
    let client = Client::with_ca(&cfg.server, ca.as_deref())?
        .with_enrol_secret(cfg.enrol_secret.clone())
        .with_engine(crate::client::engine_with_seed(seed));
    let backoff = Backoff::new(cfg.backoff_base, cfg.backoff_cap);
    let uci = UciPool::new(cfg.uci.clone(), cfg.uci_timeout);
    let perft = Arc::new(PerftEngine::new(PerftOptions {
        threads: cfg.threads.max(1) as usize,
        hash_mib: cfg.hash_mib as usize,
        seed,
    }));
    let pace = Pace::new(cfg.pace, Instant::now());
    let mut w = Worker {
        pace,
        perft,
        uci,
        cfg,
        client,
        backoff,
        shutdown,
        summary: Summary::default(),
        batch: 1,
        _state_lock: state_lock,
        stored: None,
        started: Instant::now(),
        totals_logged: Instant::now(),
        idle_since: None,
        idle_logged: None,
        idle_reason: None,
        auth: None,
    };
    let out = w.main_loop().await;
    w.refresh_standing().await;
    w.summary.elapsed = w.started.elapsed();
    out?;
    Ok(w.summary)
}

impl Worker {
    /// Asks the coordinator how this identity's results stand (best effort, briefly): returned,
    /// validated, waiting for more replicas. Accepted is not validated: a value needs a quorum.
    async fn refresh_standing(&mut self) {
        let Some(auth) = self.auth.clone() else {
            return;
        };
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_secs(3), self.client.standing(&auth)).await
        {
            self.summary.standing = Some(s);
        }
    }

    fn stopping(&self) -> bool {
        *self.shutdown.borrow() >= Stop::Finish
    }

    /// Registers (or loads the stored identity), retrying while the coordinator is unreachable.
    async fn identity(&mut self, force_new: bool) -> Result<Option<WorkerAuth>> {
        if !force_new
            && let Some(path) = &self.cfg.state_file
            && let Some(id) = identity::load(path, &self.cfg.server)?
        {
            tracing::info!(
                "worker {} of {} (identity in {}; lifetime {}, {} nodes)",
                id.worker_id,
                self.cfg.server,
                path.display(),
                report::count(id.results, "result"),
                thousands(id.nodes)
            );
            self.summary.lifetime_results = id.results;
            self.summary.lifetime_nodes = id.nodes;
            let auth = id.auth();
            self.stored = Some(id);
            return Ok(Some(auth));
        }
        loop {
            match self
                .client
                .register(&self.cfg.name, self.cfg.threads, self.cfg.hash_mib)
                .await
            {
                Ok(auth) => {
                    self.backoff.reset();
                    let mut others = 0;
                    if let Some(path) = &self.cfg.state_file {
                        let id = Identity {
                            server: identity::server_key(&self.cfg.server),
                            worker_id: auth.worker_id,
                            token: auth.token.clone(),
                            results: 0,
                            nodes: 0,
                        };
                        identity::save(path, &id)?;
                        others = identity::StateFile::read(path)?
                            .identities
                            .len()
                            .saturating_sub(1);
                        self.stored = Some(id);
                    }
                    let kept = match &self.cfg.state_file {
                        Some(path) if others > 0 => format!(
                            "identity kept in {} beside those for {}",
                            path.display(),
                            report::count(others as u64, "other coordinator")
                        ),
                        Some(path) => format!("identity kept in {}", path.display()),
                        None => "identity kept in memory only".to_string(),
                    };
                    tracing::info!(
                        "registered with {} as worker {} ({kept})",
                        self.cfg.server,
                        auth.worker_id
                    );
                    return Ok(Some(auth));
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e)?;
                    log_retry(&e, "retrying", d);
                    if sleep_or_stop(d, &mut self.shutdown, Stop::Finish).await {
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
        self.auth = Some(auth.clone());
        let mut reregistered = false;
        loop {
            if self.totals_logged.elapsed() >= TOTALS_EVERY {
                self.totals_logged = Instant::now();
                self.refresh_standing().await;
                self.summary.elapsed = self.started.elapsed();
                tracing::info!("{}", self.summary.totals());
            }
            if self.stopping() {
                self.summary.interrupted = true;
                return Ok(());
            }
            let pause = self.pace.delay(Instant::now());
            if !pause.is_zero() && sleep_or_stop(pause, &mut self.shutdown, Stop::Finish).await {
                self.summary.interrupted = true;
                return Ok(());
            }
            let capabilities = self.cfg.capabilities();
            let fetched = {
                let fetch = self.client.fetch_batch(
                    &auth,
                    &capabilities,
                    if self.cfg.once {
                        1
                    } else {
                        self.batch.min(self.client.max_batch())
                    },
                );
                tokio::pin!(fetch);
                tokio::select! {
                    // A fetch in flight at the first stop completes: what it brings is in hand.
                    r = &mut fetch => r,
                    _ = stop_reached(&mut self.shutdown, Stop::Now) => {
                        // The coordinator may have leased what this fetch asked for already: wait
                        // for its answer (briefly) and give that back, so that no lease is left to
                        // expire (dropping the request would orphan it).
                        if let Ok(Ok(FetchBatchResponse::Assigned(batch))) =
                            tokio::time::timeout(Duration::from_secs(5), &mut fetch).await
                        {
                            let leases: Vec<u64> = batch.iter().map(|a| a.lease_id).collect();
                            self.summary.given_back += leases.len() as u64;
                            self.give_back_all(&auth, &leases).await;
                        }
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
            };
            match fetched {
                Ok(FetchBatchResponse::Assigned(batch)) => {
                    self.backoff.reset();
                    reregistered = false;
                    if let Some(since) = self.idle_since.take() {
                        tracing::info!(
                            "work again after {} without",
                            report::duration(since.elapsed())
                        );
                    }
                    self.idle_logged = None;
                    self.idle_reason = None;
                    if !self.work_batch(&auth, batch).await? {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                    if self.cfg.once || self.stopping() {
                        self.summary.interrupted |= self.stopping();
                        return Ok(());
                    }
                }
                Ok(FetchBatchResponse::NoWork {
                    retry_after_secs,
                    waiting,
                }) => {
                    self.backoff.reset();
                    let d = retry_after(retry_after_secs, self.cfg.backoff_cap);
                    self.log_idle(d, waiting);
                    if sleep_or_stop(d, &mut self.shutdown, Stop::Finish).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e)?;
                    log_retry(&e, "retrying", d);
                    if sleep_or_stop(d, &mut self.shutdown, Stop::Finish).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                // The coordinator does not know this identity (e.g. a new database): enrol again,
                // once; a second refusal in a row is a real error.
                Err(e)
                    if e.code().is_some_and(ErrorCode::asks_to_register_again) && !reregistered =>
                {
                    tracing::warn!("{e}; registering again");
                    reregistered = true;
                    match self.identity(true).await? {
                        Some(a) => {
                            self.auth = Some(a.clone());
                            auth = a
                        }
                        None => {
                            self.summary.interrupted = true;
                            return Ok(());
                        }
                    }
                }
                // Quarantined or banned: the operator may lift it (`worker unban`), so keep
                // asking, politely (the backoff grows to its cap), and resume by ourselves.
                Err(e)
                    if e.code().is_some_and(ErrorCode::excludes_the_worker) && !self.cfg.once =>
                {
                    let d = self.backoff.next_delay();
                    tracing::warn!("{e}; asking again in {d:.1?}");
                    if sleep_or_stop(d, &mut self.shutdown, Stop::Finish).await {
                        self.summary.interrupted = true;
                        return Ok(());
                    }
                }
                Err(e) => return Err(anyhow!(e)),
            }
        }
    }

    /// Computes a batch of assignments and submits their results together. A perft workunit
    /// takes every thread (the engine splits it over them, one shared table); analysis
    /// workunits take one thread each, so up to `threads` of them run at once. Returns false if
    /// shutdown interrupted it: leases not computed are given back, and results already
    /// computed are still submitted.
    async fn work_batch(&mut self, auth: &WorkerAuth, batch: Vec<Assignment>) -> Result<bool> {
        let started = Instant::now();
        let units = batch.len();
        let threads = self.cfg.threads.max(1);
        let permits = Arc::new(Semaphore::new(threads as usize));
        let cancel = Arc::new(AtomicBool::new(false));
        let show_bar = self.cfg.progress && report::is_terminal();
        let mut open = BTreeMap::new();
        let mut tasks = JoinSet::new();
        for (index, a) in batch.into_iter().enumerate() {
            open.insert(index, a.lease_id);
            let need = match a.kind {
                WorkUnitKind::Analysis { .. } | WorkUnitKind::SelfPlay { .. } => 1,
                _ => threads,
            };
            let permits = permits.clone();
            let cancel = cancel.clone();
            let perft = self.perft.clone();
            let uci = self.uci.clone();
            tasks.spawn(async move {
                // The semaphore is never closed, so acquiring cannot fail.
                let _permit = permits.acquire_many_owned(need).await.ok();
                let started = Instant::now();
                let outcome = tokio::task::spawn_blocking(move || {
                    let outcome = compute_one(&a, &cancel, &perft, &uci, show_bar, started);
                    (a, outcome)
                })
                .await;
                outcome.map(|(assignment, outcome)| Done {
                    index,
                    assignment,
                    outcome,
                    elapsed: started.elapsed(),
                })
            });
        }
        let mut done = Vec::with_capacity(units);
        let mut interrupted = false;
        // Renew the batch's leases while it is computed, so the coordinator knows this worker
        // is alive; a worker that dies stops renewing and its replicas go to others in minutes.
        let held: Vec<u64> = open.values().copied().collect();
        let every = Duration::from_secs(HEARTBEAT_SECS);
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        while !tasks.is_empty() {
            tokio::select! {
                _ = heartbeat.tick() => self.renew(auth, &held),
                joined = tasks.join_next() => match joined {
                    Some(Ok(Ok(d))) => {
                        open.remove(&d.index);
                        done.push(d);
                    }
                    Some(Ok(Err(e))) | Some(Err(e)) => return Err(anyhow!("engine task failed: {e}")),
                    None => break,
                },
                _ = stop_reached(&mut self.shutdown, Stop::Now) => {
                    cancel.store(true, Ordering::Relaxed);
                    tasks.abort_all();
                    interrupted = true;
                    break;
                }
            }
        }
        done.sort_by_key(|d| d.index);
        let mut results = Vec::with_capacity(done.len());
        for d in done {
            let a = d.assignment;
            match d.outcome {
                Ok(result) => results.push(batched_result(&a, result, d.elapsed)),
                Err(ComputeError::Cancelled) => {
                    open.insert(d.index, a.lease_id);
                }
                Err(ComputeError::EngineFailed(reason)) => {
                    // Never a result: the replica is closed as failed and goes to another worker.
                    tracing::error!(lease = a.lease_id, "engine failed: {reason}");
                    if let Err(e) = self.client.fail(auth, a.lease_id, &reason).await {
                        tracing::warn!(lease = a.lease_id, "could not report the failure: {e}");
                    }
                    self.summary.failed += 1;
                }
                Err(e) => {
                    // A position this engine refuses: give the lease back so someone else tries.
                    tracing::error!(lease = a.lease_id, "{e}");
                    let _ = self.client.abandon(auth, a.lease_id).await;
                    self.summary.refused += 1;
                }
            }
        }
        if interrupted {
            let leases: Vec<u64> = open.into_values().collect();
            self.summary.given_back += leases.len() as u64;
            self.give_back_all(auth, &leases).await;
        } else {
            self.batch = next_batch_size(units, started.elapsed(), self.cfg.max_batch);
        }
        if !results.is_empty() && !self.submit(auth, results).await? {
            interrupted = true;
        }
        Ok(!interrupted)
    }

    /// Renews `leases` in the background (best effort: a heartbeat that fails is followed by
    /// the next, and a lease that lapsed is still answered while its replica is needed).
    fn renew(&self, auth: &WorkerAuth, leases: &[u64]) {
        let (client, auth, leases) = (self.client.clone(), auth.clone(), leases.to_vec());
        tokio::spawn(async move {
            let asked = leases.len();
            match tokio::time::timeout(
                Duration::from_secs(HEARTBEAT_SECS),
                client.heartbeat(&auth, leases),
            )
            .await
            {
                Ok(Ok(r)) if r.renewed.len() < asked => tracing::debug!(
                    "{} of {asked} leases renewed (the others were answered or expired)",
                    r.renewed.len()
                ),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::debug!("heartbeat not answered: {e}"),
                Err(_) => tracing::debug!("heartbeat not answered: timeout"),
            }
        });
    }

    /// Gives leases back, all at once, best effort: if the coordinator is unreachable they
    /// simply expire.
    async fn give_back_all(&self, auth: &WorkerAuth, leases: &[u64]) {
        let mut all = JoinSet::new();
        for &lease_id in leases {
            let (client, auth) = (self.client.clone(), auth.clone());
            all.spawn(async move {
                let give_back = client.abandon(&auth, lease_id);
                match tokio::time::timeout(Duration::from_secs(5), give_back).await {
                    Ok(Ok(_)) => tracing::info!(lease = lease_id, "lease given back"),
                    Ok(Err(e)) => {
                        tracing::warn!(lease = lease_id, "could not give the lease back: {e}")
                    }
                    Err(_) => {
                        tracing::warn!(lease = lease_id, "could not give the lease back: timeout")
                    }
                }
            });
        }
        all.join_all().await;
    }

    /// Submits computed results in one request, retrying while the coordinator is unreachable
    /// or busy (a computed result is worth it). Returns false if shutdown came first.
    async fn submit(&mut self, auth: &WorkerAuth, results: Vec<BatchedResult>) -> Result<bool> {
        loop {
            let pause = self.pace.delay(Instant::now());
            if !pause.is_zero() && sleep_or_stop(pause, &mut self.shutdown, Stop::Now).await {
                return Ok(false);
            }
            match self.client.submit_batch(auth, results.clone()).await {
                Ok(answer) => {
                    self.backoff.reset();
                    let (mut accepted, mut accepted_nodes) = (0u64, 0u128);
                    for (r, outcome) in results.iter().zip(answer.outcomes) {
                        let nodes = r.result.nodes();
                        match outcome {
                            BatchedOutcome::Accepted => {
                                accepted += 1;
                                accepted_nodes += u128::from(nodes);
                                tracing::debug!(
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
                    if accepted > 0 {
                        self.accepted(accepted, accepted_nodes);
                    }
                    return Ok(true);
                }
                Err(e) if e.is_transient() => {
                    let d = self.retry_delay(&e)?;
                    log_retry(&e, "retrying the submission", d);
                    if sleep_or_stop(d, &mut self.shutdown, Stop::Now).await {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    tracing::warn!("results not accepted: {e}");
                    self.summary.refused += results.len() as u64;
                    return Ok(true);
                }
            }
        }
    }

    /// Counts accepted results in the session and lifetime totals (kept in the state file).
    fn accepted(&mut self, results: u64, nodes: u128) {
        self.summary.submitted += results;
        self.summary.nodes += nodes;
        self.summary.lifetime_results += results;
        self.summary.lifetime_nodes += nodes;
        tracing::info!(
            "{} accepted: {} nodes (session: {}, {} nodes)",
            report::count(results, "result"),
            thousands(nodes),
            report::count(self.summary.submitted, "result"),
            thousands(self.summary.nodes)
        );
        if let (Some(id), Some(path)) = (&mut self.stored, &self.cfg.state_file) {
            id.results = self.summary.lifetime_results;
            id.nodes = self.summary.lifetime_nodes;
            if let Err(e) = identity::save(path, id) {
                tracing::warn!("lifetime totals not saved: {e:#}");
            }
        }
    }

    /// Says that the coordinator has no work, and why when a rule keeps this worker from work
    /// that remains: once at first, again when the reason changes, then every minute while it
    /// lasts.
    fn log_idle(&mut self, next: Duration, waiting: Option<Waiting>) {
        let since = *self.idle_since.get_or_insert_with(Instant::now);
        let changed = self.idle_reason != waiting;
        let due = changed
            || self
                .idle_logged
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(60));
        self.idle_reason = waiting;
        if !due {
            return;
        }
        self.idle_logged = Some(Instant::now());
        let why = match waiting {
            Some(w) => format!("no work for this worker: {}", w.describe()),
            None => "the coordinator has nothing to hand out now (no campaign has work left, or other workers are computing what remains)".to_string(),
        };
        let idle = since.elapsed();
        if idle < Duration::from_secs(1) || changed {
            tracing::info!(
                "waiting for work: {why}; asking again in {}",
                report::duration(next)
            );
        } else {
            tracing::info!(
                "still waiting for work ({} so far): {why}; asking again in {}",
                report::duration(idle),
                report::duration(next)
            );
        }
    }

    /// The wait before retrying after a transient error: the backoff, but never less than the
    /// coordinator's `Retry-After` (plus jitter, so rate-limited workers do not return in step).
    /// Gives up instead once `give_up_after` attempts in a row have failed.
    fn retry_delay(&mut self, e: &crate::client::ClientError) -> Result<Duration> {
        if let Some(limit) = self.cfg.give_up_after
            && self.backoff.failures() + 1 >= limit
        {
            bail!("giving up after {limit} failed attempts: {e}");
        }
        let backoff = self.backoff.next_delay();
        Ok(match e.retry_after() {
            Some(ra) => backoff.max(retry_after(
                ra.as_secs().min(u64::from(u32::MAX)) as u32,
                self.cfg.backoff_cap.max(ra),
            )),
            None => backoff,
        })
    }
}

/// Logs a transient failure before its retry: expected back-pressure (the coordinator asked to
/// wait: a 429 with its `Retry-After`) at INFO, real trouble (unreachable, failing) at WARN.
fn log_retry(e: &crate::client::ClientError, what: &str, d: Duration) {
    if e.is_back_pressure() {
        tracing::info!("{e}; {what} in {}", report::duration(d));
    } else {
        tracing::warn!("{e}; {what} in {}", report::duration(d));
    }
}

/// One assignment back from its compute task.
struct Done {
    /// Its place in the batch (results are submitted in batch order).
    index: usize,
    assignment: Assignment,
    outcome: Result<WorkResult, ComputeError>,
    elapsed: Duration,
}
