//! `c960-coordinator serve`: its options (one struct for the flags and the TOML file of
//! `--config`, see `cli_config.rs`) and the server they start.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use c960_coordinator::integrity::checker::{self, CheckBudget};
use c960_coordinator::integrity::trust::{AddressSeparation, Integrity};
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::api::{self, AppState, Config, Limits};
use c960_coordinator::net::conn::{self, ConnLimits, GatedListener};
use c960_coordinator::net::proxies::TrustedProxies;
use c960_coordinator::store::{self, Store};

use crate::{init_tracing, open};

/// `serve`'s options: every flag, and every key of its `--config` file.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Read options from this TOML file: each key is a flag's name in snake_case
    /// (`lease_secs = 600`, `open_enrolment = true`, `trusted_proxy = ["127.0.0.1"]`);
    /// flags on the command line override it. Secrets only by file (`admin_token_file`).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on, e.g. 0.0.0.0:8960 (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8960")]
    pub(crate) listen: String,
    /// SQLite database file (created if missing), or a PostgreSQL database
    /// (`postgres://user:password@host:port/db`; several coordinators may share one).
    #[arg(long)]
    pub(crate) db: PathBuf,
    /// A lease's whole life in seconds: its hard deadline, however often it is renewed.
    #[arg(long, default_value_t = 3600)]
    pub(crate) lease_secs: u64,
    /// Seconds a lease stays open without a renewal: workers renew the leases they compute
    /// every 30 s, so a worker that died gives its replicas back after this long (0: no
    /// renewals, leases last --lease-secs; else at least 60).
    #[arg(long, default_value_t = 90)]
    pub(crate) lease_renewal_secs: u64,
    /// Refused (malformed) results after which a worker gets no more work (0: never); a failed
    /// check excludes it at once.
    #[arg(long, default_value_t = 3)]
    pub(crate) max_strikes: u64,
    /// Seconds a worker is told to wait when there is no work.
    #[arg(long, default_value_t = 10)]
    pub(crate) retry_after_secs: u32,
    /// Workers must present this secret to register (prefer the environment variable:
    /// command lines are visible to other users).
    #[arg(long, env = "C960_ENROL_SECRET", hide_env_values = true)]
    pub(crate) enrol_secret: Option<String>,
    /// Read the enrolment secret from this file (its first line; a systemd or container
    /// secret), instead of --enrol-secret.
    #[arg(long, conflicts_with = "enrol_secret")]
    pub(crate) enrol_secret_file: Option<PathBuf>,
    /// Anyone may register a worker. Without this or --enrol-secret, nobody can.
    #[arg(long, conflicts_with_all = ["enrol_secret", "enrol_secret_file"])]
    pub(crate) open_enrolment: bool,
    /// `tokens`: workers register only with a per-volunteer enrolment token the operator
    /// minted (`token mint`, capped per token); replicas of one workunit never go to two
    /// workers of one token.
    #[arg(long, value_parser = ["tokens"], conflicts_with_all = ["enrol_secret", "open_enrolment"])]
    pub(crate) enrolment: Option<String>,
    /// Token for the admin endpoints (campaigns, bans, raw results); none: they are off.
    #[arg(long, env = "C960_ADMIN_TOKEN", hide_env_values = true)]
    pub(crate) admin_token: Option<String>,
    /// Read the admin token from this file (its first line), instead of --admin-token.
    #[arg(long, conflicts_with = "admin_token")]
    pub(crate) admin_token_file: Option<PathBuf>,
    /// Worker API requests per second per client address (0: no limit; raise it behind a
    /// reverse proxy, where all requests come from one address).
    #[arg(long, default_value_t = 50.0)]
    pub(crate) rate_per_address: f64,
    /// Worker API requests per second per worker (burst 4x; 0: no limit). A default worker
    /// paces itself to 4 a second at most.
    #[arg(long, default_value_t = c960_coordinator::net::api::state::DEFAULT_PER_WORKER.per_sec)]
    pub(crate) rate_per_worker: f64,
    /// Table exports per second per client address (burst 4x; 0: no limit); requests with
    /// the admin token are not limited.
    #[arg(long, default_value_t = 0.5)]
    pub(crate) export_rate_per_address: f64,
    /// Open leases one worker may hold at once (0: no cap).
    #[arg(long, default_value_t = 64)]
    pub(crate) max_open_leases: u64,
    /// Seconds a request may take before it is answered 503 timeout.
    #[arg(long, default_value_t = 30)]
    pub(crate) request_timeout_secs: u64,
    /// Share of untrusted workers' results the coordinator recomputes itself (0..1), besides
    /// the one every --trust-check-spacing-secs that their trust needs while agreements of
    /// theirs wait for it (see --unanchored-sample).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) check_rate: f64,
    /// Share of trusted workers' results the coordinator recomputes itself (0..1).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) check_rate_trusted: f64,
    /// Largest workunit (estimated perft nodes) the coordinator checks itself (0: no checks).
    #[arg(long, default_value_t = 500_000_000)]
    pub(crate) check_max_nodes: u64,
    /// Deepest built-in analysis the coordinator searches itself for a check (0: none).
    #[arg(long, default_value_t = 8)]
    pub(crate) check_max_analysis_depth: u32,
    /// Secret checks a worker must pass before its results count without a trusted peer.
    #[arg(long, default_value_t = 3)]
    pub(crate) trust_after: u64,
    /// Open leases of an untrusted worker (doubles with each passed check).
    #[arg(long, default_value_t = 4)]
    pub(crate) untrusted_lease_cap: u64,
    /// Open leases of all workers of one address block (IPv4 /24, IPv6 /48) together (0: no cap).
    #[arg(long, default_value_t = 512)]
    pub(crate) block_lease_cap: u64,
    /// Which address blocks (IPv4 /24, IPv6 /48) keep replicas of one workunit apart and
    /// share --block-lease-cap: `public` (loopback, private and link-local blocks do not:
    /// workers on one machine or one lab network pair), `everywhere`, or `off`.
    #[arg(long, value_enum, default_value_t = AddressSeparation::Public)]
    pub(crate) address_separation: AddressSeparation,
    /// Let workers of one address block hold replicas of the same workunit (behind a NAT or
    /// a proxy that hides the volunteers' addresses): `--address-separation off`.
    #[arg(long, conflicts_with = "address_separation")]
    pub(crate) shared_address_blocks: bool,
    /// Workers registered within this many seconds of each other from one address block never
    /// hold replicas of one workunit, even with --shared-address-blocks (0: off; behind a
    /// proxy, e.g. 600).
    #[arg(long, default_value_t = 0)]
    pub(crate) registration_burst_secs: u64,
    /// Share of validated perft values (without a public answer) the coordinator re-splits
    /// one ply deeper and recounts, trusted workers' too (0..1, within --check-max-nodes).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) resplit_rate: f64,
    /// Share of validated values not vouched for by the coordinator or the operator's own
    /// workers that are audited: by one more hidden replica for another randomly drawn worker
    /// when one is at work (a disagreement is settled by a dispute), else (and for
    /// --audit-sample of them) by the coordinator when it can (within --check-max-nodes,
    /// --check-max-analysis-depth), else see --audit-replica-rate (0..1).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) audit_rate: f64,
    /// Share of the audits the coordinator computes itself although another worker could take
    /// them: its own random sample (0..1).
    #[arg(long, default_value_t = 0.01)]
    pub(crate) audit_sample: f64,
    /// Share of the agreements nothing anchors (no published total, no trusted worker among
    /// them) that the coordinator checks as soon as they form; the others wait until one of
    /// their workers has earned its trust (--trust-after checks, one asked every
    /// --trust-check-spacing-secs), and are then audited like any value it anchors. Every one
    /// is checked at once while no other worker is at work (0..1; 1: all at once, as
    /// 0.2.0 did).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) unanchored_sample: f64,
    /// Spare capacity re-verifies: a worker with no other work gets a hidden replica of a valid
    /// perft value with fewer than this many agreeing workers, fewest first (a disagreement is
    /// settled by a dispute; 0: off).
    #[arg(long, default_value_t = 4)]
    pub(crate) idle_reverify_upto: u64,
    /// Re-verify only this campaign's values with spare capacity (default: every active
    /// campaign's).
    #[arg(long)]
    pub(crate) idle_reverify_campaign: Option<u64>,
    /// Kept for old command lines, no longer used: since issue 54 every audit the coordinator
    /// cannot compute goes to one more hidden replica whenever another worker is at work, and
    /// is exported as `unaudited` only when none is (0..1).
    #[arg(long, default_value_t = 0.1)]
    pub(crate) audit_replica_rate: f64,
    /// Seconds a worker has to answer a challenge of a dispute (two results of a perft
    /// workunit disagree and the coordinator cannot count it: each side is asked for the
    /// children of the node where they differ); silence past it loses the dispute.
    #[arg(long, default_value_t = 6 * 3600)]
    pub(crate) challenge_secs: u64,
    /// A passed check counts towards a worker's trust only this many seconds after the last
    /// one that counted (--trust-after checks spread over time; 0: every check counts).
    #[arg(long, default_value_t = 20)]
    pub(crate) trust_check_spacing_secs: u64,
    /// Hand each worker its replicas drawn at random from at least this many of a
    /// campaign's ready workunits, so that which workers share a workunit is the
    /// coordinator's choice, not the order of their fetches (0: in order, lowest id first).
    #[arg(long, default_value_t = c960_coordinator::work::transitioner::DRAW_POOL)]
    pub(crate) draw_pool: u64,
    /// Open leases of a worker in probation (untrusted, no result returned yet): free
    /// identities under --open-enrolment cannot hoard the work (0: no probation cap).
    #[arg(long, default_value_t = c960_coordinator::integrity::trust::PROBATION_LEASE_CAP)]
    pub(crate) probation_lease_cap: u64,
    /// Open leases of all workers in probation of one address block together, loopback and
    /// private blocks too (0: no cap).
    #[arg(long, default_value_t = c960_coordinator::integrity::trust::PROBATION_BLOCK_CAP)]
    pub(crate) probation_block_cap: u64,
    /// Percent of each campaign's remaining replicas that workers in probation may hold
    /// together (at least 4; a block holding none gets one more; 0: no share).
    #[arg(long, default_value_t = c960_coordinator::integrity::trust::PROBATION_SHARE_PCT, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub(crate) probation_share_percent: u64,
    /// A UCI engine the coordinator audits UCI analyses and self-play games with, e.g.
    /// /usr/games/stockfish: the same build as the volunteers' (only the same build's values
    /// compare; others go to hidden audit replicas).
    #[arg(long, value_name = "COMMAND")]
    pub(crate) uci: Option<String>,
    /// Fastest plausible result, perft nodes per second from lease to receipt (0: off).
    #[arg(long, default_value_t = 20_000_000_000)]
    pub(crate) max_nodes_per_sec: u64,
    /// Registrations per hour per address block (bursts of 10; 0: no limit).
    #[arg(long, default_value_t = 60.0)]
    pub(crate) registrations_per_hour: f64,
    /// Registrations per hour from all addresses together (bursts of 200; 0: no limit).
    #[arg(long, default_value_t = c960_coordinator::net::api::state::DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR)]
    pub(crate) registrations_per_hour_total: f64,
    /// Connections one client address may hold open; more are closed at once (0: no cap;
    /// raise it behind a reverse proxy).
    #[arg(long, default_value_t = conn::DEFAULT_PER_ADDRESS)]
    pub(crate) max_connections_per_address: usize,
    /// Connections one address block (IPv4 /24, IPv6 /48) may hold open; more are closed at
    /// once (0: no cap).
    #[arg(long, default_value_t = conn::DEFAULT_PER_BLOCK)]
    pub(crate) max_connections_per_block: usize,
    /// Connections open in all (0: no cap). Default: from the open-file limit, which serve
    /// raises to the hard limit at start (7/8 of it, at most 16384). At the cap, a client of
    /// a lighter address block is still admitted: the oldest idle connection of the
    /// heaviest block is closed instead.
    #[arg(long)]
    pub(crate) max_connections: Option<usize>,
    /// Seconds a client may take to send a request's headers (idle keep-alives included).
    #[arg(long, default_value_t = 10)]
    pub(crate) header_timeout_secs: u64,
    /// Seconds a connection may move no byte while no request of it is handled.
    #[arg(long, default_value_t = 30)]
    pub(crate) idle_timeout_secs: u64,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Log lines as `text` (colour only on a terminal) or `json` (one object a line).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub(crate) log_format: String,
    /// A reverse proxy (an IP address or a CIDR block; repeatable) whose X-Forwarded-For
    /// names the client: requests from it are limited, blocked and logged by the rightmost
    /// forwarded address that is not itself a trusted proxy. From any other peer the
    /// header is ignored.
    #[arg(long, value_parser = c960_coordinator::net::proxies::parse_proxy)]
    pub(crate) trusted_proxy: Vec<ipnet::IpNet>,
    /// Also be a BOINC project at URL/boinc/: volunteers attach the stock BOINC client with
    /// `boinccmd --project_attach URL/boinc/ KEY`, KEY an enrolment token (`token mint`).
    #[arg(long)]
    pub(crate) boinc: bool,
    /// The app BOINC clients download and run (default: the c960-worker beside this program).
    #[arg(long, requires = "boinc")]
    pub(crate) boinc_app: Option<PathBuf>,
    /// The project's code-signing key (created at the first start, mode 0600; keep it: clients
    /// trust the first key they see). Default: boinc-code-sign.key beside the SQLite database.
    #[arg(long, requires = "boinc")]
    pub(crate) boinc_key: Option<PathBuf>,
    /// The URL BOINC clients reach this coordinator at (`http://host:port`), for the scheduler
    /// and file URLs in replies. Default: the Host header of each request.
    #[arg(long, requires = "boinc")]
    pub(crate) boinc_url: Option<String>,
}

