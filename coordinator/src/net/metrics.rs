//! Prometheus metrics (the `prometheus` crate, text format at `GET /metrics`, served by
//! [`crate::net::api::health`]), and the request middleware that counts, times and logs every request.
//!
//! Counters live in one process-wide registry: requests by route and status, request latency,
//! results accepted and refused by reason, store transaction latency. Gauges that describe the
//! store (workunits by state per campaign, leases in flight, workers) are set from the
//! trigger-kept counters when `/metrics` is scraped, so a scrape costs O(campaigns), never a
//! scan of a campaign.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramTimer, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The registry of every c960 metric.
pub struct Metrics {
    registry: Registry,
    /// HTTP requests by matched route, method and status.
    pub requests: IntCounterVec,
    /// HTTP request latency by matched route.
    pub latency: HistogramVec,
    /// Results accepted (stored for the quorum).
    pub results_accepted: IntCounter,
    /// Results refused, by machine-readable code.
    pub results_refused: IntCounterVec,
    /// Store write transactions' latency (lock wait included).
    pub store_transaction: Histogram,
    /// Workunits by campaign and state (set at scrape).
    pub workunits: IntGaugeVec,
    /// Replicas waiting to be leased, by campaign (set at scrape).
    pub queued: IntGaugeVec,
    /// Canonical nodes of valid workunits, by campaign (set at scrape; a float past 2^53).
    pub nodes_valid: prometheus::GaugeVec,
    /// Leases in flight (set at scrape).
    pub leases_in_flight: IntGauge,
    /// Workers seen in the last hour (set at scrape).
    pub workers_active: IntGauge,
    /// Registered workers (set at scrape).
    pub workers_registered: IntGauge,
    /// Registered BOINC hosts (set at scrape).
    pub boinc_hosts: IntGauge,
    /// Valid results of BOINC hosts (set at scrape).
    pub boinc_valid_results: IntGauge,
    /// Always 1, labelled with this build's version, commit and protocol.
    pub build_info: IntGaugeVec,
    /// Connections closed by the connection caps, by reason (`address`, `block`, `total`:
    /// refused at once; `shed`: an idle one of the heaviest block closed to admit another).
    pub connections_closed: IntCounterVec,
}

fn build() -> prometheus::Result<Metrics> {
    let registry = Registry::new();
    let requests = IntCounterVec::new(
        Opts::new(
            "c960_http_requests_total",
            "HTTP requests by route, method and status",
        ),
        &["route", "method", "status"],
    )?;
    let latency = HistogramVec::new(
        HistogramOpts::new("c960_http_request_duration_seconds", "HTTP request latency").buckets(
            vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
            ],
        ),
        &["route"],
    )?;
    let results_accepted = IntCounter::new(
        "c960_results_accepted_total",
        "Results accepted for the quorum",
    )?;
    let results_refused = IntCounterVec::new(
        Opts::new(
            "c960_results_refused_total",
            "Results refused, by reason code",
        ),
        &["reason"],
    )?;
    let store_transaction = Histogram::with_opts(
        HistogramOpts::new(
            "c960_store_transaction_seconds",
            "Store write transactions, lock wait included",
        )
        .buckets(vec![
            0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0,
        ]),
    )?;
    let workunits = IntGaugeVec::new(
        Opts::new("c960_workunits", "Workunits by campaign and state"),
        &["campaign", "state"],
    )?;
    let queued = IntGaugeVec::new(
        Opts::new("c960_replicas_queued", "Replicas waiting to be leased"),
        &["campaign"],
    )?;
    let nodes_valid = prometheus::GaugeVec::new(
        Opts::new(
            "c960_campaign_nodes_valid",
            "Canonical nodes of valid workunits",
        ),
        &["campaign"],
    )?;
    let leases_in_flight = IntGauge::new("c960_leases_in_flight", "Leases issued, not answered")?;
    let workers_active = IntGauge::new("c960_workers_active", "Workers seen in the last hour")?;
    let workers_registered = IntGauge::new("c960_workers_registered", "Registered workers")?;
    let boinc_hosts = IntGauge::new(
        "c960_boinc_hosts",
        "Registered workers that are BOINC hosts (serve --boinc)",
    )?;
    let boinc_valid_results =
        IntGauge::new("c960_boinc_valid_results", "Valid results of BOINC hosts")?;
    let build_info = IntGaugeVec::new(
        Opts::new(
            "c960_build_info",
            "This coordinator's build: version, git commit and protocol (always 1)",
        ),
        &["version", "commit", "protocol"],
    )?;
    build_info
        .with_label_values(&[
            c960_cli::build_info::VERSION,
            c960_cli::build_info::COMMIT,
            &c960_common::wire::PROTOCOL_VERSION.to_string(),
        ])
        .set(1);
    let connections_closed = IntCounterVec::new(
        Opts::new(
            "c960_connections_closed_total",
            "Connections closed by the connection caps, by reason",
        ),
        &["reason"],
    )?;
    registry.register(Box::new(requests.clone()))?;
    registry.register(Box::new(latency.clone()))?;
    registry.register(Box::new(results_accepted.clone()))?;
    registry.register(Box::new(results_refused.clone()))?;
    registry.register(Box::new(store_transaction.clone()))?;
    registry.register(Box::new(workunits.clone()))?;
    registry.register(Box::new(queued.clone()))?;
    registry.register(Box::new(nodes_valid.clone()))?;
    registry.register(Box::new(leases_in_flight.clone()))?;
    registry.register(Box::new(workers_active.clone()))?;
    registry.register(Box::new(workers_registered.clone()))?;
    registry.register(Box::new(boinc_hosts.clone()))?;
    registry.register(Box::new(boinc_valid_results.clone()))?;
    registry.register(Box::new(build_info.clone()))?;
    registry.register(Box::new(connections_closed.clone()))?;
    Ok(Metrics {
        registry,
        requests,
        latency,
        results_accepted,
        results_refused,
        store_transaction,
        workunits,
        queued,
        nodes_valid,
        leases_in_flight,
        workers_active,
        workers_registered,
        boinc_hosts,
        boinc_valid_results,
        build_info,
        connections_closed,
    })
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> =
        LazyLock::new(|| build().expect("metric names and labels are valid"));
    &METRICS
}

