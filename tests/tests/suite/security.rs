//! Security refusals, one test each, against a real server on 127.0.0.1 with a real SQLite file:
//! no token, wrong token, someone else's lease, rate limit (429 + Retry-After), lease cap,
//! oversize body, enrolment policy, admin token, banned and quarantined workers; and the
//! quarantine re-verification: a worker that agreed with an honest peer and is later caught
//! lying has what it validated re-verified by others, and the final table is exact.

use c960_common::error_code::ErrorCode;
use c960_coordinator::model::{ReplicaState, ResultOutcome, RowStatus};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use c960_common::codec;
use c960_common::digest::result_digest;
use c960_common::wire::{
    Assignment, Capabilities, FetchBatchResponse, FetchRequest, FetchResponse, MAX_BODY_BYTES,
    PROTOCOL_VERSION, PerftResult, SubmitRequest, WorkerAuth,
};
use c960_compute::compute::compute;
use c960_coordinator::integrity::secrets::sha256;
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::api::{Config, Limits};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, honest_submission, quick_config, reference};
use c960_worker::client::{Client, engine};

const OCTET: &str = "application/octet-stream";
const ADMIN: &str = "admin-token-for-tests-0123456789";

/// Status, code and `Retry-After` of a raw POST.
async fn post(
    url: &str,
    path: &str,
    token: Option<&str>,
    ct: &str,
    body: Vec<u8>,
) -> (u16, String, Option<String>) {
    c960_tests::raw_post(url, path, token, ct, body).await
}

fn fetch_body() -> Vec<u8> {
    codec::encode(&FetchRequest {
        protocol: PROTOCOL_VERSION,
        capabilities: Capabilities::builtin(),
    })
    .unwrap()
}

async fn fetch_as(url: &str, token: Option<&str>) -> (u16, String) {
    let (s, c, _) = post(url, "/api/v1/fetch", token, OCTET, fetch_body()).await;
    (s, c)
}

async fn setup(config: Config) -> (TestServer, Client, WorkerAuth) {
    let server = TestServer::start(config).await;
    server.campaign(2, "0-3");
    let client = Client::new(&server.url).unwrap();
    let auth = client.register("w", 1, 0).await.unwrap();
    (server, client, auth)
}

fn honest(a: &Assignment) -> PerftResult {
    compute(&a.kind, &AtomicBool::new(false), |_, _, _| {}).unwrap()
}

fn submission(a: &Assignment, result: PerftResult) -> SubmitRequest {
    SubmitRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: result_digest(a.workunit_id, &a.kind, &result.clone().into()),
        result: result.into(),
        elapsed_ms: 1,
        engine: engine(),
    }
}

async fn assigned(client: &Client, auth: &WorkerAuth) -> Assignment {
    match client.fetch(auth, &Capabilities::builtin()).await.unwrap() {
        FetchResponse::Assigned(a) => a,
        other => panic!("no work: {other:?}"),
    }
}

