//! Shared helpers for the integration tests: binary paths, reference data, in-process servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use c960_coordinator::integrity::trust::Integrity;
use c960_coordinator::model::{Campaign, CampaignProgress};
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::api::{self, AppState, Config, Limits};
use c960_coordinator::net::conn::{self, ConnLimits, GatedListener};
use c960_coordinator::store::{SqliteStore, Store};
use c960_coordinator::work::campaign::{NewCampaign, parse_positions};

pub mod boinc;
pub mod flood;

/// The tests' PostgreSQL server (`C960_TEST_POSTGRES`) with the schema `schema` emptied and
/// created: its URL and the URL whose connections use that schema (`search_path` in the
/// URL's options), or `None` with a loud message when the variable is unset outside CI (under
/// CI it must be set: the PostgreSQL tests must run there).
pub fn postgres_schema(what: &str, schema: &str) -> Option<(String, String)> {
    let base = match std::env::var("C960_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "CI is set but C960_TEST_POSTGRES is not: the PostgreSQL tests must run under CI"
            )
        }
        _ => {
            eprintln!("SKIPPED: {what} (set C960_TEST_POSTGRES to run it)");
            return None;
        }
    };
    let url = fresh_schema(&base, schema);
    Some((base, url))
}

/// Drops and creates the schema `schema` on the PostgreSQL server at `base`; returns the URL
/// whose connections use it (`search_path` in the URL's options).
pub fn fresh_schema(base: &str, schema: &str) -> String {
    let mut c = postgres::Client::connect(base, postgres::NoTls).expect("connect to PostgreSQL");
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .expect("a fresh schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{schema}")
}

/// Paths of the `c960-coordinator` and `c960-worker` binaries, built once per test process.
///
/// Cargo gives `CARGO_BIN_EXE_*` only to a package's own tests, so this runs
/// `$CARGO build --bins` for both packages (a no-op when up to date) in the profile of the test
/// executable and finds them next to it (`target/<profile>/`).
pub fn bins() -> &'static (PathBuf, PathBuf) {
    static BINS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BINS.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "c960-coordinator",
            "-p",
            "c960-worker",
            "--bins",
        ]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        cmd.env(
            "CARGO_TARGET_DIR",
            profile_dir.parent().expect("target dir"),
        );
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "cargo build of the binaries failed");
        let c = profile_dir.join("c960-coordinator");
        let w = profile_dir.join("c960-worker");
        assert!(
            c.exists() && w.exists(),
            "binaries not found in {}",
            profile_dir.display()
        );
        (c, w)
    })
}

/// The reference table: start position → perft(1..=6).
pub fn reference() -> &'static BTreeMap<u16, [u64; 6]> {
    static REF: OnceLock<BTreeMap<u16, [u64; 6]>> = OnceLock::new();
    REF.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../common/tests/data/chess960_startpos_perft.csv");
        let text = std::fs::read_to_string(&path).expect("reference table");
        let mut map = BTreeMap::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let mut d = [0u64; 6];
            for (i, v) in d.iter_mut().enumerate() {
                *v = f[3 + i].parse().expect("count");
            }
            map.insert(f[0].parse().expect("sp"), d);
        }
        assert_eq!(map.len(), 960);
        map
    })
}

/// Parses a table CSV into start position → (depth, nodes, status); checks the fixed header.
pub fn parse_table(csv: &str) -> BTreeMap<u16, (u32, Option<u64>, String)> {
    let mut lines = csv.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("sp,fen,depth,nodes"),
        "header {header:?}"
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                (f[2].parse().unwrap(), f[3].parse().ok(), f[4].to_string()),
            )
        })
        .collect()
}

/// A coordinator served in this process on 127.0.0.1 with a real SQLite file.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The store (the same file the server uses).
    pub store: Arc<SqliteStore>,
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The coordinator's checker thread (stops when the server is dropped).
    pub checker: c960_coordinator::integrity::checker::Checker,
}

/// The progress of campaign `id` (which must exist) as the store reports it.
pub fn progress_of(store: &dyn Store, id: u64) -> CampaignProgress {
    store
        .progress()
        .unwrap()
        .into_iter()
        .find(|p| p.campaign.id == id)
        .unwrap()
}

