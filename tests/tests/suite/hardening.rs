//! Hardening of issue 12 ("also found on the same run"), one test each, against a real server on
//! 127.0.0.1 with a real SQLite file: connections capped per address and timed out (slowloris),
//! engine labels bounded on submission; worker names and engine labels with control, line-break
//! or bidirectional characters refused at registration (issue 29 item 8).

use c960_common::codec;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{
    Capabilities, EngineInfo, FetchResponse, PROTOCOL_VERSION, SubmitBatchRequest,
};
use c960_coordinator::model::ReplicaState;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use c960_coordinator::net::conn::ConnLimits;
use c960_coordinator::store::Store;
use c960_tests::{TestServer, honest_result, honest_submission, quick_config, raw_post};
use c960_worker::client::Client;

const OCTET: &str = "application/octet-stream";

fn addr_of(server: &TestServer) -> SocketAddr {
    server.url.trim_start_matches("http://").parse().unwrap()
}

/// A TCP connection to the server from `local` (any 127.x.y.z is this machine).
async fn connect_from(local: [u8; 4], to: SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(IpAddr::from(local), 0))
        .unwrap();
    socket.connect(to).await.unwrap()
}

/// Whether the server closes this connection within `limit` (EOF or reset), reading only.
async fn closed_within(mut s: tokio::net::TcpStream, limit: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout(limit, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn idle_connections_are_capped_per_address_and_timed_out() {
    let limits = ConnLimits {
        per_address: 16,
        per_block: 0,
        total: 64,
        // Refused connections closed at once (`serve` holds them for `conn::HOLD` first).
        held_refusals: 0,
        header_timeout: Duration::from_secs(3),
        idle_timeout: Duration::from_secs(3),
    };
    let server = TestServer::start_with(quick_config(), limits).await;
    let addr = addr_of(&server);
    // 200 connections from one address that never send a byte.
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(connect_from([127, 0, 0, 1], addr).await);
    }
    // Another client still gets its answer while they are open.
    let other = reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, 0, 2]))
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let status = other
        .get(format!("{}/api/v1/status", server.url))
        .send()
        .await
        .expect("status answers beside 200 idle connections");
    assert_eq!(status.status().as_u16(), 200);
    // Beyond the per-address cap the server closed them at once; the 16 it admitted stay open
    // until the idle timeout.
    let mut checks = tokio::task::JoinSet::new();
    for s in idle {
        checks.spawn(closed_within(s, Duration::from_millis(1500)));
    }
    let (mut closed, mut open) = (0, Vec::new());
    while let Some(r) = checks.join_next().await {
        if r.unwrap() {
            closed += 1;
        } else {
            open.push(());
        }
    }
    assert_eq!((closed, open.len()), (184, 16));
    // Admitted but silent connections are closed after the idle timeout.
    let held: Vec<_> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(connect_from([127, 0, 0, 4], addr).await);
        }
        v
    };
    let started = Instant::now();
    for s in held {
        assert!(closed_within(s, Duration::from_secs(10)).await);
    }
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "closed too early"
    );
}

#[tokio::test]
async fn a_connection_sending_headers_slowly_is_closed() {
    use tokio::io::AsyncWriteExt;
    let limits = ConnLimits {
        header_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(30),
        ..ConnLimits::default()
    };
    let server = TestServer::start_with(quick_config(), limits).await;
    let mut s = connect_from([127, 0, 0, 3], addr_of(&server)).await;
    // One header byte every 100 ms keeps the connection busy, so only the header timeout can
    // close it; the whole head would take 30 s.
    let head = format!(
        "GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Slow: {}\r\n\r\n",
        "a".repeat(300)
    );
    let started = Instant::now();
    let mut refused = false;
    for b in head.as_bytes() {
        if s.write_all(&[*b]).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        if started.elapsed() > Duration::from_secs(15) {
            break;
        }
    }
    // Either a write failed (the server closed) or the server answers 408 and closes.
    let closed = refused || closed_within(s, Duration::from_secs(1)).await;
    assert!(closed, "the slow connection was not closed");
}