impl ServeArgs {
    /// Checks the options, then serves until Ctrl-C or SIGTERM.
    pub(crate) fn run(self) -> Result<ExitCode> {
        let ServeArgs {
            config: _,
            listen,
            db,
            lease_secs,
            max_strikes,
            retry_after_secs,
            enrol_secret,
            enrol_secret_file,
            open_enrolment,
            enrolment,
            admin_token,
            admin_token_file,
            rate_per_address,
            rate_per_worker,
            export_rate_per_address,
            max_open_leases,
            request_timeout_secs,
            max_connections_per_address,
            max_connections_per_block,
            max_connections,
            header_timeout_secs,
            idle_timeout_secs,
            tls_cert,
            tls_key,
            trusted_proxy,
            check_rate,
            check_rate_trusted,
            check_max_nodes,
            check_max_analysis_depth,
            trust_after,
            untrusted_lease_cap,
            block_lease_cap,
            lease_renewal_secs,
            address_separation,
            shared_address_blocks,
            registration_burst_secs,
            resplit_rate,
            audit_rate,
            audit_sample,
            unanchored_sample,
            idle_reverify_upto,
            idle_reverify_campaign,
            audit_replica_rate,
            challenge_secs,
            trust_check_spacing_secs,
            draw_pool,
            probation_lease_cap,
            probation_block_cap,
            probation_share_percent,
            uci,
            max_nodes_per_sec,
            registrations_per_hour,
            registrations_per_hour_total,
            log_format,
            boinc,
            boinc_app,
            boinc_key,
            boinc_url,
        } = self;
        let heartbeat = c960_common::wire::HEARTBEAT_SECS;
        if lease_renewal_secs != 0 && lease_renewal_secs < 2 * heartbeat {
            bail!(
                "--lease-renewal-secs must be 0 (no renewals) or at least {} (workers renew every {heartbeat} s)",
                2 * heartbeat
            );
        }
        let ppm = |name: &str, r: f64| -> Result<u64> {
            if !(0.0..=1.0).contains(&r) {
                return Err(anyhow!("--{name} must be between 0 and 1, got {r}"));
            }
            Ok((r * 1e6).round() as u64)
        };
        let enrol_secret = match enrol_secret_file {
            Some(path) => Some(secret_from_file(&path, "--enrol-secret-file")?),
            None => enrol_secret,
        };
        let admin_token = match admin_token_file {
            Some(path) => Some(secret_from_file(&path, "--admin-token-file")?),
            None => admin_token,
        };
        let enrolment = match (enrol_secret, open_enrolment) {
            _ if enrolment.is_some() => Enrolment::Tokens,
            (Some(s), _) if s.len() < 16 => {
                return Err(anyhow!("--enrol-secret must be at least 16 characters"));
            }
            (Some(s), _) => Enrolment::secret(&s),
            (None, true) => Enrolment::Open,
            (None, false) => Enrolment::Closed,
        };
        if admin_token.as_ref().is_some_and(|t| t.len() < 16) {
            return Err(anyhow!("--admin-token must be at least 16 characters"));
        }
        let config = Config {
            lease: Duration::from_secs(lease_secs.max(1)),
            max_strikes,
            retry_after_secs,
            enrolment,
            admin_token_hash: admin_token
                .as_deref()
                .map(c960_coordinator::integrity::secrets::sha256),
            limits: Limits {
                per_address: Rate::new(rate_per_address, rate_per_address * 4.0),
                per_worker: Rate::new(rate_per_worker, rate_per_worker * 4.0),
                max_open_leases,
                request_timeout: Duration::from_secs(request_timeout_secs.max(1)),
                registrations_per_block: Rate::new(registrations_per_hour / 3600.0, 10.0),
                registrations_total: Rate::new(
                    registrations_per_hour_total / 3600.0,
                    c960_coordinator::net::api::state::REGISTRATIONS_TOTAL_BURST,
                ),
                export_per_address: Rate::new(
                    export_rate_per_address,
                    export_rate_per_address * 4.0,
                ),
                ..Limits::default()
            },
            integrity: Integrity {
                trust_after_checks: trust_after,
                check_rate_untrusted_ppm: ppm("check-rate", check_rate)?,
                check_rate_trusted_ppm: ppm("check-rate-trusted", check_rate_trusted)?,
                untrusted_lease_cap,
                address_separation: if shared_address_blocks {
                    AddressSeparation::Off
                } else {
                    address_separation
                },
                block_lease_cap,
                max_nodes_per_sec,
                registration_burst_ms: registration_burst_secs.saturating_mul(1000),
                resplit_rate_ppm: ppm("resplit-rate", resplit_rate)?,
                lease_renewal_ms: lease_renewal_secs * 1000,
                audit_rate_ppm: ppm("audit-rate", audit_rate)?,
                audit_replica_rate_ppm: ppm("audit-replica-rate", audit_replica_rate)?,
                trust_check_spacing_ms: trust_check_spacing_secs.saturating_mul(1000),
                draw_pool,
                probation_lease_cap,
                probation_block_cap,
                probation_share_pct: probation_share_percent,
                challenge_ms: challenge_secs.saturating_mul(1000),
                audit_sample_ppm: ppm("audit-sample", audit_sample)?,
                idle_reverify_upto,
                idle_reverify_campaign: idle_reverify_campaign.unwrap_or(0),
                unanchored_sample_ppm: ppm("unanchored-sample", unanchored_sample)?,
            },
            checks: CheckBudget {
                max_nodes: check_max_nodes,
                max_analysis_depth: check_max_analysis_depth,
                ..CheckBudget::default()
            },
            uci: uci
                .as_deref()
                .map(c960_compute::uci_engine::UciCommand::parse)
                .transpose()
                .map_err(|e| anyhow!("--uci: {e:#}"))?,
            trust_enrolled: false,
            trusted_proxies: TrustedProxies::new(trusted_proxy),
            boinc: if boinc {
                Some(Arc::new(boinc_project(
                    &db, boinc_app, boinc_key, boinc_url,
                )?))
            } else {
                None
            },
        };
        // Warned once every option is known good, so that a refusal is the only line.
        if config.enrolment == Enrolment::Closed {
            eprintln!(
                "warning: enrolment is closed (no --enrol-secret, no --open-enrolment): only registered workers can work"
            );
        }
        let connections = ConnLimits {
            per_address: max_connections_per_address,
            per_block: max_connections_per_block,
            // Without the flag, sized by `serve` once it has raised the descriptor limit.
            total: max_connections.unwrap_or(0),
            held_refusals: 0,
            header_timeout: Duration::from_secs(header_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(idle_timeout_secs.max(1)),
        };
        serve(
            listen,
            db,
            config,
            connections,
            max_connections,
            tls_cert.zip(tls_key),
            log_format == "json",
        )
        .map(|_| ExitCode::SUCCESS)
    }
}

/// The BOINC project of `serve --boinc`: the app (default: the c960-worker beside this
/// program) signed with the key (default: beside the SQLite database).
fn boinc_project(
    db: &Path,
    app: Option<PathBuf>,
    key: Option<PathBuf>,
    url: Option<String>,
) -> Result<c960_coordinator::net::boinc::Project> {
    let app = match app {
        Some(a) => a,
        None => {
            let exe = std::env::current_exe().context("cannot find this program's path")?;
            let sibling = exe.with_file_name("c960-worker");
            if !sibling.is_file() {
                bail!(
                    "--boinc: no c960-worker beside {} to serve as the BOINC app; pass --boinc-app PATH",
                    exe.display()
                );
            }
            sibling
        }
    };
    let key = match key {
        Some(k) => k,
        None if store::postgres::is_postgres_url(&db.to_string_lossy()) => {
            bail!(
                "--boinc with a PostgreSQL database needs --boinc-key FILE (the code-signing key)"
            )
        }
        None => db
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join("boinc-code-sign.key"),
    };
    if let Some(u) = &url
        && !(u.starts_with("http://") || u.starts_with("https://"))
    {
        bail!("--boinc-url must start with http:// or https://, got {u}");
    }
    c960_coordinator::net::boinc::Project::open(&app, &key, url)
        .map_err(|e| anyhow!("--boinc: {e:#}"))
}

/// A secret kept in a file: its first line, without the line ending; an unreadable or empty
/// file is an error naming the flag.
fn secret_from_file(path: &Path, flag: &str) -> Result<String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("{flag} {}: {e}", path.display()))?;
    let secret = text.lines().next().unwrap_or("").trim_end();
    if secret.is_empty() {
        return Err(anyhow!(
            "{flag} {}: the file holds no secret",
            path.display()
        ));
    }
    Ok(secret.to_string())
}