#[tokio::test]
async fn no_token_is_401() {
    let (server, _, _) = setup(quick_config()).await;
    assert_eq!(
        fetch_as(&server.url, None).await,
        (401, "missing_token".into())
    );
    // A protocol-1 worker (credentials in the body, no header) learns that it is outdated.
    let mut v1 = fetch_body();
    v1[0] = 1;
    let (s, c, _) = post(&server.url, "/api/v1/fetch", None, OCTET, v1).await;
    assert_eq!((s, c.as_str()), (400, "unsupported_protocol"));
    // A token in the wrong scheme is no token.
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/fetch", server.url))
        .header("content-type", OCTET)
        .header("authorization", "Basic dXNlcjpwYXNz")
        .body(fetch_body())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn wrong_token_is_401() {
    let (server, _, auth) = setup(quick_config()).await;
    let wrong = format!("{}.{}", auth.worker_id, "0".repeat(32));
    assert_eq!(
        fetch_as(&server.url, Some(&wrong)).await,
        (401, "bad_token".into())
    );
    assert_eq!(
        fetch_as(&server.url, Some("garbage")).await,
        (401, "bad_token".into())
    );
    let secret = auth.token.split_once('.').unwrap().1;
    assert_eq!(
        fetch_as(&server.url, Some(&format!("4242.{secret}"))).await,
        (401, "unknown_worker".into())
    );
    // The real token works, and only SHA-256 of its secret is stored.
    assert_eq!(fetch_as(&server.url, Some(&auth.token)).await.0, 200);
    let w = server.store.worker(auth.worker_id).unwrap().unwrap();
    assert_eq!(w.key_hash, sha256(secret));
    assert!(secret.len() >= 32, "at least 128 bits");
}

#[tokio::test]
async fn someone_elses_lease_is_403() {
    let (server, client, alice) = setup(quick_config()).await;
    let bob = client.register("bob", 1, 0).await.unwrap();
    let a = assigned(&client, &alice).await;
    let req = submission(&a, honest(&a));
    let err = client.submit(&bob, &req).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LeaseNotYours));
    let err = client.abandon(&bob, a.lease_id).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LeaseNotYours));
    client.submit(&alice, &req).await.unwrap();
    let _ = server;
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after() {
    let (server, client, auth) = setup(Config {
        limits: Limits {
            per_worker: Rate::new(0.5, 2.0),
            per_address: Rate::UNLIMITED,
            max_open_leases: 0,
            ..Limits::default()
        },
        ..quick_config()
    })
    .await;
    assert_eq!(fetch_as(&server.url, Some(&auth.token)).await.0, 200);
    assert_eq!(fetch_as(&server.url, Some(&auth.token)).await.0, 200);
    let (status, code, retry) = post(
        &server.url,
        "/api/v1/fetch",
        Some(&auth.token),
        OCTET,
        fetch_body(),
    )
    .await;
    assert_eq!((status, code.as_str()), (429, "rate_limited"));
    let secs: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&secs), "{secs}");
    // The client sees the Retry-After (the runner waits at least that long).
    let err = client
        .fetch(&auth, &Capabilities::builtin())
        .await
        .unwrap_err();
    assert!(err.is_transient());
    assert!(
        err.retry_after()
            .is_some_and(|d| d >= Duration::from_secs(1))
    );
    // Another worker has its own budget.
    let other = client.register("other", 1, 0).await.unwrap();
    assert_eq!(fetch_as(&server.url, Some(&other.token)).await.0, 200);
}

#[tokio::test]
async fn per_address_rate_limit_covers_registration() {
    let server = TestServer::start(Config {
        limits: Limits {
            per_address: Rate::new(0.5, 3.0),
            ..Limits::default()
        },
        ..quick_config()
    })
    .await;
    let client = Client::new(&server.url).unwrap();
    for _ in 0..3 {
        client.register("w", 1, 0).await.unwrap();
    }
    let err = client.register("w", 1, 0).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::RateLimited));
    assert!(err.retry_after().is_some());
}

#[tokio::test]
async fn open_lease_cap_is_429() {
    // Ordinary workunits (depth 5): a lease each against the cap (tiny ones weigh less).
    let server = TestServer::start(Config {
        limits: Limits {
            max_open_leases: 2,
            ..quick_config().limits
        },
        ..quick_config()
    })
    .await;
    server.campaign(5, "0-3");
    let client = Client::new(&server.url).unwrap();
    let auth = client.register("w", 1, 0).await.unwrap();
    let caps = Capabilities::builtin();
    let FetchBatchResponse::Assigned(got) = client.fetch_batch(&auth, &caps, 8).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(got.len(), 2, "capped at 2");
    // Fetching again hands the same two back (a crashed worker recovers them), never more.
    let again = assigned(&client, &auth).await;
    assert_eq!(again, got[0]);
    let analysis_only = Capabilities {
        perft: false,
        ..caps
    };
    let err = client.fetch(&auth, &analysis_only).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LeaseLimit));
    assert!(err.retry_after().is_some());
    assert_eq!(server.store.open_leases(auth.worker_id, 0).unwrap(), 2);
}

