//! A connection flood against a real `serve` process (issue 31), shared by `tests/flood.rs`
//! (quick) and `tests/hardening_figures.rs` (the figures): `addresses` × `per_address`
//! connections that send the first line of a request head and no more, and reconnect as soon as
//! one is closed, each address in an IPv4 /24 block of its own (127.B.0.1; all of 127/8 is this
//! machine) or all in one; meanwhile a prober from an address of its own reads `/api/v1/status`
//! every 0.2 s on a new connection each time, and a `c960-worker` process (from 127.0.0.1,
//! `--threads 1`) works through a perft campaign.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::{ServeProcess, bins};

const SECRET: &str = "flood-test-enrolment-secret";

/// One flood.
#[derive(Clone, Debug)]
pub struct Flood {
    /// Flooding addresses.
    pub addresses: usize,
    /// All of them in one /24 block (127.10.0.x) instead of a block each (127.x.0.1).
    pub one_block: bool,
    /// Connections each address keeps open (reopening each as soon as it is closed).
    pub per_address: usize,
    /// `serve` flags besides `--enrol-secret` (empty: the defaults).
    pub serve_args: Vec<String>,
    /// How long the prober reads the status while the flood runs.
    pub probe_for: Duration,
}

/// What one flood measured.
#[derive(Debug)]
pub struct FloodFigures {
    /// Status probes sent during the flood.
    pub probes: usize,
    /// Probes answered 200.
    pub answered: usize,
    /// Latencies of the answered probes, sorted.
    pub latencies: Vec<Duration>,
    /// Workunits of the campaign valid when the flood began and when it ended.
    pub valid: (u64, u64),
    /// Connections the flood opened (the server admitted or closed them).
    pub connects: u64,
    /// The coordinator's CPU seconds during the flood.
    pub serve_cpu_secs: f64,
    /// The coordinator's resident memory before the flood and while it ran, KiB.
    pub rss_kib: (u64, u64),
    /// `c960_connections_closed_total` by reason at the end.
    pub closed: Vec<(String, f64)>,
}

impl FloodFigures {
    /// The latency below which a share `p` of the answered probes came.
    pub fn percentile(&self, p: f64) -> Duration {
        let v = &self.latencies;
        v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }

    /// One line of figures.
    pub fn line(&self) -> String {
        format!(
            "status {}/{} answered ({:.1} %), p50 {:.1?}, p99 {:.1?}, max {:.1?}; campaign valid {} -> {}; \
             {} connections opened; serve {:.2} CPU-s, RSS {} -> {} KiB; closed by the caps: {:?}",
            self.answered,
            self.probes,
            100.0 * self.answered as f64 / self.probes.max(1) as f64,
            self.percentile(0.5),
            self.percentile(0.99),
            self.latencies.last().copied().unwrap_or_default(),
            self.valid.0,
            self.valid.1,
            self.connects,
            self.serve_cpu_secs,
            self.rss_kib.0,
            self.rss_kib.1,
            self.closed
        )
    }
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU seconds (user + system) process `pid` has used, from `/proc/PID/stat`.
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name: state is the 3rd field, utime the 14th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / clock_ticks() as f64
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 where that fails).
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// Resident memory of process `pid` in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Keeps one connection from `from` open, reopening it whenever the server closes it.
async fn hold(
    from: IpAddr,
    to: SocketAddr,
    mut stop: watch::Receiver<bool>,
    connects: Arc<AtomicU64>,
) {
    while !*stop.borrow() {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        let mut stream = tokio::select! {
            s = socket.connect(to) => match s {
                Ok(s) => s,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        connects.fetch_add(1, Ordering::Relaxed);
        // A request begun and never finished: the server holds its buffers until the header
        // timeout.
        let _ = stream
            .write_all(b"GET /api/v1/status HTTP/1.1\r\nHost: flood\r\n")
            .await;
        let mut buf = [0u8; 256];
        loop {
            tokio::select! {
                r = stream.read(&mut buf) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                },
                _ = stop.changed() => return,
            }
        }
    }
}

/// One status probe on a connection of its own: its latency when answered 200, and the
/// campaign's valid workunits.
async fn probe(http: &reqwest::Client, url: &str) -> Option<(Duration, u64)> {
    let t = Instant::now();
    let resp = http.get(format!("{url}/api/v1/status")).send().await.ok()?;
    if resp.status() != 200 {
        return None;
    }
    let status: serde_json::Value = serde_json::from_slice(&resp.bytes().await.ok()?).ok()?;
    Some((t.elapsed(), status["campaigns"][0]["valid"].as_u64()?))
}

/// `c960-coordinator ARGS… --db DB`, which must succeed.
fn coordinator(args: &[&str], db: &Path) {
    crate::coordinator_cli(args, db);
}

/// Runs `flood` against a fresh `serve` and measures it.
pub async fn run(flood: &Flood) -> FloodFigures {
    c960_worker::client::install_crypto_provider();
    // The flood's own sockets live in this process.
    c960_coordinator::net::conn::raise_descriptor_limit();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    let mut args = vec!["--enrol-secret", SECRET];
    args.extend(flood.serve_args.iter().map(String::as_str));
    let serve = ServeProcess::start(&db, &args, Stdio::null());
    // Depth-2 perft of all 960 at quorum 1: a few minutes of one worker's pace, so it is never
    // finished before the flood is.
    coordinator(
        &[
            "campaign",
            "add",
            "--depth",
            "2",
            "--quorum",
            "1",
            "--positions",
            "0-959",
        ],
        &db,
    );
    let pid = serve.child.id();
    let to: SocketAddr = serve.url.trim_start_matches("http://").parse().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let log = std::fs::File::create(dir.path().join("worker.log")).unwrap();
    let _worker = Killed(
        Command::new(&bins().1)
            .args(["work", "--server", &serve.url, "--threads", "1"])
            .env("HOME", &home)
            .env_remove("XDG_STATE_HOME")
            .env("C960_ENROL_SECRET", SECRET)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let prober = reqwest::Client::builder()
        .local_address(IpAddr::from([127, 2, 0, 1]))
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    // The worker is at work before the flood begins.
    let began = Instant::now();
    while probe(&prober, &serve.url).await.is_none_or(|(_, v)| v == 0) {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the worker completed nothing in a minute"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rss_before = rss_kib(pid);
    let (stop, stopped) = watch::channel(false);
    let connects = Arc::new(AtomicU64::new(0));
    let mut holders = tokio::task::JoinSet::new();
    for a in 0..flood.addresses {
        let from = match flood.one_block {
            true => IpAddr::from([127, 10, 0, 1 + a as u8]),
            false => IpAddr::from([127, 10 + a as u8, 0, 1]),
        };
        for _ in 0..flood.per_address {
            holders.spawn(hold(from, to, stopped.clone(), connects.clone()));
        }
    }
    // Let the flood fill what it can.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = cpu_secs(pid);
    let rss_during = rss_kib(pid);
    let (mut probes, mut latencies, mut valid) = (0, Vec::new(), (None, 0));
    let began = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    while began.elapsed() < flood.probe_for {
        tick.tick().await;
        probes += 1;
        if let Some((took, v)) = probe(&prober, &serve.url).await {
            latencies.push(took);
            valid = (valid.0.or(Some(v)), v);
        }
    }
    let serve_cpu_secs = cpu_secs(pid) - cpu_before;
    stop.send(true).unwrap();
    while holders.join_next().await.is_some() {}
    let metrics = prober
        .get(format!("{}/metrics", serve.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let closed = metrics
        .lines()
        .filter_map(|l| l.strip_prefix("c960_connections_closed_total{reason=\""))
        .filter_map(|l| l.split_once("\"} "))
        .map(|(reason, n)| (reason.to_string(), n.trim().parse().unwrap_or(0.0)))
        .collect();
    latencies.sort();
    FloodFigures {
        probes,
        answered: latencies.len(),
        latencies,
        valid: (valid.0.unwrap_or(0), valid.1),
        connects: connects.load(Ordering::Relaxed),
        serve_cpu_secs,
        rss_kib: (rss_before, rss_during),
        closed,
    }
}
