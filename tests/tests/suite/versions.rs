//! Versions that say what they are (issue 34): both programs' `--version`, the coordinator's
//! version in `/api/v1/status` and `/metrics`, and each worker's build, named in its User-Agent,
//! kept and shown per worker (`worker list`, `/workers`) by a real `serve` process; a worker from
//! before 0.2, which names none, is served as before and shown as `unknown`.

use std::process::{Command, Stdio};

use c960_cli::build_info::{COMMIT, VERSION};
use c960_common::codec;
use c960_common::wire::{
    CONTENT_TYPE, Capabilities, FetchBatchRequest, PROTOCOL_VERSION, RegisterRequest,
    RegisterResponse, WorkerAuth, WorkerBuild,
};
use c960_tests::{ServeProcess, bins};

fn version_of(bin: &std::path::Path) -> String {
    let out = Command::new(bin).arg("--version").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn both_programs_print_version_commit_and_protocol() {
    let (coordinator, worker) = bins();
    assert_eq!(
        version_of(coordinator),
        format!("c960-coordinator {VERSION} (commit {COMMIT}, protocol {PROTOCOL_VERSION})")
    );
    let line = version_of(worker);
    assert!(
        line.starts_with(&format!(
            "c960-worker {VERSION} (commit {COMMIT}, protocol {PROTOCOL_VERSION}, perft: "
        )),
        "{line}"
    );
}

/// A POST with the User-Agent `agent` (none: as a worker before 0.2 sent it); the body's bytes.
async fn post(
    url: &str,
    path: &str,
    agent: Option<&str>,
    token: Option<&str>,
    body: Vec<u8>,
) -> Vec<u8> {
    let mut req = reqwest::Client::new()
        .post(format!("{url}/api/v1/{path}"))
        .header("content-type", CONTENT_TYPE)
        .body(body);
    if let Some(a) = agent {
        req = req.header("user-agent", a);
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    resp.bytes().await.unwrap().to_vec()
}

async fn register(url: &str, agent: Option<&str>, name: &str) -> WorkerAuth {
    let body = codec::encode(&RegisterRequest {
        protocol: PROTOCOL_VERSION,
        name: name.into(),
        engine: c960_worker::client::engine(),
        threads: 1,
        hash_mib: 0,
        enrol_secret: None,
    })
    .unwrap();
    let resp: RegisterResponse =
        codec::decode(&post(url, "register", agent, None, body).await).unwrap();
    resp.auth
}

async fn fetch(url: &str, agent: Option<&str>, auth: &WorkerAuth) {
    let body = codec::encode(&FetchBatchRequest {
        protocol: PROTOCOL_VERSION,
        capabilities: Capabilities::builtin(),
        max_units: 1,
    })
    .unwrap();
    post(url, "fetch-batch", agent, Some(&auth.token), body).await;
}

/// `worker list`'s build column for worker `id`.
fn listed_build(db: &std::path::Path, id: u64) -> String {
    let out = Command::new(&bins().0)
        .args(["worker", "list", "--db"])
        .arg(db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("id\t") && text.lines().next().unwrap().ends_with("\tbuild"));
    text.lines()
        .skip(1)
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|cells| cells[0] == id.to_string())
        .map(|cells| cells[8].to_string())
        .unwrap_or_else(|| panic!("worker {id} not in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_keeps_and_shows_each_workers_build() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let serve = ServeProcess::start(&db, &["--open-enrolment"], Stdio::null());
    let url = serve.url.clone();

    // A worker of this build (the library's client sends its User-Agent).
    let this = c960_cli::build_info::worker_build().label();
    let client = c960_worker::client::Client::new(&url).unwrap();
    let current = client.register("current", 1, 0).await.unwrap();
    assert_eq!(listed_build(&db, current.worker_id), this);

    // A worker from before 0.2: no User-Agent. Served as before; its build is unknown.
    let old = register(&url, None, "old").await;
    fetch(&url, None, &old).await;
    assert_eq!(listed_build(&db, old.worker_id), "unknown");

    // The same identity upgraded: its next fetch names the new build, and it is shown.
    let newer = WorkerBuild {
        version: "9.8.7".into(),
        commit: "abcdef123456".into(),
    };
    fetch(&url, Some(&newer.user_agent()), &old).await;
    assert_eq!(listed_build(&db, old.worker_id), "9.8.7 (abcdef123456)");
    // Another client's User-Agent names no build: back to unknown, never its text.
    fetch(&url, Some("curl/8.5.0 <b>"), &old).await;
    assert_eq!(listed_build(&db, old.worker_id), "unknown");

    let http = reqwest::Client::new();
    let page = http
        .get(format!("{url}/workers"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(&format!("data-build>{this}<")), "{page}");
    assert!(page.contains("data-build>unknown<"), "{page}");
    let one = http
        .get(format!("{url}/workers/{}", current.worker_id))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(one.contains(&format!("data-build>{this}<")), "{one}");

    let status: serde_json::Value = serde_json::from_str(
        &http
            .get(format!("{url}/api/v1/status"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(status["version"], VERSION);
    assert_eq!(status["commit"], COMMIT);
    assert_eq!(status["protocol"], PROTOCOL_VERSION);

    let metrics = http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let info = format!(
        "c960_build_info{{commit=\"{COMMIT}\",protocol=\"{PROTOCOL_VERSION}\",version=\"{VERSION}\"}} 1"
    );
    assert!(
        metrics.lines().any(|l| l == info),
        "{info} not in {metrics}"
    );
    serve.stop();
}