impl TestServer {
    /// Starts a server with this configuration on a fresh database, served by `serve`'s own
    /// connection loop with its timeouts but no connection caps (every test client is
    /// 127.0.0.1).
    pub async fn start(config: Config) -> TestServer {
        let uncapped = ConnLimits {
            per_address: 0,
            per_block: 0,
            total: 0,
            ..ConnLimits::default()
        };
        TestServer::start_with(config, uncapped).await
    }

    /// Starts a server with this configuration and these connection limits.
    pub async fn start_with(config: Config, connections: ConnLimits) -> TestServer {
        // Tests also use plain reqwest clients, which need the crypto provider installed.
        c960_worker::client::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("c960.db")).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let checker = c960_coordinator::integrity::checker::spawn(
            store.clone(),
            config.checks,
            config.uci.clone(),
        );
        let app = api::app(AppState::new(store.clone(), config));
        let listener = GatedListener::new(listener, connections);
        tokio::spawn(conn::serve(
            listener,
            app,
            connections,
            std::future::pending(),
        ));
        TestServer {
            url,
            store,
            dir,
            checker,
        }
    }

    /// `GET /api/v1/status` as JSON.
    pub async fn status(&self) -> serde_json::Value {
        let resp = reqwest::get(format!("{}/api/v1/status", self.url)).await;
        let text = resp.unwrap().text().await.unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Adds a perft campaign.
    pub fn campaign(&self, depth: u32, positions: &str) -> Campaign {
        let spec = NewCampaign::new(depth, 2, None, parse_positions(positions).unwrap()).unwrap();
        self.store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .unwrap()
    }

    /// Adds an analysis campaign (quorum 2) searched with `engine` to `depth`.
    pub fn analysis_campaign(
        &self,
        depth: u32,
        positions: &str,
        engine: c960_common::wire::AnalysisEngine,
    ) -> Campaign {
        let spec = NewCampaign::new(depth, 2, None, parse_positions(positions).unwrap())
            .unwrap()
            .analyse(engine)
            .unwrap();
        self.store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .unwrap()
    }

    /// Runs `n` honest in-process workers until campaign `campaign` is finished, then stops
    /// them and checks they ended cleanly.
    pub async fn finish_with_honest_workers(&self, campaign: u64, n: usize) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let mut tasks = Vec::new();
        for i in 0..n {
            let mut cfg = c960_worker::runner::RunnerConfig::new(&self.url);
            cfg.name = format!("honest-{i}");
            cfg.progress = false;
            cfg.backoff_cap = Duration::from_secs(1);
            tasks.push(tokio::spawn(c960_worker::runner::run(cfg, rx.clone())));
        }
        self.wait_finished(campaign, Duration::from_secs(120)).await;
        tx.send(true).unwrap();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
    }

    pub async fn wait_finished(&self, campaign: u64, limit: Duration) {
        let until = std::time::Instant::now() + limit;
        loop {
            let p = progress_of(&*self.store, campaign);
            if p.valid + p.failed == p.total {
                return;
            }
            assert!(
                std::time::Instant::now() < until,
                "campaign {campaign} not finished: {p:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A configuration with short retries and open enrolment, for tests. The default rate limits
/// stay on except per address, for exports and registrations per address block (every test
/// client is 127.0.0.1), and so do the integrity rules except address-block separation and the
/// untrusted lease cap (the adversary suite turns those on where it tests them).
pub fn quick_config() -> Config {
    Config {
        lease: Duration::from_secs(3600),
        max_strikes: 3,
        retry_after_secs: 1,
        enrolment: Enrolment::Open,
        limits: Limits {
            per_address: Rate::UNLIMITED,
            per_worker: Rate::new(50.0, 100.0),
            registrations_per_block: Rate::UNLIMITED,
            registrations_total: Rate::UNLIMITED,
            export_per_address: Rate::UNLIMITED,
            ..Limits::default()
        },
        integrity: Integrity {
            address_separation: c960_coordinator::integrity::trust::AddressSeparation::Off,
            untrusted_lease_cap: 0,
            ..Integrity::default()
        },
        ..Config::default()
    }
}

/// Runs one in-process worker named `name` with the UCI `engine` until `workunit` has more
/// than `returned_before` returned results, then stops it (at most two minutes).
pub async fn one_uci_result(
    server: &TestServer,
    name: &str,
    engine: c960_compute::uci_engine::UciCommand,
    workunit: u64,
    returned_before: usize,
) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut cfg = c960_worker::runner::RunnerConfig::new(&server.url);
    cfg.name = name.into();
    cfg.progress = false;
    cfg.backoff_base = Duration::from_millis(20);
    cfg.backoff_cap = Duration::from_millis(200);
    cfg.uci = Some(engine);
    let task = tokio::spawn(c960_worker::runner::run(cfg, rx));
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let returned = server
            .store
            .results(workunit)
            .unwrap()
            .iter()
            .filter(|r| r.digest.is_some())
            .count();
        if returned > returned_before {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} returned nothing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tx.send(true).unwrap();
    task.await.unwrap().unwrap();
}

/// A raw POST, as a misbehaving client would send it: status, the refusal's machine-readable
/// `code` (or the whole body when it is not a JSON refusal) and the `Retry-After` header.
pub async fn raw_post(
    url: &str,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, Option<String>) {
    let mut req = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header("content-type", content_type)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let text = resp.text().await.unwrap();
    let code = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_string))
        .unwrap_or(text);
    (status, code, retry)
}

