//! The coordinator's command line as a real process: `worker list` and `worker show` over a
//! campaign run by real workers, and every command but `serve` and `run` refusing a `--db`
//! that does not exist (one line on stderr, non-zero exit, no file created), and every printing
//! command ending quietly when its reader goes away (`… | head`).

use c960_common::error_code::ErrorCode;
use c960_coordinator::model::ResultOutcome;
use std::path::Path;
use std::process::{Command, Output};

use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, quick_config};

fn coordinator(args: &[&str], db: &Path) -> Output {
    Command::new(&bins().0)
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A fresh SQLite database (in the returned directory) with one perft campaign, depth 2 over
/// starts 0-3, quorum 2.
fn database_with_a_campaign() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    c960_coordinator::store::SqliteStore,
    c960_coordinator::model::Campaign,
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let store = c960_coordinator::store::SqliteStore::open(&db).unwrap();
    let spec = c960_coordinator::work::campaign::NewCampaign::new(
        2,
        2,
        None,
        c960_coordinator::work::campaign::parse_positions("0-3").unwrap(),
    )
    .unwrap();
    let campaign = store.create_campaign(&spec, 0).unwrap();
    (dir, db, store, campaign)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_list_and_show_print_the_stores_credit() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-4");
    server.finish_with_honest_workers(c.id, 2).await;
    let db = server.dir.path().join("c960.db");
    let store = &server.store;

    let list = stdout(&coordinator(&["worker", "list"], &db));
    let mut lines = list.lines();
    assert_eq!(
        lines.next().unwrap(),
        "id\tname\tstate\tvalid_results\tcredit_nodes\tlost_votes\trefused\tlast_seen\tbuild"
    );
    // The workers name their build in their User-Agent; the coordinator keeps and shows it.
    let build = c960_cli::build_info::worker_build().label();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 2);
    let mut total_results = 0;
    for r in &rows {
        let id: u64 = r[0].parse().unwrap();
        let w = store.worker(id).unwrap().unwrap();
        assert_eq!(r[1], w.name);
        assert_eq!(r[2], "active");
        assert_eq!(r[3], w.valid.to_string());
        assert_eq!(r[8], build);
        assert_eq!(w.build.as_deref(), Some(build.as_str()));
        // Credit nodes recomputed from the raw results.
        let (_, table) = store.table(c.id).unwrap();
        let nodes: u64 = table
            .iter()
            .flat_map(|t| store.results(t.workunit_id).unwrap())
            .filter(|res| res.worker_id == id && res.outcome == ResultOutcome::Valid)
            .map(|res| res.nodes.unwrap())
            .sum();
        assert_eq!(r[4], nodes.to_string());
        total_results += w.valid;
    }
    // Quorum 2 over 5 workunits: 10 agreeing results in all.
    assert_eq!(total_results, 10);

    let id = rows[0][0];
    let show = stdout(&coordinator(&["worker", "show", id], &db));
    assert!(
        show.starts_with(&format!("worker {id} ({})", rows[0][1])),
        "{show}"
    );
    assert!(show.contains("state          active"), "{show}");
    assert!(
        show.contains(&format!("build          {build}\n")),
        "{show}"
    );
    let results = show
        .lines()
        .skip_while(|l| !l.starts_with("result\t"))
        .count()
        - 1;
    assert_eq!(results as u64, rows[0][3].parse::<u64>().unwrap());

    let missing = coordinator(&["worker", "show", "999"], &db);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.trim(), "error: unknown worker 999");
}

#[test]
fn commands_refuse_a_database_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("c960.sqlit");
    for args in [
        &["campaign", "list"][..],
        &["campaign", "add", "--depth", "2", "--positions", "518"],
        &["worker", "list"],
        &["worker", "show", "1"],
        &["worker", "ban", "1"],
        &["worker", "unban", "1"],
        &["export", "--campaign", "1"],
    ] {
        let out = coordinator(args, &typo);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("no database at"), "{args:?}: {err}");
        assert!(!typo.exists(), "{args:?} created the database");
    }
}