/// Listens for Ctrl-C and SIGTERM from now on, and returns what resolves on the first of them,
/// saying so: an operator who stops `serve` (or a service manager that does) sees that it heard,
/// and why it may take a moment. Installed before "listening on" is printed, so a signal sent as
/// soon as the address is known is heard rather than killing the process. Stopping abruptly is
/// safe too (every change is one transaction); this only lets in-flight requests finish.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let received = {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        async move {
            tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            }
        }
    };
    #[cfg(not(unix))]
    let received = async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    };
    Ok(async move {
        let signal = received.await;
        tracing::info!(
            signal,
            "stopping: no new connections; the requests in flight finish (every accepted result is already stored)"
        );
    })
}

fn serve(
    listen: String,
    db: PathBuf,
    config: Config,
    mut connections: ConnLimits,
    max_connections: Option<usize>,
    tls: Option<(PathBuf, PathBuf)>,
    json_logs: bool,
) -> Result<()> {
    init_tracing("info", json_logs);
    let descriptors = conn::raise_descriptor_limit();
    if max_connections.is_none() {
        connections.total = conn::total_for_descriptors(descriptors);
    } else if connections.total != 0 && connections.total as u64 + 256 > descriptors {
        tracing::warn!(
            descriptors,
            "--max-connections {} leaves fewer than 256 of the open-file limit for the database and logs",
            connections.total
        );
    }
    connections.held_refusals = conn::held_for_descriptors(descriptors, connections.total);
    tracing::info!(
        total = connections.total,
        per_block = connections.per_block,
        per_address = connections.per_address,
        descriptors,
        "connection caps"
    );
    let tls = match tls {
        Some((cert, key)) => Some(c960_coordinator::net::tls::server_config(&cert, &key)?),
        None => None,
    };
    let store: Arc<dyn Store> = Arc::from(open(&db)?);
    let _checker = checker::spawn(store.clone(), config.checks, config.uci.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let stop = stop_signal()?;
        let listener = conn::bind(&listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        // The first stdout line names the address, so scripts and tests can use port 0.
        let scheme = if tls.is_some() { "https" } else { "http" };
        c960_cli::outln!("listening on {scheme}://{}", listener.local_addr()?)?;
        let enrolment = match &config.enrolment {
            Enrolment::Open => "open",
            Enrolment::Secret(_) => "by secret",
            Enrolment::Tokens => "by token",
            Enrolment::Closed => "closed",
        };
        tracing::info!(db = %store::shown(&db), enrolment, "serving");
        if let Some(p) = &config.boinc {
            let base = p.base(Some(&listener.local_addr()?.to_string()));
            tracing::info!(
                app = %p.app.path.display(),
                app_version = p.app.version_num,
                "BOINC project at {base}/boinc/: boinccmd --project_attach {base}/boinc/ TOKEN"
            );
        }
        if !config.trusted_proxies.is_empty() {
            tracing::info!(proxies = ?config.trusted_proxies, "X-Forwarded-For believed from these peers");
        }
        let listener =
            GatedListener::behind(listener, connections, config.trusted_proxies.clone());
        let app = api::app(AppState::new(store, config));
        match tls {
            Some(tls) => {
                let listener = c960_coordinator::net::tls::TlsListener::new(listener, tls)?;
                conn::serve(listener, app, connections, stop).await?
            }
            None => conn::serve(listener, app, connections, stop).await?,
        }
        tracing::info!(db = %store::shown(&db), "stopped: serve again with this --db to carry on");
        Ok(())
    })
}