/// `c960-coordinator ARGS… --db DB` as an operator runs it, which must succeed; its standard
/// output.
pub fn coordinator_cli(args: &[&str], db: &Path) -> String {
    let out = Command::new(&bins().0)
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// An honest answer to a perft assignment, computed here, with its digest.
pub fn honest_result(a: &c960_common::wire::Assignment) -> c960_common::wire::BatchedResult {
    let perft = c960_compute::compute::compute(&a.kind, &Default::default(), |_, _, _| {})
        .expect("a perft workunit");
    let result = c960_common::wire::WorkResult::Perft(perft);
    c960_common::wire::BatchedResult {
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: c960_common::digest::result_digest(a.workunit_id, &a.kind, &result),
        result,
        elapsed_ms: 1,
    }
}

/// [`honest_result`] as a single submission.
pub fn honest_submission(a: &c960_common::wire::Assignment) -> c960_common::wire::SubmitRequest {
    let r = honest_result(a);
    c960_common::wire::SubmitRequest {
        protocol: c960_common::wire::PROTOCOL_VERSION,
        lease_id: r.lease_id,
        workunit_id: r.workunit_id,
        result: r.result,
        elapsed_ms: r.elapsed_ms,
        engine: c960_worker::client::engine(),
        digest: r.digest,
    }
}

/// A `c960-coordinator serve` process on 127.0.0.1 (port 0 unless asked), killed when dropped.
pub struct ServeProcess {
    /// The process (its stderr as asked by [`ServeProcess::start`]).
    pub child: std::process::Child,
    /// The URL its first stdout line names.
    pub url: String,
}

impl ServeProcess {
    /// Starts `serve --listen 127.0.0.1:0 --db DB ARGS…` and waits for its "listening on" line.
    pub fn start(db: &Path, args: &[&str], stderr: std::process::Stdio) -> ServeProcess {
        ServeProcess::start_with(&bins().0, db, args, stderr)
    }

    /// [`ServeProcess::start`] with the `c960-coordinator` binary at `bin` (the benchmark runs
    /// a release build without building it).
    pub fn start_with(
        bin: &Path,
        db: &Path,
        args: &[&str],
        stderr: std::process::Stdio,
    ) -> ServeProcess {
        ServeProcess::spawn(bin, "127.0.0.1:0", db, args, stderr)
    }

    /// [`ServeProcess::start`] listening on `listen` (e.g. `127.0.0.1:PORT`): a coordinator
    /// restarted where its workers' `--server` URL still points.
    pub fn start_on(
        db: &Path,
        listen: &str,
        args: &[&str],
        stderr: std::process::Stdio,
    ) -> ServeProcess {
        ServeProcess::spawn(&bins().0, listen, db, args, stderr)
    }

    /// `BIN serve --listen LISTEN --db DB ARGS…`, once its "listening on" line is out.
    fn spawn(
        bin: &Path,
        listen: &str,
        db: &Path,
        args: &[&str],
        stderr: std::process::Stdio,
    ) -> ServeProcess {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(bin)
            .args(["serve", "--listen", listen, "--db"])
            .arg(db)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start the coordinator");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("first line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line {line:?}"))
            .to_string();
        ServeProcess { child, url }
    }

    /// Stops the process and returns everything it wrote on stderr (when piped).
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr()
    }

    /// Stops the process as an operator's Ctrl-C or a service manager would (`sig`: `INT` or
    /// `TERM`), waits for it to exit (at most 30 s, then kills it and fails) and returns its
    /// exit status and everything it wrote on stderr (when piped).
    pub fn stop_with(mut self, sig: &str) -> (std::process::ExitStatus, String) {
        signal(&self.child, sig);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                std::time::Instant::now() < until,
                "serve still running 30 s after SIG{sig}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        (status, self.stderr())
    }

    /// Everything the process wrote on stderr (when piped), once it has exited.
    fn stderr(&mut self) -> String {
        let mut err = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut err).expect("stderr");
        }
        err
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The npm `stockfish` 19.0.0 single-threaded full-network WASM build as a UCI command run by
/// node, when installed (`.ci/run` puts it into `.ci/engines/`; `C960_STOCKFISH_JS` names another
/// copy); `None` when node or the package is missing.
pub fn wasm_stockfish() -> Option<c960_compute::uci_engine::UciCommand> {
    npm_engine(
        "C960_STOCKFISH_JS",
        "../.ci/engines/node_modules/stockfish/bin/stockfish-19-single.js",
    )
}

