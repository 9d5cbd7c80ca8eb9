//! `GET /metrics` (the registry of [`crate::net::metrics`], store gauges refreshed at scrape from the
//! trigger-kept counters), `GET /healthz` (the process answers) and `GET /readyz` (the store
//! answers). Generic over the router state.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::clock::now_ms;
use crate::store::Store;

/// `/metrics`, `/healthz` and `/readyz` over this store, for any router state.
pub fn routes<S: Clone + Send + Sync + 'static>(store: Arc<dyn Store>) -> Router<S> {
    let ready = store.clone();
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let store = store.clone();
                async move { scrape(store).await }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(move || {
                let store = ready.clone();
                async move {
                    match tokio::task::spawn_blocking(move || store.campaigns()).await {
                        Ok(Ok(_)) => (StatusCode::OK, "ready\n").into_response(),
                        Ok(Err(e)) => {
                            tracing::error!("readyz: the store does not answer: {e}");
                            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
                        }
                        Err(_) => {
                            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
                        }
                    }
                }
            }),
        )
}

/// Sets the store gauges from the trigger-kept counters, then renders the registry.
async fn scrape(store: Arc<dyn Store>) -> Response {
    let refreshed = tokio::task::spawn_blocking(move || -> Result<(), String> {
        let now = now_ms();
        let progress = store.progress().map_err(|e| e.to_string())?;
        let workers = store.worker_summary(now).map_err(|e| e.to_string())?;
        let m = crate::net::metrics::metrics();
        m.workunits.reset();
        m.queued.reset();
        m.nodes_valid.reset();
        let mut in_flight = 0;
        for p in &progress {
            let id = p.campaign.id.to_string();
            let open = p.total - p.valid - p.failed;
            for (state, n) in [("valid", p.valid), ("failed", p.failed), ("open", open)] {
                m.workunits.with_label_values(&[&id, state]).set(n as i64);
            }
            m.queued
                .with_label_values(&[&id])
                .set(p.queued_replicas as i64);
            m.nodes_valid
                .with_label_values(&[&id])
                .set(p.nodes_valid as f64);
            in_flight += p.in_flight;
        }
        m.leases_in_flight.set(in_flight as i64);
        m.workers_active.set(workers.active_last_hour as i64);
        m.workers_registered.set(workers.registered as i64);
        m.boinc_hosts.set(workers.boinc_hosts as i64);
        m.boinc_valid_results.set(workers.boinc_valid as i64);
        Ok(())
    })
    .await;
    if let Err(e) = refreshed.map_err(|e| e.to_string()).and_then(|r| r) {
        tracing::error!("metrics: cannot read the store: {e}");
    }
    match crate::net::metrics::render() {
        Ok(buf) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], buf).into_response(),
        Err(e) => {
            tracing::error!("metrics: cannot encode: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot encode metrics\n").into_response()
        }
    }
}