#[tokio::test]
async fn long_engine_labels_are_refused_on_submit_and_submit_batch() {
    let server = TestServer::start(quick_config()).await;
    server.campaign(1, "0-1");
    let client = Client::new(&server.url).unwrap();
    let auth = client.register("w", 1, 0).await.unwrap();
    let a = match client.fetch(&auth, &Capabilities::builtin()).await.unwrap() {
        FetchResponse::Assigned(a) => a,
        other => panic!("no work: {other:?}"),
    };
    let long = "x".repeat(101);
    for engine in [
        EngineInfo {
            name: long.clone(),
            version: "1".into(),
        },
        EngineInfo {
            name: "c960".into(),
            version: long.clone(),
        },
    ] {
        let mut single = honest_submission(&a);
        single.engine = engine.clone();
        let (s, c, _) = raw_post(
            &server.url,
            "/api/v1/submit",
            Some(&auth.token),
            OCTET,
            codec::encode(&single).unwrap(),
        )
        .await;
        assert_eq!((s, c.as_str()), (400, "bad_field"));
        let batch = SubmitBatchRequest {
            protocol: PROTOCOL_VERSION,
            engine,
            results: vec![honest_result(&a)],
        };
        let (s, c, _) = raw_post(
            &server.url,
            "/api/v1/submit-batch",
            Some(&auth.token),
            OCTET,
            codec::encode(&batch).unwrap(),
        )
        .await;
        assert_eq!((s, c.as_str()), (400, "bad_field"));
    }
    // Nothing was stored and the lease is still open: the same result with a short label goes in.
    assert!(
        server
            .store
            .results(a.workunit_id)
            .unwrap()
            .iter()
            .all(|r| r.state == ReplicaState::InProgress)
    );
    client.submit(&auth, &honest_submission(&a)).await.unwrap();
}

const ADMIN: &str = "admin-token-for-tests-0123456789";

/// Status, code and `Retry-After` of an admin request with this token, from `local`.
async fn admin_attempt(url: &str, local: [u8; 4], token: &str) -> (u16, String, Option<String>) {
    let client = reqwest::Client::builder()
        .local_address(IpAddr::from(local))
        .build()
        .unwrap();
    let resp = client
        .get(format!("{url}/api/v1/admin/workunits/1/results"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body: serde_json::Value =
        serde_json::from_str(&resp.text().await.unwrap()).unwrap_or_default();
    (
        status,
        body["code"].as_str().unwrap_or("").to_string(),
        retry,
    )
}

#[tokio::test]
async fn admin_token_guessing_is_429_after_a_few_failures() {
    let server = TestServer::start(c960_coordinator::net::api::Config {
        admin_token_hash: Some(c960_coordinator::integrity::secrets::sha256(ADMIN)),
        ..quick_config()
    })
    .await;
    server.campaign(1, "0");
    let url = &server.url;
    // The right token works, and does not spend the failure budget.
    for _ in 0..10 {
        assert_eq!(admin_attempt(url, [127, 0, 0, 1], ADMIN).await.0, 200);
    }
    let wrong = "wrong-token-for-tests-0123456789";
    for _ in 0..5 {
        let (s, c, _) = admin_attempt(url, [127, 0, 0, 1], wrong).await;
        assert_eq!((s, c.as_str()), (401, "bad_token"));
    }
    // Then every attempt from that address is refused, the right token too, with a Retry-After.
    for token in [wrong, ADMIN] {
        let (s, c, retry) = admin_attempt(url, [127, 0, 0, 1], token).await;
        assert_eq!((s, c.as_str()), (429, "rate_limited"));
        let secs: u64 = retry.expect("Retry-After").parse().unwrap();
        assert!((1..=10).contains(&secs), "{secs}");
    }
    // Another address is not affected.
    assert_eq!(admin_attempt(url, [127, 0, 0, 5], ADMIN).await.0, 200);
}

#[tokio::test]
async fn a_banned_worker_keeps_asking_and_resumes_after_unban() {
    let server = TestServer::start(quick_config()).await;
    let mut cfg = c960_worker::runner::RunnerConfig::new(&server.url);
    cfg.name = "resumer".into();
    cfg.progress = false;
    cfg.backoff_cap = Duration::from_millis(500);
    let (stop, rx) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(c960_worker::runner::run(cfg, rx));
    // It registers (worker 1) and finds no work; the operator bans it, then adds a campaign.
    let until = Instant::now() + Duration::from_secs(30);
    while server.store.worker(1).unwrap().is_none() {
        assert!(Instant::now() < until, "the worker did not register");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.store.set_banned(1, true, 0).unwrap();
    let c = server.campaign(1, "0-1");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!worker.is_finished(), "the banned worker gave up");
    let mine = |server: &TestServer| {
        let (_, rows) = server.store.table(c.id).unwrap();
        rows.iter()
            .flat_map(|r| server.store.results(r.workunit_id).unwrap())
            .filter(|r| r.worker_id == 1 && r.state == ReplicaState::Returned)
            .count()
    };
    assert_eq!(mine(&server), 0, "a banned worker got work");
    // Unbanned, it works again without a restart.
    server.store.set_banned(1, false, 0).unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while mine(&server) < 2 {
        assert!(Instant::now() < until, "the unbanned worker did not resume");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(true).unwrap();
    let summary = worker.await.unwrap().unwrap();
    assert_eq!(summary.submitted, 2);
}

#[tokio::test]
async fn an_impossible_count_is_refused_not_validated() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "518");
    let client = Client::new(&server.url).unwrap();
    let mut liars = Vec::new();
    for i in 0..2 {
        let auth = client.register(&format!("liar-{i}"), 1, 0).await.unwrap();
        let a = match client.fetch(&auth, &Capabilities::builtin()).await.unwrap() {
            FetchResponse::Assigned(a) => a,
            other => panic!("no work: {other:?}"),
        };
        liars.push((auth, a));
    }
    // Both answer perft(2) = 2^64 - 1, consistently (same payload, correct digest).
    for (auth, a) in &liars {
        let mut r = honest_result(a);
        let c960_common::wire::WorkResult::Perft(p) = &mut r.result else {
            panic!("perft")
        };
        let rest: u64 = p.divide[1..].iter().map(|x| x.1).sum();
        p.divide[0].1 = u64::MAX - rest;
        p.nodes = u64::MAX;
        r.digest = c960_common::digest::result_digest(a.workunit_id, &a.kind, &r.result);
        let mut single = honest_submission(a);
        single.result = r.result;
        single.digest = r.digest;
        let err = client.submit(auth, &single).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::InvalidResult));
    }
    let (_, rows) = server.store.table(c.id).unwrap();
    assert_eq!((rows[0].status.as_str(), rows[0].nodes), ("open", None));
}