/// `serve` on a database it cannot create says why in one line, the driver's reason once (not
/// again as the error's source and the source's source).
#[test]
fn serve_says_once_why_it_cannot_open_its_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("no-such-dir").join("c960.sqlite");
    let out = Command::new(&bins().0)
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .env("C960_ENROL_SECRET", "a-long-lab-secret")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("error: cannot open database "), "{err}");
    assert_eq!(
        last.matches("unable to open database file").count(),
        1,
        "{err}"
    );
}

/// `run --out` into a directory that does not exist is refused before any work is done (one
/// line, non-zero exit, no database made), not after the campaign; an existing file is left as
/// it is until the table replaces it.
#[test]
fn run_refuses_an_out_it_cannot_write_before_computing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let missing = dir.path().join("no-such-dir").join("perft.csv");
    let out = coordinator(
        &[
            "run",
            "--depth",
            "3",
            "--positions",
            "0-1",
            "--out",
            missing.to_str().unwrap(),
        ],
        &db,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: cannot write "), "{err}");
    assert!(!db.exists(), "the run started before refusing its --out");

    let existing = dir.path().join("old.csv");
    std::fs::write(&existing, "an earlier table\n").unwrap();
    let out = coordinator(
        &[
            "run",
            "--depth",
            "1",
            "--positions",
            "518",
            "--out",
            existing.to_str().unwrap(),
        ],
        &db,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(&existing)
            .unwrap()
            .contains(",20,valid,")
    );
}

/// `run` plans its campaign as `campaign add` does, with the same size bound: a campaign of
/// day-long workunits is refused in one line with its estimate and the way past it (`--force`),
/// before any database is made.
#[test]
fn run_refuses_a_campaign_past_the_size_bound_as_campaign_add_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let args = ["--depth", "11", "--split-ply", "0", "--positions", "0"];
    let out = coordinator(&[&["run"][..], &args].concat(), &db);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("more than a day each") && err.contains("--force"),
        "{err}"
    );
    assert!(!db.exists(), "the run started before refusing its campaign");
    // campaign add says the same of the same campaign.
    let add = coordinator(&[&["campaign", "add"][..], &args].concat(), &db);
    let add_err = String::from_utf8_lossy(&add.stderr);
    assert!(!add.status.success());
    assert_eq!(add_err.lines().last(), err.lines().last(), "{add_err}");
}