#[tokio::test]
async fn oversize_body_is_413() {
    let (server, _, auth) = setup(Config {
        admin_token_hash: Some(sha256(ADMIN)),
        ..quick_config()
    })
    .await;
    let big = vec![1u8; MAX_BODY_BYTES + 1];
    let (s, c, _) = post(&server.url, "/api/v1/submit", Some(&auth.token), OCTET, big).await;
    assert_eq!((s, c.as_str()), (413, "body_too_large"));
    // Admin JSON bodies are bounded too.
    let mut json = b"{\"depth\": 1, \"positions\": \"".to_vec();
    json.extend(std::iter::repeat_n(b'0', MAX_BODY_BYTES));
    json.extend_from_slice(b"\"}");
    let (s, _, _) = post(
        &server.url,
        "/api/v1/admin/campaigns",
        Some(ADMIN),
        "application/json",
        json,
    )
    .await;
    assert_eq!(s, 413);
}

#[tokio::test]
async fn enrolment_needs_the_secret_or_open_enrolment() {
    let server = TestServer::start(Config {
        enrolment: Enrolment::Closed,
        ..quick_config()
    })
    .await;
    let err = Client::new(&server.url)
        .unwrap()
        .register("w", 1, 0)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::EnrolmentClosed));

    let server = TestServer::start(Config {
        enrolment: Enrolment::secret("the-enrolment-secret"),
        ..quick_config()
    })
    .await;
    let plain = Client::new(&server.url).unwrap();
    assert_eq!(
        plain.register("w", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::EnrolmentSecretRequired)
    );
    let wrong = plain.clone().with_enrol_secret(Some("guess".into()));
    assert_eq!(
        wrong.register("w", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::BadEnrolmentSecret)
    );
    let right = plain.with_enrol_secret(Some("the-enrolment-secret".into()));
    right.register("w", 1, 0).await.unwrap();
}