/// Times one store transaction until dropped.
pub fn store_transaction_timer() -> HistogramTimer {
    metrics().store_transaction.start_timer()
}

/// Counts and logs the outcome of each settled result of `worker_id`: `None` for accepted,
/// the refusal code otherwise.
pub fn results_settled(worker_id: u64, outcomes: impl Iterator<Item = Option<&'static str>>) {
    let m = metrics();
    for code in outcomes {
        match code {
            None => m.results_accepted.inc(),
            Some(code) => {
                m.results_refused.with_label_values(&[code]).inc();
                tracing::info!(worker = worker_id, code, "result refused");
            }
        }
    }
}

/// Counts a connection closed by the connection caps ([`crate::net::conn`]) for `reason`.
pub fn connection_closed(reason: &'static str) {
    metrics()
        .connections_closed
        .with_label_values(&[reason])
        .inc();
}

static REQUESTS_ANSWERED: AtomicU64 = AtomicU64::new(0);

/// Requests this process answered (every route), for the pages' own rates.
pub fn requests_answered() -> u64 {
    REQUESTS_ANSWERED.load(Ordering::Relaxed)
}

/// The machine-readable code of an error response, put in its extensions by the error type so
/// that [`track`] can log refusals without reading bodies.
#[derive(Clone, Copy, Debug)]
pub struct RefusalCode(pub &'static str);

/// Middleware over every route: counts and times the request by matched route, and logs a
/// refusal (4xx/5xx) at info level with route, status, code, the client's address
/// ([`crate::net::proxies`]) and the worker the bearer token names (as claimed: the token may be
/// what was refused).
pub async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let method = req.method().clone();
    let claimed_worker = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' ')?.1.split_once('.')?.0.parse::<u64>().ok());
    let address = crate::net::proxies::ClientAddr::of(req.extensions());
    let start = Instant::now();
    let resp = next.run(req).await;
    REQUESTS_ANSWERED.fetch_add(1, Ordering::Relaxed);
    let m = metrics();
    let status = resp.status();
    m.latency
        .with_label_values(&[&route])
        .observe(start.elapsed().as_secs_f64());
    m.requests
        .with_label_values(&[&route, method.as_str(), status.as_str()])
        .inc();
    if status.is_client_error() || status.is_server_error() {
        let code = resp.extensions().get::<RefusalCode>().map_or("-", |c| c.0);
        tracing::info!(
            route,
            method = %method,
            status = status.as_u16(),
            code,
            worker = claimed_worker,
            address = address.map(tracing::field::display),
            "refused"
        );
    }
    resp
}

/// The registry in Prometheus text format.
pub fn render() -> prometheus::Result<Vec<u8>> {
    let mut buf = Vec::new();
    TextEncoder::new().encode(&metrics().registry.gather(), &mut buf)?;
    Ok(buf)
}