/// `c960-coordinator campaign show … | head -1` and the like: a reader that exits before the
/// output is written is no failure (success, nothing on stderr), never a panic.
#[test]
fn printing_commands_end_quietly_when_their_reader_has_gone() {
    let (_dir, db, _, _) = database_with_a_campaign();
    let db = db.to_str().unwrap();
    let (coordinator_bin, worker_bin) = bins();
    let cases: [(&Path, &[&str]); 6] = [
        (coordinator_bin, &["campaign", "list", "--db", db]),
        (coordinator_bin, &["campaign", "show", "1", "--db", db]),
        (coordinator_bin, &["export", "--campaign", "1", "--db", db]),
        (coordinator_bin, &["worker", "list", "--db", db]),
        (coordinator_bin, &["token", "list", "--db", db]),
        (
            worker_bin,
            &["perft", "--sp", "518", "--depth", "3", "--divide"],
        ),
    ];
    for (bin, args) in cases {
        // The read end is closed before the command starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(bin)
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serve_logs_json_lines_without_colour_for_every_lifecycle_event() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    use c960_common::wire::{Capabilities, FetchRequest, FetchResponse, PROTOCOL_VERSION};
    let (_dir, db, store, campaign) = database_with_a_campaign();
    let server = c960_tests::ServeProcess::start(
        &db,
        &[
            "--open-enrolment",
            "--max-strikes",
            "1",
            "--log-format",
            "json",
            // Every worker here is 127.0.0.1: one address block.
            "--shared-address-blocks",
            "--registrations-per-hour",
            "0",
        ],
        Stdio::piped(),
    );
    let url = server.url.clone();
    let client = c960_worker::client::Client::new(&url).unwrap();

    // A liar: its one refused result quarantines it (--max-strikes 1).
    let liar = client.register("liar", 1, 0).await.unwrap();
    let FetchResponse::Assigned(a) = client.fetch(&liar, &Capabilities::builtin()).await.unwrap()
    else {
        panic!("no work")
    };
    let mut lie = c960_tests::honest_submission(&a);
    lie.digest = [1; 32];
    let err = client.submit(&liar, &lie).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DigestMismatch));

    // A refusal before any handler work: a wrong token.
    let (status, code, _) = c960_tests::raw_post(
        &url,
        "/api/v1/fetch",
        Some(&format!("{}.wrong", liar.worker_id)),
        "application/octet-stream",
        c960_common::codec::encode(&FetchRequest {
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities::builtin(),
        })
        .unwrap(),
    )
    .await;
    assert_eq!(status, 401, "{code}");

    // Honest workers finish the campaign.
    let (stop, rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for i in 0..2 {
        let mut cfg = c960_worker::runner::RunnerConfig::new(&url);
        cfg.name = format!("honest-{i}");
        cfg.progress = false;
        cfg.backoff_cap = Duration::from_secs(1);
        tasks.push(tokio::spawn(c960_worker::runner::run(cfg, rx.clone())));
    }
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let p = store.progress().unwrap().pop().unwrap();
        if p.valid == p.total {
            break;
        }
        assert!(Instant::now() < until, "campaign not finished: {p:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send(true).unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    // The sampler notices the completion within its 5 s period.
    tokio::time::sleep(Duration::from_secs(6)).await;
    // Stopped as a service manager stops it: it says so, and exits 0 (not "failed").
    let (exit, err) = server.stop_with("TERM");
    assert!(exit.success(), "serve after SIGTERM: {exit:?}\n{err}");
    assert!(
        !err.contains('\u{1b}'),
        "ANSI escape in a log that is no terminal: {err}"
    );
    let events: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect();
    let find = |msg: &str| {
        events
            .iter()
            .find(|e| e["fields"]["message"] == msg)
            .unwrap_or_else(|| panic!("no {msg:?} event in {err}"))
            .clone()
    };
    assert_eq!(find("serving")["level"], "INFO");
    let reg = find("worker registered");
    assert_eq!(reg["fields"]["worker"], liar.worker_id);
    assert_eq!(reg["fields"]["name"], "liar");
    let refused = find("result refused");
    assert_eq!(refused["fields"]["worker"], liar.worker_id);
    assert_eq!(refused["fields"]["code"], "digest_mismatch");
    let quarantined =
        find("worker quarantined: its leases are released and what it validated is re-verified");
    assert_eq!(quarantined["fields"]["worker"], liar.worker_id);
    let http = events
        .iter()
        .find(|e| e["fields"]["message"] == "refused" && e["fields"]["status"] == 401)
        .unwrap_or_else(|| panic!("no 401 refusal in {err}"));
    assert_eq!(http["fields"]["route"], "/api/v1/fetch");
    assert_eq!(http["fields"]["code"], code.as_str());
    assert_eq!(http["fields"]["worker"], liar.worker_id);
    let done = find("campaign complete");
    assert_eq!(done["fields"]["campaign"], campaign.id);
    assert_eq!(done["fields"]["valid"], 4);
    let starting_with = |prefix: &str| {
        events
            .iter()
            .find(|e| {
                e["fields"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(prefix))
            })
            .unwrap_or_else(|| panic!("no {prefix:?} event in {err}"))
            .clone()
    };
    assert_eq!(starting_with("stopping: ")["fields"]["signal"], "SIGTERM");
    let stopped = starting_with("stopped: ");
    assert_eq!(stopped["fields"]["db"], db.display().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_its_secrets_from_files_and_refuses_a_missing_or_empty_one() {
    c960_worker::client::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let token_file = dir.path().join("admin-token");
    let secret_file = dir.path().join("enrol-secret");
    std::fs::write(&token_file, "admin-token-from-a-file-0001\n").unwrap();
    std::fs::write(&secret_file, "enrol-secret-from-a-file-02\n").unwrap();
    let serve = c960_tests::ServeProcess::start(
        &db,
        &[
            "--admin-token-file",
            token_file.to_str().unwrap(),
            "--enrol-secret-file",
            secret_file.to_str().unwrap(),
        ],
        std::process::Stdio::null(),
    );
    let body = br#"{"depth": 1, "positions": "0"}"#.to_vec();
    let path = "/api/v1/admin/campaigns";
    let json = "application/json";
    let (s, _, _) = c960_tests::raw_post(
        &serve.url,
        path,
        Some("admin-token-from-a-file-0001"),
        json,
        body.clone(),
    )
    .await;
    assert_eq!(
        s, 201,
        "the file's first line, without its newline, is the token"
    );
    let (_, code, _) = c960_tests::raw_post(
        &serve.url,
        path,
        Some("admin-token-from-a-file-0002"),
        json,
        body,
    )
    .await;
    assert_eq!(code, "bad_token");
    let worker = c960_worker::client::Client::new(&serve.url).unwrap();
    assert_eq!(
        worker.register("w", 1, 0).await.unwrap_err().code(),
        Some(ErrorCode::EnrolmentSecretRequired)
    );
    let enrolled = worker.with_enrol_secret(Some("enrol-secret-from-a-file-02".into()));
    enrolled.register("w", 1, 0).await.unwrap();
    drop(serve);

    // A missing or empty file, or a file beside the flag it replaces: one line, non-zero exit.
    std::fs::write(&token_file, "\n").unwrap();
    let missing = dir.path().join("nowhere");
    let long_token = "x".repeat(20);
    for args in [
        vec!["--admin-token-file", token_file.to_str().unwrap()],
        vec!["--admin-token-file", missing.to_str().unwrap()],
        vec!["--enrol-secret-file", missing.to_str().unwrap()],
        vec![
            "--admin-token",
            &long_token,
            "--admin-token-file",
            missing.to_str().unwrap(),
        ],
    ] {
        let out = Command::new(&bins().0)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(&db)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("--admin-token") || err.contains("--enrol-secret"),
            "{args:?}: {err}"
        );
    }
}

/// `serve --config FILE`: the file's keys take effect, a flag on the command line overrides its
/// key, and a misspelt key stops serve with one line on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_its_options_from_a_toml_file_and_flags_override_it() {
    c960_worker::client::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let config = dir.path().join("c960.toml");
    // `listen` is overridden by ServeProcess's own --listen 127.0.0.1:0: were the file's value
    // used, serve could not start.
    std::fs::write(
        &config,
        "listen = \"256.0.0.1:1\"\nopen_enrolment = true\nrate_per_address = 0.25\n\
         trusted_proxy = [\"10.0.0.0/8\"]\n",
    )
    .unwrap();
    let path = config.to_str().unwrap();
    let registrations = |url: String| async move {
        let client = c960_worker::client::Client::new(&url).unwrap();
        let mut codes = Vec::new();
        for _ in 0..2 {
            codes.push(match client.register("w", 1, 0).await {
                Ok(_) => "ok".to_string(),
                Err(e) => e.code().map_or("?", ErrorCode::as_str).to_string(),
            });
        }
        codes
    };
    // From the file: open enrolment (else registration is refused) and 0.25 requests/s per
    // address (a burst of 1).
    let serve =
        c960_tests::ServeProcess::start(&db, &["--config", path], std::process::Stdio::null());
    assert_eq!(
        registrations(serve.url.clone()).await,
        ["ok", "rate_limited"]
    );
    drop(serve);
    // The command line's --rate-per-address 0 (no limit) overrides the file's.
    let serve = c960_tests::ServeProcess::start(
        &db,
        &["--config", path, "--rate-per-address", "0"],
        std::process::Stdio::null(),
    );
    assert_eq!(registrations(serve.url.clone()).await, ["ok", "ok"]);
    drop(serve);

    // A misspelt key: one line on stderr naming it, non-zero exit.
    std::fs::write(&config, "db = \"x.db\"\nrate_per_adress = 5\n").unwrap();
    let out = Command::new(&bins().0)
        .args(["serve", "--config", path])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown key `rate_per_adress`"), "{err}");
}
