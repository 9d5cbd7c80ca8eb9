//! The first hour of an operator and a volunteer, with default flags and real processes: `serve`
//! and workers on one machine complete quorum-2 campaigns, a worker killed with SIGKILL gives its
//! work back within minutes (lease heartbeats; also when the coordinator is killed and restarted
//! meanwhile), and every wait names its cause and remedy — the same words in the worker's
//! answer, the recorded stall, `/api/v1/status` and `campaign show`.

use c960_coordinator::model::ReplicaState;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use c960_common::wait::WaitCause;
use c960_common::wire::{AnalysisEngine, Capabilities, FetchBatchResponse, WorkerAuth};
use c960_coordinator::clock::now_ms;
use c960_coordinator::integrity::trust::{AddressSeparation, Integrity};
use c960_coordinator::net::api::Config;
use c960_coordinator::store::Store;
use c960_tests::{
    ServeProcess, TestServer, bins, honest_result, quick_config, reference, signal, worker_id,
};
use c960_worker::client::Client;

pub(super) const SECRET: &str = "first-hour-secret";

/// `c960-worker work --server URL` with default flags, the enrolment secret from the
/// environment as the README says, its state under `home`, its output in `log`.
pub(super) fn work(url: &str, home: &Path, log: &Path) -> Worker {
    work_with(url, home, log, &[])
}

/// [`work`] with these flags besides.
pub(super) fn work_with(url: &str, home: &Path, log: &Path, flags: &[&str]) -> Worker {
    let out = std::fs::File::create(log).unwrap();
    Worker(
        Command::new(&bins().1)
            .args(["work", "--server", url])
            .args(flags)
            .env("HOME", home)
            .env_remove("XDG_STATE_HOME")
            .env("C960_ENROL_SECRET", SECRET)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap(),
    )
}

/// A worker process, killed when dropped (a failing test leaves none behind).
pub(super) struct Worker(Child);