/// The npm `stockfish` 18.0.8 single-threaded full-network WASM build (the engine of
/// `data/balance_sf18_d20.csv`; `.ci/run` puts it into `.ci/engines/sf18/`,
/// `C960_STOCKFISH18_JS` names another copy); `None` when node or the package is missing.
pub fn wasm_stockfish_18() -> Option<c960_compute::uci_engine::UciCommand> {
    npm_engine(
        "C960_STOCKFISH18_JS",
        "../.ci/engines/sf18/node_modules/stockfish/bin/stockfish-18-single.js",
    )
}

fn npm_engine(var: &str, default: &str) -> Option<c960_compute::uci_engine::UciCommand> {
    let js = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(default));
    if !js.is_file() {
        return None;
    }
    // Fails (so `None`) when node is not on PATH.
    c960_compute::uci_engine::UciCommand::parse(&format!("node \"{}\"", js.display())).ok()
}

/// Honest in-process workers (the real runner, `honest-0`, `honest-1`, …) against a server,
/// stopped together.
pub struct HonestWorkers {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<c960_worker::runner::Summary>>>,
}

impl HonestWorkers {
    /// Starts `n` workers at `url` with a quick backoff, a 16 MiB perft table, and the UCI
    /// engine `uci` if given.
    pub fn start(url: &str, n: usize, uci: Option<c960_compute::uci_engine::UciCommand>) -> Self {
        let (stop, rx) = tokio::sync::watch::channel(false);
        let tasks = (0..n)
            .map(|i| {
                let mut cfg = c960_worker::runner::RunnerConfig::new(url);
                cfg.name = format!("honest-{i}");
                cfg.progress = false;
                cfg.backoff_base = Duration::from_millis(50);
                cfg.backoff_cap = Duration::from_millis(300);
                cfg.hash_mib = 16;
                cfg.uci = uci.clone();
                tokio::spawn(c960_worker::runner::run(cfg, rx.clone()))
            })
            .collect();
        HonestWorkers { stop, tasks }
    }

    /// Stops them and waits for them to end.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// Polls `ready` every 50 ms until it says `Ok`, panicking with its last `Err` after `limit`.
pub async fn wait_until(limit: Duration, mut ready: impl FnMut() -> Result<(), String>) {
    let until = std::time::Instant::now() + limit;
    loop {
        match ready() {
            Ok(()) => return,
            Err(why) => assert!(std::time::Instant::now() < until, "{why}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `sig` (`TERM`, `INT`, `STOP`, `CONT`, `KILL`…) to `child` with kill(1), as an operator
/// or a service manager would.
pub fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{sig} {}", child.id());
}

/// The worker id a worker's state file keeps for its only coordinator.
pub fn worker_id(state: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    assert_eq!(v["identities"].as_array().unwrap().len(), 1, "{v}");
    v["identities"][0]["worker_id"].as_u64().unwrap()
}
