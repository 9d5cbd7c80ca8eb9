//! `/metrics` parsed by a real Prometheus text-format parser, with the counters moving as a
//! campaign's results arrive (and a refused result counted by its reason); the health
//! endpoints; the HTTP hygiene of the public endpoints (gzip, CORS, a JSON 405).

use c960_common::error_code::ErrorCode;
use std::collections::BTreeSet;

use c960_common::wire::{Capabilities, FetchResponse, PROTOCOL_VERSION};
use c960_tests::{TestServer, honest_submission, quick_config};
use c960_worker::client::Client;
use prometheus_parse::{Scrape, Value};

async fn scrape(url: &str) -> Scrape {
    let resp = reqwest::get(format!("{url}/metrics")).await.unwrap();
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain"), "{ct}");
    let text = resp.text().await.unwrap();
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
}

/// The value of the sample `name` whose labels include `labels`; 0 when absent (a counter that
/// has not moved yet is not exported).
fn value(s: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    s.samples
        .iter()
        .filter(|x| x.metric == name)
        .filter(|x| labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .map(|x| match &x.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(h) => h.iter().map(|b| b.count).fold(0.0, f64::max),
            Value::Summary(_) => 0.0,
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_move_as_results_arrive() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-5");
    let id = c.id.to_string();
    let before = scrape(&server.url).await;
    assert_eq!(
        value(
            &before,
            "c960_workunits",
            &[("campaign", &id), ("state", "open")]
        ),
        6.0
    );
    assert_eq!(
        value(
            &before,
            "c960_workunits",
            &[("campaign", &id), ("state", "valid")]
        ),
        0.0
    );
    let accepted_before = value(&before, "c960_results_accepted_total", &[]);

    // One lying submission: refused with digest_mismatch, counted by reason.
    let client = Client::new(&server.url).unwrap();
    let liar = client.register("liar", 1, 0).await.unwrap();
    let a = match client.fetch(&liar, &Capabilities::builtin()).await.unwrap() {
        FetchResponse::Assigned(a) => a,
        other => panic!("no work: {other:?}"),
    };
    let mut req = honest_submission(&a);
    req.digest = [7; 32];
    assert_eq!(req.protocol, PROTOCOL_VERSION);
    let err = client.submit(&liar, &req).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DigestMismatch));
    let mid = scrape(&server.url).await;
    assert_eq!(
        value(
            &mid,
            "c960_results_refused_total",
            &[("reason", "digest_mismatch")]
        ) - value(
            &before,
            "c960_results_refused_total",
            &[("reason", "digest_mismatch")]
        ),
        1.0
    );
    assert!(value(&mid, "c960_leases_in_flight", &[]) >= 0.0);
    assert_eq!(value(&mid, "c960_workers_registered", &[]), 1.0);

    server.finish_with_honest_workers(c.id, 2).await;
    let after = scrape(&server.url).await;
    let p = c960_tests::progress_of(&*server.store, c.id);
    assert_eq!(
        value(
            &after,
            "c960_workunits",
            &[("campaign", &id), ("state", "valid")]
        ),
        p.valid as f64
    );
    assert_eq!(p.valid, 6);
    assert_eq!(
        value(&after, "c960_campaign_nodes_valid", &[("campaign", &id)]),
        p.nodes_valid as f64
    );
    // At least a quorum of 2 accepted results per workunit.
    assert!(value(&after, "c960_results_accepted_total", &[]) - accepted_before >= 12.0);
    assert_eq!(value(&after, "c960_workers_registered", &[]), 3.0);
    // Requests by route and status, and their latency histogram.
    let routes: BTreeSet<String> = after
        .samples
        .iter()
        .filter(|s| s.metric == "c960_http_requests_total")
        .map(|s| {
            format!(
                "{} {}",
                s.labels.get("route").unwrap_or("?"),
                s.labels.get("status").unwrap_or("?")
            )
        })
        .collect();
    assert!(routes.contains("/api/v1/register 200"), "{routes:?}");
    assert!(routes.contains("/api/v1/submit 422"), "{routes:?}");
    assert!(
        routes
            .iter()
            .any(|k| k.starts_with("/api/v1/submit-batch 200")),
        "{routes:?}"
    );
    assert!(
        value(
            &after,
            "c960_http_request_duration_seconds",
            &[("route", "/api/v1/fetch")]
        ) >= 1.0
    );
    assert!(value(&after, "c960_store_transaction_seconds", &[]) >= 12.0);
}

#[tokio::test]
async fn health_gzip_cors_and_json_405() {
    let server = TestServer::start(quick_config()).await;
    server.campaign(1, "0-3");
    let url = &server.url;
    let http = reqwest::Client::new();
    let ok = http.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let ready = http.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);

    // Public read endpoints: gzip on request, and readable from any origin.
    for path in [
        "/",
        "/api/v1/status",
        "/api/v1/campaigns/1/table?format=csv",
        "/workers",
    ] {
        let resp = http
            .get(format!("{url}{path}"))
            .header("accept-encoding", "gzip")
            .header("origin", "https://example.org")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["content-encoding"], "gzip", "{path}");
        assert_eq!(resp.headers()["access-control-allow-origin"], "*", "{path}");
    }
    // The worker API gets no CORS header.
    let resp = http
        .post(format!("{url}/api/v1/fetch"))
        .header("origin", "https://example.org")
        .send()
        .await
        .unwrap();
    assert!(resp.headers().get("access-control-allow-origin").is_none());

    // A wrong method: 405 with the API's JSON error body.
    let resp = http
        .post(format!("{url}/api/v1/status"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
    assert!(resp.headers()["allow"].to_str().unwrap().contains("GET"));
    let body: serde_json::Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(body["code"], "method_not_allowed");
}