#[tokio::test]
async fn table_exports_are_rate_limited_per_address() {
    let server = TestServer::start(c960_coordinator::net::api::Config {
        limits: c960_coordinator::net::api::Limits {
            export_per_address: c960_coordinator::net::api::limits::Rate::new(0.1, 2.0),
            ..quick_config().limits
        },
        ..quick_config()
    })
    .await;
    let c = server.campaign(1, "0-3");
    let from = |local: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(IpAddr::from(local))
            .build()
            .unwrap()
    };
    let table = format!("{}/api/v1/campaigns/{}/table?format=csv", server.url, c.id);
    let one = from([127, 0, 0, 1]);
    for _ in 0..2 {
        assert_eq!(one.get(&table).send().await.unwrap().status().as_u16(), 200);
    }
    let refused = one.get(&table).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 429);
    let secs: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&secs), "{secs}");
    let body: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["code"], "rate_limited");
    // The balance report counts as an export; status does not; other addresses have their own.
    let balance = format!("{}/api/v1/campaigns/{}/balance", server.url, c.id);
    assert_eq!(
        one.get(&balance).send().await.unwrap().status().as_u16(),
        429
    );
    let status = format!("{}/api/v1/status", server.url);
    assert_eq!(
        one.get(&status).send().await.unwrap().status().as_u16(),
        200
    );
    let other = from([127, 0, 0, 6]);
    assert_eq!(
        other.get(&table).send().await.unwrap().status().as_u16(),
        200
    );
}