#[tokio::test]
async fn admin_endpoints_need_the_admin_token() {
    let off = TestServer::start(quick_config()).await;
    let body = br#"{"depth": 1, "positions": "0-1"}"#.to_vec();
    let (s, c, _) = post(
        &off.url,
        "/api/v1/admin/campaigns",
        Some(ADMIN),
        "application/json",
        body.clone(),
    )
    .await;
    assert_eq!((s, c.as_str()), (403, "admin_disabled"));

    let (server, _, auth) = setup(Config {
        admin_token_hash: Some(sha256(ADMIN)),
        ..quick_config()
    })
    .await;
    let url = &server.url;
    let path = "/api/v1/admin/campaigns";
    let json = "application/json";
    assert_eq!(
        post(url, path, None, json, body.clone()).await.1,
        "missing_token"
    );
    // A worker token is not an admin token.
    assert_eq!(
        post(url, path, Some(&auth.token), json, body.clone())
            .await
            .1,
        "bad_token"
    );
    let (s, _, _) = post(url, path, Some(ADMIN), json, body).await;
    assert_eq!(s, 201);
    assert_eq!(server.store.campaigns().unwrap().len(), 2);
    let (s, c, _) = post(
        url,
        path,
        Some(ADMIN),
        json,
        br#"{"depth": 1, "positions": "5000"}"#.to_vec(),
    )
    .await;
    assert_eq!((s, c.as_str()), (400, "bad_field"));
    // Raw results, admin only; status and tables stay public.
    let r = reqwest::Client::new()
        .get(format!("{url}/api/v1/admin/workunits/1/results"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = reqwest::Client::new()
        .get(format!("{url}/api/v1/admin/workunits/1/results"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = reqwest::get(format!("{url}/api/v1/status")).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = reqwest::get(format!("{url}/api/v1/campaigns/1/table?format=csv"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn banned_worker_is_403_and_its_lease_goes_back() {
    let (server, client, auth) = setup(Config {
        admin_token_hash: Some(sha256(ADMIN)),
        ..quick_config()
    })
    .await;
    let a = assigned(&client, &auth).await;
    let (s, _, _) = post(
        &server.url,
        &format!("/api/v1/admin/workers/{}/ban", auth.worker_id),
        Some(ADMIN),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        client
            .fetch(&auth, &Capabilities::builtin())
            .await
            .unwrap_err()
            .code(),
        Some(ErrorCode::WorkerBanned)
    );
    let err = client
        .submit(&auth, &honest_submission(&a))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::WorkerBanned));
    assert_eq!(server.store.open_leases(auth.worker_id, 0).unwrap(), 0);
    let (s, _, _) = post(
        &server.url,
        &format!("/api/v1/admin/workers/{}/unban", auth.worker_id),
        Some(ADMIN),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(s, 200);
    assert!(client.fetch(&auth, &Capabilities::builtin()).await.is_ok());
}

/// `serve --enrolment tokens`: registration needs a token the operator minted over the admin
/// API; a token registers up to its cap and nobody after a revocation; two workers of one
/// token never get replicas of one workunit (all clients here share 127.0.0.1 and block
/// separation is off, so only the token separates them).
#[tokio::test]
async fn enrolment_tokens_cap_registrations_and_separate_replicas() {
    let server = TestServer::start(Config {
        enrolment: Enrolment::Tokens,
        admin_token_hash: Some(sha256(ADMIN)),
        ..quick_config()
    })
    .await;
    server.campaign(2, "0-3");
    let url = &server.url;
    let plain = Client::new(url).unwrap();
    assert_eq!(
        plain.register("w", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::EnrolmentTokenRequired)
    );
    let admin = reqwest::Client::new();
    let mint = |name: &str, cap: u64| {
        let req = admin
            .post(format!("{url}/api/v1/admin/enrolment-tokens"))
            .bearer_auth(ADMIN)
            .header("content-type", "application/json")
            .body(serde_json::json!({"name": name, "cap": cap}).to_string());
        async move {
            let r = req.send().await.unwrap();
            assert_eq!(r.status().as_u16(), 201);
            let v: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
            (
                v["token"].as_str().unwrap().to_string(),
                v["record"]["id"].as_u64().unwrap(),
            )
        }
    };
    let (ann, _) = mint("ann", 2).await;
    let (bob, bob_id) = mint("bob", 1).await;
    let with = |t: &str| plain.clone().with_enrol_secret(Some(t.to_string()));
    let a1 = with(&ann).register("a1", 1, 0).await.unwrap();
    let a2 = with(&ann).register("a2", 1, 0).await.unwrap();
    assert_eq!(
        with(&ann).register("a3", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::EnrolmentTokenExhausted)
    );
    let forged = format!("{bob_id}.{}", "0".repeat(32));
    assert_eq!(
        with(&forged).register("x", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::BadEnrolmentToken)
    );
    let r = admin
        .post(format!(
            "{url}/api/v1/admin/enrolment-tokens/{bob_id}/revoke"
        ))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        with(&bob).register("b1", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::EnrolmentTokenRevoked)
    );
    let listed = admin
        .get(format!("{url}/api/v1/admin/enrolment-tokens"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["used"], 2);
    assert_eq!(listed[1]["revoked"], true);

    let first = assigned(&plain, &a1).await;
    let second = assigned(&plain, &a2).await;
    assert_ne!(
        first.workunit_id, second.workunit_id,
        "one token, one volunteer: never two replicas of one workunit"
    );
}

#[test]
fn enrolment_tokens_from_the_command_line() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let store = c960_coordinator::store::SqliteStore::open(&db).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(coordinator)
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let token = run(&["token", "mint", "--name", "ann", "--cap", "3"]);
    let (id, secret) = c960_coordinator::integrity::secrets::parse_token(token.trim()).unwrap();
    let with_token = c960_coordinator::model::NewWorker {
        token: Some((id, sha256(secret))),
        ..c960_coordinator::model::NewWorker::new("w", b"k", "e")
    };
    store.register(&with_token, 0).unwrap();
    assert!(run(&["token", "list"]).contains("1/3"));
    run(&["token", "revoke", &id.to_string()]);
    assert!(run(&["token", "list"]).contains("revoked"));
    assert!(store.register(&with_token, 0).is_err());
}

#[test]
fn ban_and_unban_from_the_command_line() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let store = c960_coordinator::store::SqliteStore::open(&db).unwrap();
    let id = store.register_worker("w", b"h", "e", 0).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(coordinator)
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    let out = run(&["worker", "ban", &id.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(store.worker(id).unwrap().unwrap().banned);
    let out = run(&["worker", "unban", &id.to_string()]);
    assert!(out.status.success());
    assert!(!store.worker(id).unwrap().unwrap().banned);
    let out = run(&["worker", "ban", "999"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[tokio::test]
async fn quarantined_worker_is_403() {
    let (server, client, liar) = setup(Config {
        max_strikes: 1,
        ..quick_config()
    })
    .await;
    let a = assigned(&client, &liar).await;
    let mut req = submission(&a, honest(&a));
    req.digest = [0; 32];
    assert_eq!(
        client.submit(&liar, &req).await.unwrap_err().code(),
        Some(ErrorCode::DigestMismatch)
    );
    assert_eq!(
        client
            .fetch(&liar, &Capabilities::builtin())
            .await
            .unwrap_err()
            .code(),
        Some(ErrorCode::WorkerQuarantined)
    );
    assert!(
        server
            .store
            .worker(liar.worker_id)
            .unwrap()
            .unwrap()
            .quarantined
    );
}

/// S agrees with honest H on two workunits, then lies on a third and is caught by its known
/// answer: it is quarantined, and the two workunits it helped validate are validated again
/// without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quarantine_reverifies_what_the_liar_validated() {
    let (server, client, sneaky) = setup(Config {
        max_strikes: 1,
        ..quick_config()
    })
    .await;
    let c = server.store.campaigns().unwrap()[0].clone();
    let h = client.register("h", 1, 0).await.unwrap();
    let mut agreed = Vec::new();
    for _ in 0..2 {
        let a = assigned(&client, &sneaky).await;
        let b = assigned(&client, &h).await;
        assert_eq!(a.workunit_id, b.workunit_id);
        client
            .submit(&sneaky, &honest_submission(&a))
            .await
            .unwrap();
        client.submit(&h, &honest_submission(&b)).await.unwrap();
        agreed.push((a.workunit_id, a.lease_id));
    }
    let (_, rows) = server.store.table(c.id).unwrap();
    assert_eq!(
        rows.iter().filter(|r| r.status == RowStatus::Valid).count(),
        2
    );

    // The lie: self-consistent wrong counts with a matching digest.
    let a = assigned(&client, &sneaky).await;
    let mut lie = honest(&a);
    lie.divide[0].1 += 1;
    lie.nodes += 1;
    // The total is public (depth 2 of a start position): caught on receipt, evidence.
    assert_eq!(
        client
            .submit(&sneaky, &submission(&a, lie))
            .await
            .unwrap_err()
            .code(),
        Some(ErrorCode::CheckFailed)
    );

    // Honest runners finish everything, including the re-verification.
    server.finish_with_honest_workers(c.id, 2).await;

    let s = server.store.worker(sneaky.worker_id).unwrap().unwrap();
    assert!(s.quarantined);
    assert_eq!(
        client
            .fetch(&sneaky, &Capabilities::builtin())
            .await
            .unwrap_err()
            .code(),
        Some(ErrorCode::WorkerQuarantined)
    );
    let (_, rows) = server.store.table(c.id).unwrap();
    for r in &rows {
        assert_eq!(r.status, RowStatus::Valid);
        assert_eq!(
            r.nodes,
            Some(reference()[&r.sp.unwrap()][1]),
            "sp {:?}",
            r.sp
        );
        let rs = server.store.results(r.workunit_id).unwrap();
        let valid: Vec<_> = rs
            .iter()
            .filter(|x| x.outcome == ResultOutcome::Valid)
            .collect();
        assert!(valid.len() >= 2);
        assert!(valid.iter().all(|x| x.worker_id != sneaky.worker_id));
    }
    for (wu, lease) in agreed {
        let rs = server.store.results(wu).unwrap();
        let voided = rs.iter().find(|x| x.id == lease).unwrap();
        assert_eq!(
            (voided.state, voided.outcome),
            (ReplicaState::Error, ResultOutcome::Invalid)
        );
        // Re-verified: H's result plus a fresh one from a runner.
        let valid: Vec<u64> = rs
            .iter()
            .filter(|x| x.outcome == ResultOutcome::Valid)
            .map(|x| x.worker_id)
            .collect();
        assert!(valid.contains(&h.worker_id), "{rs:?}");
        assert_eq!(valid.len(), 2, "{rs:?}");
    }
}