impl std::ops::Deref for Worker {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Worker {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `c960-coordinator ARGS…`, which must succeed; its stdout.
pub(super) fn coordinator(args: &[&str], db: &Path) -> String {
    c960_tests::coordinator_cli(args, db)
}

/// Two default workers (`work`) of `url`, each with its own home under `dir`, logging to
/// `dir/w{0,1}{tag}.log`.
pub(super) fn two_workers(url: &str, dir: &Path, tag: &str) -> Vec<Worker> {
    (0..2)
        .map(|i| {
            let home = dir.join(format!("home{i}"));
            std::fs::create_dir_all(&home).unwrap();
            work(url, &home, &dir.join(format!("w{i}{tag}.log")))
        })
        .collect()
}

/// `/api/v1/status`, which must answer 200.
pub(super) async fn status(url: &str) -> serde_json::Value {
    c960_worker::client::install_crypto_provider();
    let resp = reqwest::get(format!("{url}/api/v1/status")).await.unwrap();
    assert_eq!(resp.status(), 200, "/api/v1/status");
    serde_json::from_str(&resp.text().await.unwrap()).unwrap()
}

/// Polls `/api/v1/status` until campaign 1 is complete; panics after `limit`.
pub(super) async fn wait_complete(url: &str, limit: Duration) -> Duration {
    let began = Instant::now();
    loop {
        let status = status(url).await;
        let c = &status["campaigns"][0];
        if c["valid"].as_u64().is_some() && c["valid"] == c["total"] {
            return began.elapsed();
        }
        assert!(began.elapsed() < limit, "not complete after {limit:?}: {c}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The exported table of campaign 1 against the reference perft values at `depth`.
pub(super) fn assert_export_is_reference(db: &Path, depth: usize, starts: usize) {
    let csv = coordinator(&["export", "--campaign", "1", "--format", "csv"], db);
    let table = c960_tests::parse_table(&csv);
    assert_eq!(table.len(), starts, "{csv}");
    for (sp, (_, nodes, status)) in &table {
        assert_eq!(status, "valid", "{sp}");
        assert_eq!(*nodes, Some(reference()[sp][depth - 1]), "{sp}");
    }
}

/// The status's tally of campaign 1 (read in the background, so it may lag a few seconds) comes
/// to its `valid` values, each resting on at least `quorum` agreeing workers, and its page says
/// so.
async fn assert_tally(url: &str, valid: u64, quorum: u64) {
    let began = Instant::now();
    loop {
        let status = status(url).await;
        let t = &status["tallies"][0];
        let by: Vec<(u64, u64)> =
            serde_json::from_value(t["values_by_agreeing"].clone()).unwrap_or_default();
        if t["campaign"] == 1 && by.iter().map(|(_, v)| v).sum::<u64>() == valid {
            assert!(by.iter().all(|(n, _)| *n >= quorum), "{t}");
            assert!(t["coordinator_node_share"].as_f64().is_some(), "{t}");
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(30), "no tally: {t}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let page = reqwest::get(format!("{url}/campaigns/1"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Valid values by the workers that agree on each: 20 on 2 workers"),
        "{page}"
    );
}

fn stop(mut children: Vec<Worker>) {
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The README's operator quick start on one machine: `serve` with default flags (an enrolment
/// secret), a campaign at quorum 2, two workers in two terminals. Every worker is 127.0.0.1: the
/// loopback block does not separate by default, so the second replicas go to the second worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_two_default_workers_on_one_machine_complete_a_quorum_2_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    let server = ServeProcess::start(&db, &["--enrol-secret", SECRET], Stdio::null());
    coordinator(
        &[
            "campaign",
            "add",
            "--depth",
            "4",
            "--quorum",
            "2",
            "--positions",
            "0-19",
        ],
        &db,
    );
    let workers = two_workers(&server.url, dir.path(), "");
    let took = wait_complete(&server.url, Duration::from_secs(180)).await;
    // Stopped as a volunteer stops them: each prints its totals, the coordinator's count of its
    // validated results among them.
    for mut w in workers {
        signal(&w, "TERM");
        assert!(w.wait().unwrap().success());
    }
    for i in 0..2 {
        let log = std::fs::read_to_string(dir.path().join(format!("w{i}.log"))).unwrap();
        let totals = log
            .lines()
            .rev()
            .find(|l| l.contains("on the coordinator: returned"))
            .unwrap_or_else(|| panic!("{log}"));
        assert!(
            totals.contains("waiting for more replicas on 0"),
            "{totals}"
        );
        assert!(!log.contains("WARN"), "{log}");
    }
    eprintln!("quorum-2 campaign of 20 starts complete in {took:.1?}");
    assert_tally(&server.url, 20, 2).await;
    assert_export_is_reference(&db, 4, 20);
    let list = coordinator(&["campaign", "list"], &db);
    assert!(list.contains("\tcomplete\t"), "{list}");
}

/// A worker killed with SIGKILL while it holds leases of a depth-6 campaign of 30 starts stops
/// renewing them; with the default renewal (90 s) they return to the queue and a third worker
/// finishes the campaign, though the lease's whole life is an hour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_with_sigkill_gives_its_leases_back_within_minutes() {
    let took = a_worker_killed_with_sigkill(CoordinatorToo::No).await;
    eprintln!("30/30 valid {took:.1?} after the SIGKILL");
}

/// The same with the coordinator killed with SIGKILL too, right after the worker, and restarted
/// on its address and database: the surviving worker reconnects by itself (its backoff), the
/// killed worker's leases still expire at their renewal deadline, which the restart kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_and_the_coordinator_killed_with_sigkill_still_give_the_leases_back() {
    let took = a_worker_killed_with_sigkill(CoordinatorToo::KilledAndRestarted).await;
    eprintln!("30/30 valid {took:.1?} after the SIGKILLs of a worker and the coordinator");
}

/// Whether [`a_worker_killed_with_sigkill`] also kills and restarts `serve`.
#[derive(Clone, Copy, PartialEq)]
enum CoordinatorToo {
    No,
    KilledAndRestarted,
}

/// Two default workers on a depth-6 campaign of 30 starts at quorum 2; one is killed with SIGKILL
/// while it holds leases (and `serve` too, restarted on its address, when asked); a third worker
/// is started.
/// Asserts the export is the reference, no lease is left open and some expired; returns the time
/// from the kill to completion.
async fn a_worker_killed_with_sigkill(coordinator_too: CoordinatorToo) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    let serve_log = |i: usize| {
        Stdio::from(std::fs::File::create(dir.path().join(format!("serve{i}.log"))).unwrap())
    };
    let mut server = ServeProcess::start(&db, &["--enrol-secret", SECRET], serve_log(0));
    coordinator(
        &[
            "campaign",
            "add",
            "--depth",
            "6",
            "--quorum",
            "2",
            "--positions",
            "0-29",
        ],
        &db,
    );
    let home = |i: usize| {
        let h = dir.path().join(format!("home{i}"));
        std::fs::create_dir_all(&h).unwrap();
        h
    };
    let log = |i: usize| dir.path().join(format!("w{i}.log"));
    let mut killed = work(&server.url, &home(0), &log(0));
    let steady = work(&server.url, &home(1), &log(1));
    kill_holding_leases(&mut killed, &db, &home(0), &log(0)).await;
    let killed_at = Instant::now();
    let restarted = coordinator_too == CoordinatorToo::KilledAndRestarted;
    if restarted {
        let listen = server.url.strip_prefix("http://").unwrap().to_string();
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        // Down until the surviving worker has met the closed port, so that it has to come back
        // by itself (its backoff) rather than never noticing.
        wait_for_line(&log(1), RETRYING, Duration::from_secs(120)).await;
        server = ServeProcess::start_on(&db, &listen, &["--enrol-secret", SECRET], serve_log(1));
    }
    let third = work(&server.url, &home(2), &log(2));
    wait_complete(&server.url, Duration::from_secs(300)).await;
    let took = killed_at.elapsed();
    stop(vec![steady, third]);
    drop(server);
    assert_export_is_reference(&db, 6, 30);
    // The killed worker's leases expired (at the renewal deadline, not the hour): no lease is
    // left open, and some replicas expired.
    let store = c960_coordinator::store::open(&db).unwrap();
    let (_, rows) = store.table(1).unwrap();
    let states: Vec<ReplicaState> = rows
        .iter()
        .flat_map(|r| store.results(r.workunit_id).unwrap())
        .map(|r| r.state)
        .collect();
    assert!(!states.contains(&ReplicaState::InProgress), "{states:?}");
    assert!(states.contains(&ReplicaState::Expired), "{states:?}");
    if restarted {
        let steady = std::fs::read_to_string(log(1)).unwrap();
        let after = &steady[steady.find(RETRYING).unwrap()..];
        assert!(after.contains(" accepted: "), "{steady}");
    }
    took
}

/// Kills `worker` (its state under `home`, its output in `log`) with SIGKILL at a moment it holds
/// leases in the store at `db`. The whole campaign takes seconds on a fast machine, so a kill
/// after a fixed delay may find nothing leased: the worker is frozen (SIGSTOP, so it cannot
/// return what it holds), its open leases are counted, and it is killed if it holds one, else
/// let go (SIGCONT) and tried again.
async fn kill_holding_leases(worker: &mut Worker, db: &Path, home: &Path, log: &Path) {
    wait_for_line(log, " as worker ", Duration::from_secs(60)).await;
    let id = worker_id(&home.join(".local/state/c960/worker.json"));
    let store = c960_coordinator::store::open(db).unwrap();
    let began = Instant::now();
    loop {
        signal(worker, "STOP");
        if store.open_leases(id, now_ms()).unwrap() > 0 {
            break;
        }
        signal(worker, "CONT");
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "worker {id} held no lease in 60 s: {}",
            std::fs::read_to_string(log).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
}

/// What a worker logs when the coordinator cannot be reached and it will try again.
const RETRYING: &str = "; retrying";

/// Polls the file at `path` until it contains `text`; panics after `limit`.
async fn wait_for_line(path: &Path, text: &str, limit: Duration) {
    let began = Instant::now();
    loop {
        let now = std::fs::read_to_string(path).unwrap_or_default();
        if now.contains(text) {
            return;
        }
        assert!(
            began.elapsed() < limit,
            "no {text:?} after {limit:?}: {now}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client of the test server that registers as `name`.
async fn client(server: &TestServer, name: &str) -> (Client, WorkerAuth) {
    let c = Client::new(&server.url).unwrap();
    let auth = c.register(name, 1, 0).await.unwrap();
    (c, auth)
}

/// Fetches as much as it may and answers every lease honestly; then asks again.
async fn compute_all(c: &Client, auth: &WorkerAuth) {
    let caps = Capabilities::builtin();
    while let FetchBatchResponse::Assigned(batch) = c.fetch_batch(auth, &caps, 64).await.unwrap() {
        c.submit_batch(auth, batch.iter().map(honest_result).collect())
            .await
            .unwrap();
    }
}

/// Asks once and returns why there is no work.
async fn waits(c: &Client, auth: &WorkerAuth, caps: &Capabilities) -> Option<WaitCause> {
    match c.fetch_batch(auth, caps, 8).await.unwrap() {
        FetchBatchResponse::NoWork { waiting, .. } => waiting.map(|w| w.cause),
        FetchBatchResponse::Assigned(a) => panic!("got work: {a:?}"),
    }
}

/// The stall recorded on campaign `id`, in the status JSON and in `campaign show`; both name
/// the cause's remedy.
async fn assert_stall_everywhere(server: &TestServer, id: u64, cause: WaitCause) {
    let p = c960_tests::progress_of(&*server.store, id);
    let stall = p
        .campaign
        .stall
        .unwrap_or_else(|| panic!("{cause:?}: no stall recorded: {p:?}"));
    assert_eq!(stall.cause, cause);
    let words = stall.waiting(id).describe();
    let status = server.status().await;
    let listed = status["stalled"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["campaign"] == id)
        .unwrap_or_else(|| panic!("{cause:?}: not in /api/v1/status: {status}"));
    assert_eq!(
        (&listed["cause"], &listed["reason"]),
        (&serde_json::json!(cause.name()), &serde_json::json!(words))
    );
    let show = coordinator(
        &["campaign", "show", &id.to_string()],
        &server.dir.path().join("c960.db"),
    );
    assert!(show.contains("state        stalled"), "{show}");
    assert!(show.contains(&words), "{cause:?}: {show}");
    let remedy_head = cause.remedy().split('`').next().unwrap();
    assert!(show.contains(remedy_head), "{show}");
    // The campaign page (served whole, it needs no script) shows the state and the same words.
    let page = reqwest::get(format!("{}/campaigns/{id}", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(">stalled<"), "{cause:?}: no stalled badge");
    let escaped = words
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(
        page.contains(&escaped),
        "{cause:?}: {words} not on the page"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_alone_waits_for_a_second_worker_and_is_told_so() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-3");
    let (w, a) = client(&server, "alone").await;
    compute_all(&w, &a).await;
    assert_eq!(
        waits(&w, &a, &Capabilities::builtin()).await,
        Some(WaitCause::AlreadyComputed)
    );
    assert_stall_everywhere(&server, c.id, WaitCause::AlreadyComputed).await;
    // A second worker ends the stall.
    let (w2, a2) = client(&server, "second").await;
    compute_all(&w2, &a2).await;
    server.wait_finished(c.id, Duration::from_secs(30)).await;
    let _ = waits(&w, &a, &Capabilities::builtin()).await;
    let p = server.store.progress().unwrap().remove(0);
    assert_eq!((p.state().name(), p.campaign.stall), ("complete", None));
}

/// At the end of a campaign the last replicas wait for the worker that did not compute their
/// twins. While it computes, the other worker is told that nothing waits on a rule, not to start
/// another worker (the README's quick start told one so a second before the other took them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_not_told_to_start_another_while_the_other_computes_the_rest() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-3");
    let (w1, a1) = client(&server, "first").await;
    let (w2, a2) = client(&server, "second").await;
    compute_all(&w1, &a1).await;
    let caps = Capabilities::builtin();
    let FetchBatchResponse::Assigned(held) = w2.fetch_batch(&a2, &caps, 1).await.unwrap() else {
        panic!("no work for the second worker");
    };
    assert_eq!(waits(&w1, &a1, &caps).await, None);
    w2.submit_batch(&a2, held.iter().map(honest_result).collect())
        .await
        .unwrap();
    compute_all(&w2, &a2).await;
    server.wait_finished(c.id, Duration::from_secs(30)).await;
    let p = server.store.progress().unwrap().remove(0);
    assert_eq!((p.state().name(), p.campaign.stall), ("complete", None));
}

/// Two workers `one` and `two` (made by `enrol`) on a quorum-2 campaign: `one` computes every
/// first replica; a party rule keeps `two` from the second ones, and `cause` names it everywhere.
async fn one_party_waits(server: &TestServer, enrol: impl Fn() -> Client, cause: WaitCause) {
    let c = server.campaign(2, "0-3");
    let (w1, w2) = (enrol(), enrol());
    let a1 = w1.register("one", 1, 0).await.unwrap();
    let a2 = w2.register("two", 1, 0).await.unwrap();
    compute_all(&w1, &a1).await;
    let builtin = Capabilities::builtin();
    assert_eq!(waits(&w2, &a2, &builtin).await, Some(cause));
    assert_eq!(
        waits(&w1, &a1, &builtin).await,
        Some(WaitCause::AlreadyComputed)
    );
    assert_stall_everywhere(server, c.id, cause).await;
}

/// The quick configuration with these integrity settings (no untrusted lease cap).
fn with_integrity(integrity: Integrity) -> Config {
    Config {
        integrity: Integrity {
            untrusted_lease_cap: 0,
            ..integrity
        },
        ..quick_config()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_of_one_separated_block_are_told_the_flag() {
    let server = TestServer::start(with_integrity(Integrity {
        address_separation: AddressSeparation::Everywhere,
        ..Integrity::default()
    }))
    .await;
    let plain = || Client::new(&server.url).unwrap();
    one_party_waits(&server, plain, WaitCause::AddressBlock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_burst_is_named() {
    let server = TestServer::start(with_integrity(Integrity {
        address_separation: AddressSeparation::Off,
        registration_burst_ms: 600_000,
        ..Integrity::default()
    }))
    .await;
    let plain = || Client::new(&server.url).unwrap();
    one_party_waits(&server, plain, WaitCause::RegistrationBurst).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uci_campaign_without_an_engine_is_named() {
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(4, "0-1", AnalysisEngine::Uci);
    let (w, a) = client(&server, "no-engine").await;
    assert_eq!(
        waits(&w, &a, &Capabilities::builtin()).await,
        Some(WaitCause::EngineMissing)
    );
    assert_stall_everywhere(&server, c.id, WaitCause::EngineMissing).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_campaign_is_named_to_the_worker_but_is_no_stall() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-3");
    server
        .store
        .update_campaign(
            c.id,
            &c960_coordinator::model::CampaignChange::Status(
                c960_coordinator::model::CampaignAction::Pause,
            ),
        )
        .unwrap();
    let (w, a) = client(&server, "w").await;
    assert_eq!(
        waits(&w, &a, &Capabilities::builtin()).await,
        Some(WaitCause::Paused)
    );
    let p = server.store.progress().unwrap().remove(0);
    assert_eq!((p.state().name(), p.campaign.stall), ("paused", None));
}

/// Heartbeats renew a lease up to its whole life, never past it, and only the holder's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_renew_only_the_holders_open_leases() {
    let server = TestServer::start(quick_config()).await;
    server.campaign(2, "0-1");
    let (w, a) = client(&server, "holder").await;
    let (other, b) = client(&server, "other").await;
    let FetchBatchResponse::Assigned(batch) = w
        .fetch_batch(&a, &Capabilities::builtin(), 2)
        .await
        .unwrap()
    else {
        panic!("no work")
    };
    let ids: Vec<u64> = batch.iter().map(|l| l.lease_id).collect();
    let before = server.store.lease(ids[0]).unwrap().unwrap().deadline_ms;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let renewed = w.heartbeat(&a, ids.clone()).await.unwrap().renewed;
    assert_eq!(renewed, ids);
    let after = server.store.lease(ids[0]).unwrap().unwrap().deadline_ms;
    assert!(after > before, "{before} → {after}");
    // Another worker cannot renew them; an unknown id is just not renewed.
    assert!(
        other
            .heartbeat(&b, ids.clone())
            .await
            .unwrap()
            .renewed
            .is_empty()
    );
    assert!(
        w.heartbeat(&a, vec![999_999])
            .await
            .unwrap()
            .renewed
            .is_empty()
    );
    // An answered lease is no longer renewed.
    w.submit_batch(&a, vec![honest_result(&batch[0])])
        .await
        .unwrap();
    assert_eq!(
        w.heartbeat(&a, ids.clone()).await.unwrap().renewed,
        vec![ids[1]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_of_one_enrolment_token_are_told_to_use_another() {
    use c960_coordinator::integrity::secrets;
    use c960_coordinator::net::api::auth::Enrolment;
    let server = TestServer::start(Config {
        enrolment: Enrolment::Tokens,
        ..quick_config()
    })
    .await;
    let secret = secrets::new_secret();
    let minted = server
        .store
        .mint_enrolment_token("one volunteer", 2, &secrets::sha256(&secret), 0)
        .unwrap();
    let token = secrets::format_token(minted.id, &secret);
    let enrolled = || {
        Client::new(&server.url)
            .unwrap()
            .with_enrol_secret(Some(token.clone()))
    };
    one_party_waits(&server, enrolled, WaitCause::EnrolmentToken).await;
}