/// `serve --trusted-proxy`: a forwarded-for header from an untrusted peer changes nothing; from
/// the trusted proxy (127.0.0.1 here) each forwarded client has its own rate-limit bucket, and
/// a registration through it is filed under the client's address block.
#[tokio::test]
async fn forwarded_addresses_count_only_through_a_trusted_proxy() {
    let server = TestServer::start(c960_coordinator::net::api::Config {
        limits: c960_coordinator::net::api::Limits {
            export_per_address: c960_coordinator::net::api::limits::Rate::new(0.01, 2.0),
            ..quick_config().limits
        },
        trusted_proxies: c960_coordinator::net::proxies::TrustedProxies::new(vec![
            c960_coordinator::net::proxies::parse_proxy("127.0.0.1").unwrap(),
        ]),
        ..quick_config()
    })
    .await;
    let c = server.campaign(1, "0-3");
    let table = format!("{}/api/v1/campaigns/{}/table?format=csv", server.url, c.id);
    let from = |local: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(IpAddr::from(local))
            .build()
            .unwrap()
    };
    let get = |client: &reqwest::Client, forwarded: &str| {
        client
            .get(&table)
            .header("x-forwarded-for", forwarded)
            .send()
    };
    // An untrusted peer names a new client each time: all its requests share its own bucket.
    let untrusted = from([127, 0, 0, 2]);
    let mut statuses = Vec::new();
    for spoofed in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] {
        statuses.push(get(&untrusted, spoofed).await.unwrap().status().as_u16());
    }
    assert_eq!(
        statuses,
        [200, 200, 429],
        "a spoofed header changed nothing"
    );

    // Through the trusted proxy: each forwarded client its own bucket (the rightmost entry that
    // is not a trusted proxy; a client's own spoofed entries to its left are not believed).
    let proxy = from([127, 0, 0, 1]);
    for _ in 0..2 {
        let s = get(&proxy, "203.0.113.1").await.unwrap().status();
        assert_eq!(s.as_u16(), 200);
    }
    let third = get(&proxy, "192.0.2.99, 203.0.113.1").await.unwrap();
    assert_eq!(
        third.status().as_u16(),
        429,
        "203.0.113.1's bucket is empty"
    );
    let other = get(&proxy, "203.0.113.2").await.unwrap();
    assert_eq!(
        other.status().as_u16(),
        200,
        "another client, another bucket"
    );
    let chained = get(&proxy, "203.0.113.3, 127.0.0.1").await.unwrap();
    assert_eq!(chained.status().as_u16(), 200, "a trusted hop is skipped");
    // The untrusted peer's bucket is still empty, whatever it forwards.
    let s = get(&untrusted, "203.0.113.4").await.unwrap().status();
    assert_eq!(s.as_u16(), 429);

    // A registration through the proxy is filed under the client's block, not the proxy's.
    let body = codec::encode(&c960_common::wire::RegisterRequest {
        protocol: PROTOCOL_VERSION,
        name: "behind caddy".into(),
        engine: EngineInfo {
            name: "test".into(),
            version: "0".into(),
        },
        threads: 1,
        hash_mib: 0,
        enrol_secret: None,
    })
    .unwrap();
    let resp = proxy
        .post(format!("{}/api/v1/register", server.url))
        .header("content-type", OCTET)
        .header("x-forwarded-for", "198.51.100.77")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut block = None;
    server
        .store
        .raw_read(&mut |conn| {
            let row = conn.query_one("SELECT reg_block FROM workers ORDER BY id DESC", &[])?;
            block = row.opt_text(0)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(block.as_deref(), Some("198.51.100.0/24"));
}

/// A registration with this name and engine: status and code.
async fn register_raw(server: &TestServer, name: &str, engine: EngineInfo) -> (u16, String) {
    let body = codec::encode(&c960_common::wire::RegisterRequest {
        protocol: PROTOCOL_VERSION,
        name: name.into(),
        engine,
        threads: 1,
        hash_mib: 0,
        enrol_secret: None,
    })
    .unwrap();
    let (s, c, _) = raw_post(&server.url, "/api/v1/register", None, OCTET, body).await;
    (s, c)
}

#[tokio::test]
async fn labels_with_control_line_break_or_bidirectional_characters_are_refused() {
    let server = TestServer::start(quick_config()).await;
    let engine = |name: &str, version: &str| EngineInfo {
        name: name.into(),
        version: version.into(),
    };
    // Every bidirectional control, C0, DEL and C1 controls, the line and paragraph separators.
    let refused = [
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\0', '\n', '\u{1B}', '\u{7F}',
        '\u{85}', '\u{2028}', '\u{2029}',
    ];
    for c in refused {
        let cp = format!("U+{:04X}", c as u32);
        let name = format!("evil{c}gnp.exe");
        assert_eq!(
            register_raw(&server, &name, engine("c960", "1")).await,
            (400, "bad_label".to_string()),
            "name with {cp}"
        );
        assert_eq!(
            register_raw(&server, "w", engine(&name, "1")).await,
            (400, "bad_label".to_string()),
            "engine name with {cp}"
        );
        assert_eq!(
            register_raw(&server, "w", engine("c960", &name)).await,
            (400, "bad_label".to_string()),
            "engine version with {cp}"
        );
    }
    assert_eq!(server.store.worker_summary(0).unwrap().registered, 0);
    // Other scripts, emoji with joiners and plain names are welcome.
    for name in ["alice", "象棋 ♞", "Ölçü-2", "👩\u{200D}💻 lab"] {
        let (s, _) = register_raw(&server, name, engine("c960", "1")).await;
        assert_eq!(s, 200, "{name}");
    }
}
