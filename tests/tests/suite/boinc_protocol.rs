//! BOINC's client protocol (issue 33) spoken by hand, the way boinc-client 7.20 speaks it: the
//! master page, the scheduler RPC, downloads and the upload handler of `serve --boinc`, on a real
//! server, and the Manager's "Add project" wizard under every enrolment mode. The stock client
//! itself attaches in `boinc_client.rs`; here every refusal is tried too.

use std::sync::Arc;
use std::time::Duration;

use c960_common::wire::Assignment;
use c960_coordinator::integrity::secrets;
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::boinc::xml::{self, Element};
use c960_coordinator::net::boinc::{Project, md5_hex};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, honest_submission, quick_config};

/// A server with BOINC on, enrolment by tokens; a fake app file and signer (the real key and
/// the real client are `boinc_client.rs`'s).
async fn server() -> (TestServer, tempfile::TempDir) {
    server_with(Enrolment::Tokens).await
}

/// [`server`] with another enrolment mode.
async fn server_with(enrolment: Enrolment) -> (TestServer, tempfile::TempDir) {
    let mut config = quick_config();
    config.enrolment = enrolment;
    server_of(config).await
}

/// A server with BOINC on and this configuration (a fake app file and signer).
pub(crate) async fn server_of(
    mut config: c960_coordinator::net::api::Config,
) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("c960-worker");
    std::fs::write(&app, b"not really a worker").unwrap();
    let project = Project::new(
        &app,
        "1024\nabcd\n.".into(),
        &|md5| format!("signature-of-{md5}\n."),
        [9; 32],
        None,
    )
    .unwrap();
    config.boinc = Some(Arc::new(project));
    (TestServer::start(config).await, dir)
}

pub(crate) fn mint(s: &TestServer, name: &str) -> String {
    let secret = secrets::new_secret();
    let t = s
        .store
        .mint_enrolment_token(name, 0, &secrets::sha256(&secret), 0)
        .unwrap();
    secrets::format_token(t.id, &secret)
}

/// A scheduler request as the client writes it (the parts c960 reads, and some it ignores).
pub(crate) fn request(
    key: &str,
    hostid: u64,
    cpid: &str,
    instances: u32,
    reported: &[&str],
    held: &[&str],
) -> String {
    let results: String = reported
        .iter()
        .map(|n| format!("<result>\n    <name>{n}</name>\n    <final_cpu_time>0.1</final_cpu_time>\n    <exit_status>0</exit_status>\n    <state>5</state>\n    <stderr_out><![CDATA[<core_client_version>7.20.5</core_client_version>\n]]></stderr_out>\n</result>\n"))
        .collect();
    let others: String = held
        .iter()
        .map(|n| {
            format!("<other_result><name>{n}</name><app_version>0</app_version></other_result>\n")
        })
        .collect();
    format!(
        "<scheduler_request>\n<authenticator>{key}</authenticator>\n<hostid>{hostid}</hostid>\n<rpc_seqno>3</rpc_seqno>\n<core_client_major_version>7</core_client_major_version>\n<core_client_minor_version>20</core_client_minor_version>\n<core_client_release>5</core_client_release>\n<platform_name>x86_64-pc-linux-gnu</platform_name>\n<work_req_seconds>{w}</work_req_seconds>\n<cpu_req_secs>{w}</cpu_req_secs>\n<cpu_req_instances>{instances}</cpu_req_instances>\n<working_global_preferences>\n<global_preferences><run_if_user_active>1</run_if_user_active></global_preferences>\n</working_global_preferences>\n<host_info>\n<domain_name>lab-host</domain_name>\n<host_cpid>{cpid}</host_cpid>\n<p_ncpus>2</p_ncpus>\n</host_info>\n{results}<other_results>\n{others}</other_results>\n</scheduler_request>\n",
        w = if instances > 0 { 3600 } else { 0 }
    )
}

pub(crate) async fn post(url: &str, path: &str, body: impl Into<reqwest::Body>) -> (u16, String) {
    let resp = reqwest::Client::new()
        .post(format!("{url}{path}"))
        // What the client's libcurl sends for a POST of a file.
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// `GET url`'s body.
async fn get(url: impl reqwest::IntoUrl) -> Vec<u8> {
    reqwest::get(url)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec()
}

/// `GET url`'s body as text.
async fn get_text(url: impl reqwest::IntoUrl) -> String {
    String::from_utf8(get(url).await).unwrap()
}

pub(crate) async fn schedule(url: &str, body: String) -> Element {
    let (status, text) = post(url, "/boinc/cgi", body).await;
    assert_eq!(status, 200, "{text}");
    xml::parse(text.as_bytes(), "scheduler_reply").unwrap_or_else(|e| panic!("{e}: {text}"))
}

pub(crate) fn upload_body(name: &str, signature: &str, max: u64, data: &[u8]) -> Vec<u8> {
    let mut b = format!(
        "<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n    <core_client_minor_version>20</core_client_minor_version>\n    <core_client_release>5</core_client_release>\n<file_upload>\n<file_info>\n    <name>{name}</name>\n<xml_signature>\n{signature}</xml_signature>\n    <max_nbytes>{max}</max_nbytes>\n</file_info>\n<nbytes>{}</nbytes>\n<md5_cksum>{}</md5_cksum>\n<offset>0</offset>\n<data>\n",
        data.len(),
        md5_hex(data)
    )
    .into_bytes();
    b.extend_from_slice(data);
    b
}

pub(crate) fn file_info<'a>(reply: &'a Element, name: &str) -> &'a Element {
    reply
        .children_named("file_info")
        .find(|f| f.text_of("name") == name)
        .unwrap_or_else(|| panic!("no file_info {name}"))
}

/// Downloads a task's input, computes it honestly, uploads the output; returns the upload's
/// `<data_server_reply>` status.
pub(crate) async fn compute_and_upload(url: &str, reply: &Element, result: &Element) -> String {
    upload_as(url, reply, result, &honest_submission).await
}

/// Downloads a task's input (checked against what the reply said), uploads the submission
/// `answer` makes of its assignment; returns the upload's `<data_server_reply>` status.
async fn upload_as(
    url: &str,
    reply: &Element,
    result: &Element,
    answer: &dyn Fn(&Assignment) -> c960_common::wire::SubmitRequest,
) -> String {
    let wu = reply
        .children_named("workunit")
        .find(|w| w.text_of("name") == result.text_of("wu_name"))
        .unwrap();
    let input = file_info(reply, wu.child("file_ref").unwrap().text_of("file_name"));
    let bytes = get(input.text_of("url")).await;
    assert_eq!(
        md5_hex(&bytes),
        input.text_of("md5_cksum"),
        "the input is what the reply said"
    );
    assert_eq!(bytes.len().to_string(), input.text_of("nbytes"));
    let a: Assignment = serde_json::from_slice(&bytes).unwrap();
    let out = file_info(
        reply,
        result.child("file_ref").unwrap().text_of("file_name"),
    );
    let data = serde_json::to_vec(&answer(&a)).unwrap();
    let max: u64 = out.number("max_nbytes").unwrap();
    let (status, text) = post(
        url,
        "/boinc/file_upload_handler",
        upload_body(
            out.text_of("name"),
            out.text_of("xml_signature"),
            max,
            &data,
        ),
    )
    .await;
    assert_eq!(status, 200);
    xml::parse(text.as_bytes(), "data_server_reply")
        .unwrap()
        .text_of("status")
        .to_string()
}

/// A host attaches with a token, gets work with everything its results name, computes it,
/// uploads and reports; a native worker on another token completes the quorums with it; the
/// host is one worker (the same after a reattach), marked as BOINC, credited.
#[tokio::test]
async fn a_boinc_host_computes_votes_with_native_workers_and_is_credited() {
    let (s, _dir) = server().await;
    let c = s.campaign(3, "0-3");
    let key = mint(&s, "ann");

    let page = get_text(format!("{}/boinc/", s.url)).await;
    assert!(
        page.contains(&format!("<scheduler>{}/boinc/cgi</scheduler>", s.url)),
        "{page}"
    );

    let reply = schedule(&s.url, request(&key, 0, "cpid-a", 2, &[], &[])).await;
    let hostid: u64 = reply.number("hostid").expect("a new host gets its id");
    assert!(reply.text_of("code_sign_key").starts_with("1024"));
    let results: Vec<&Element> = reply.children_named("result").collect();
    assert_eq!(results.len(), 4, "two tasks per CPU (four workunits wait)");
    let app = reply.child("app_version").unwrap();
    let main = file_info(&reply, app.child("file_ref").unwrap().text_of("file_name"));
    assert!(main.has("executable") && main.text_of("file_signature").starts_with("signature-of-"));
    for r in &results {
        assert_eq!(r.text_of("version_num"), app.text_of("version_num"));
        assert_eq!(compute_and_upload(&s.url, &reply, r).await, "0");
    }
    // The app downloads as signed.
    let bin = get(main.text_of("url")).await;
    assert_eq!(md5_hex(&bin), main.text_of("md5_cksum"));

    let names: Vec<&str> = results.iter().map(|r| r.text_of("name")).collect();
    // The client echoes the key it holds; the reply then sends none (a key sent again would be
    // an unsigned key change to the client).
    let holding = request(&key, hostid, "cpid-a", 0, &names, &[]).replace(
        "<rpc_seqno>",
        "<code_sign_key>\n1024\nabcd\n.\n</code_sign_key>\n<rpc_seqno>",
    );
    let ack = schedule(&s.url, holding).await;
    assert!(!ack.has("code_sign_key"));
    let acked: Vec<&str> = ack
        .children_named("result_ack")
        .map(|a| a.text_of("name"))
        .collect();
    assert_eq!(acked, names);
    assert!(!ack.has("hostid"), "a known host is not given its id again");

    // A native worker with its own token completes the campaign with the BOINC host.
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut cfg = c960_worker::runner::RunnerConfig::new(&s.url);
    cfg.name = "native".into();
    cfg.progress = false;
    cfg.enrol_secret = Some(mint(&s, "bob"));
    cfg.backoff_cap = Duration::from_secs(1);
    let native = tokio::spawn(c960_worker::runner::run(cfg, rx));
    let mut tasks: Vec<String> = Vec::new();
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let p = c960_tests::progress_of(&*s.store, c.id);
        if p.valid == p.total {
            break;
        }
        assert!(std::time::Instant::now() < until, "not finished: {p:?}");
        // The host keeps asking, as its client would.
        let reply = schedule(
            &s.url,
            request(
                &key,
                hostid,
                "cpid-a",
                1,
                &tasks.iter().map(String::as_str).collect::<Vec<_>>(),
                &[],
            ),
        )
        .await;
        tasks.clear();
        for r in reply.children_named("result") {
            assert_eq!(compute_and_upload(&s.url, &reply, r).await, "0");
            tasks.push(r.text_of("name").to_string());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tx.send(true).unwrap();
    native.await.unwrap().unwrap();

    let host = s.store.worker(hostid).unwrap().unwrap();
    assert_eq!(host.build.as_deref(), Some("BOINC 7.20.5"));
    assert_eq!(host.name, "lab-host");
    assert!(host.valid >= 2, "{host:?}");
    let (_, rows) = s.store.table(c.id).unwrap();
    let reference = c960_tests::reference();
    for r in rows {
        assert_eq!(
            r.nodes,
            Some(reference[&r.sp.unwrap()][2]),
            "perft(3) of {:?}",
            r.sp
        );
    }
    // The operator sees the host counted, on the metrics and the dashboard.
    let metrics = get_text(format!("{}/metrics", s.url)).await;
    assert!(metrics.contains("\nc960_boinc_hosts 1\n"), "{metrics}");
    assert!(metrics.contains(&format!("\nc960_boinc_valid_results {}\n", host.valid)));
    let page = get_text(format!("{}/", s.url)).await;
    assert!(page.contains(&format!("1 · {}", host.valid)), "{page}");
    // Credit in BOINC's units, on the next contact; a reattached client (no host id, same
    // CPID) is the same host.
    let again = schedule(&s.url, request(&key, 0, "cpid-a", 0, &[], &[])).await;
    assert_eq!(again.number::<u64>("hostid"), Some(hostid));
    assert!(
        again.number::<f64>("host_total_credit").unwrap() > 0.0,
        "credited"
    );
}

/// Two hosts of one account are one party: never two replicas of one workunit, and the second
/// is told why it waits.
#[tokio::test]
async fn hosts_of_one_account_never_share_a_workunit() {
    let (s, _dir) = server().await;
    s.campaign(3, "7");
    let key = mint(&s, "ann");
    let first = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    assert_eq!(first.children_named("result").count(), 1);
    let second = schedule(&s.url, request(&key, 0, "cpid-b", 1, &[], &[])).await;
    assert_ne!(
        first.number::<u64>("hostid"),
        second.number::<u64>("hostid")
    );
    assert_eq!(second.children_named("result").count(), 0, "one party");
    assert!(second.text_of("message").contains("no work"), "{second:?}");
    // Another account takes the second replica.
    let other = schedule(&s.url, request(&mint(&s, "bob"), 0, "cpid-c", 1, &[], &[])).await;
    assert_eq!(other.children_named("result").count(), 1);
}

/// Whatever arrives, the scheduler and the upload handler answer 200 with a reason inside,
/// never a 5xx; nothing is stored from a refused upload.
#[tokio::test]
async fn refuses_bad_keys_bad_xml_and_forged_or_oversize_uploads() {
    let (s, _dir) = server().await;
    s.campaign(3, "5");
    for (body, says) in [
        ("not xml at all".to_string(), "could not read"),
        (
            "<scheduler_request><hostid>1</hostid></scheduler_request>".into(),
            "account key",
        ),
        (
            request("12.wrongwrongwrong", 0, "x", 1, &[], &[]),
            "refuses this account key",
        ),
        (
            request("no-dot", 0, "x", 1, &[], &[]),
            "not a c960 enrolment token",
        ),
    ] {
        let r = schedule(&s.url, body).await;
        assert!(r.text_of("message").contains(says), "{says}: {r:?}");
        assert!(!r.has("result"));
    }
    let r = schedule(&s.url, request("12.wrongwrongwrong", 0, "x", 1, &[], &[])).await;
    assert_eq!(
        r.text_of("request_delay"),
        "3600",
        "BOINC's delay for a bad key"
    );

    let key = mint(&s, "ann");
    let reply = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    let result = reply.child("result").unwrap();
    let out = file_info(
        &reply,
        result.child("file_ref").unwrap().text_of("file_name"),
    );
    let name = out.text_of("name");
    let upload = |body: Vec<u8>| {
        let url = s.url.clone();
        async move {
            let (status, text) = post(&url, "/boinc/file_upload_handler", body).await;
            (status, text)
        }
    };
    // A forged signature (lease ids are easy to guess), garbage, a wrong answer's shape.
    let (st, text) = upload(upload_body(name, "00ff", 1 << 20, b"{}")).await;
    assert_eq!(st, 200);
    assert!(
        text.contains("<status>-1</status>") && text.contains("not a file this project asked for"),
        "{text}"
    );
    let (_, text) = upload(upload_body(
        name,
        out.text_of("xml_signature"),
        out.number("max_nbytes").unwrap(),
        b"{\"x\":1}",
    ))
    .await;
    assert!(
        text.contains("<status>-1</status>") && text.contains("not a c960 result"),
        "{text}"
    );
    let (_, text) = upload(b"<file_upload>garbage".to_vec()).await;
    assert!(text.contains("<status>-1</status>"), "{text}");
    // Oversize: over the cap the file names, and a body over the route's limit.
    let big = vec![b'x'; 2 << 20];
    let (st, text) = upload(upload_body(
        name,
        out.text_of("xml_signature"),
        out.number("max_nbytes").unwrap(),
        &big,
    ))
    .await;
    assert!(
        st == 413 || text.contains("<status>-1</status>"),
        "{st} {text}"
    );
    assert!(st < 500);
    let lease = s
        .store
        .lease(
            c960_coordinator::net::boinc::names::TaskName::from_output_file(name)
                .unwrap()
                .lease_id,
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        lease.state,
        c960_coordinator::model::ReplicaState::InProgress,
        "nothing stored"
    );
    // Unknown downloads are 404s.
    let st = reqwest::get(format!("{}/boinc/download/c960_wu1_l999999_in", s.url))
        .await
        .unwrap()
        .status();
    assert_eq!(st.as_u16(), 404);
    let st = reqwest::get(format!("{}/boinc/download/..%2Fetc%2Fpasswd", s.url))
        .await
        .unwrap()
        .status();
    assert_eq!(st.as_u16(), 404);
    // A task the client reports as failed frees its replica (recorded as a failure).
    let failed = request(&key, reply.number("hostid").unwrap(), "cpid-a", 0, &[], &[])
        .replace("</host_info>\n", &format!("</host_info>\n<result><name>{}</name><state>3</state><exit_status>1</exit_status><stderr_out>bad input</stderr_out></result>\n", result.text_of("name")));
    let r = schedule(&s.url, failed).await;
    assert_eq!(r.text_of("result_ack"), "");
    assert_eq!(
        r.child("result_ack").unwrap().text_of("name"),
        result.text_of("name")
    );
    let lease = s.store.lease(lease.id).unwrap().unwrap();
    assert_ne!(
        lease.state,
        c960_coordinator::model::ReplicaState::InProgress
    );
}

/// `GET /boinc/PAGE?QUERY` of the Manager's wizard: HTTP 200 always, and the account key or
/// BOINC's error number and message.
async fn wizard(url: &str, page: &str, query: &str) -> Result<String, (i32, String)> {
    let resp = reqwest::get(format!("{url}/boinc/{page}?{query}"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{page}?{query}");
    let text = resp.text().await.unwrap();
    if let Ok(out) = xml::parse(text.as_bytes(), "account_out") {
        return Ok(out.text_of("authenticator").to_string());
    }
    let e = xml::parse(text.as_bytes(), "error").unwrap_or_else(|e| panic!("{e}: {text}"));
    Err((
        e.number("error_num").unwrap(),
        e.text_of("error_msg").to_string(),
    ))
}

/// What the Manager sends for a user name (or e-mail address) and a password.
fn typed(name: &str, password: &str) -> String {
    let name = name.to_lowercase();
    format!(
        "email_addr={name}&passwd_hash={}",
        md5_hex(format!("{password}{name}").as_bytes())
    )
}

async fn project_config(url: &str) -> Element {
    let text = reqwest::get(format!("{url}/boinc/get_project_config.php"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    xml::parse(text.as_bytes(), "project_config").unwrap()
}

/// The Manager's "Add project" wizard with enrolment tokens: the config asks for a user name
/// and disables account creation; the token typed as user name and password is the account,
/// checked by the scheduler's rule without spending it (an unknown, revoked or exhausted token
/// is refused with the reason and the boinccmd way); any other password, BOINC's usual e-mail +
/// key, and account creation are refused; every answer is a 200.
#[tokio::test]
async fn the_managers_wizard_finds_a_token_typed_as_user_name_and_password() {
    let (s, _dir) = server().await;
    s.campaign(3, "0");
    let cfg = project_config(&s.url).await;
    assert!(cfg.has("uses_username"), "{cfg:?}");
    assert!(cfg.has("account_creation_disabled") && cfg.has("client_account_creation_disabled"));

    let secret = secrets::new_secret();
    let t = s
        .store
        .mint_enrolment_token("ann", 1, &secrets::sha256(&secret), 0)
        .unwrap();
    let key = secrets::format_token(t.id, &secret);
    assert_eq!(
        wizard(&s.url, "lookup_account.php", &typed(&key, &key)).await,
        Ok(key.clone())
    );
    for (name, password) in [
        (key.as_str(), "hunter22"),
        ("ann@example.org", key.as_str()),
    ] {
        let (n, msg) = wizard(&s.url, "lookup_account.php", &typed(name, password))
            .await
            .unwrap_err();
        assert_eq!(n, -206, "{name} {password}");
        assert!(msg.contains("both user name and password"), "{msg}");
    }
    let unknown = secrets::format_token(t.id + 100, &secret);
    let (n, msg) = wizard(&s.url, "lookup_account.php", &typed(&unknown, &unknown))
        .await
        .unwrap_err();
    assert_eq!(n, -136);
    assert!(
        msg.contains("bad_enrolment_token") && msg.contains("boinccmd --project_attach"),
        "{msg}"
    );
    // Looking up spends nothing: the one registration the token allows is still there.
    assert_eq!(s.store.enrolment_tokens().unwrap()[0].used, 0);
    let (n, _) = wizard(
        &s.url,
        "create_account.php",
        &format!("{}&user_name=ann", typed(&key, &key)),
    )
    .await
    .unwrap_err();
    assert_eq!(n, -208);

    // The key the wizard answered attaches: the host registers with it, spending the token…
    let reply = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    assert!(reply.number::<u64>("hostid").is_some(), "{reply:?}");
    assert_eq!(reply.children_named("result").count(), 1);
    // …which now admits no other new host: the wizard says so before the Manager attaches.
    let (n, msg) = wizard(&s.url, "lookup_account.php", &typed(&key, &key))
        .await
        .unwrap_err();
    assert_eq!(n, -136);
    assert!(msg.contains("enrolment_token_exhausted"), "{msg}");
    let other = mint(&s, "bob");
    let (bob_id, _) = secrets::parse_token(&other).unwrap();
    s.store.revoke_enrolment_token(bob_id, 1).unwrap();
    let (n, msg) = wizard(&s.url, "lookup_account.php", &typed(&other, &other))
        .await
        .unwrap_err();
    assert_eq!(n, -136);
    assert!(msg.contains("enrolment_token_revoked"), "{msg}");
    // No query, a query it cannot read, a key that is no token: refusals, not 4xx.
    for q in ["", "email_addr=%ZZ&passwd_hash=%", "passwd_hash=0"] {
        assert!(
            wizard(&s.url, "lookup_account.php", q).await.is_err(),
            "{q}"
        );
        assert!(
            wizard(&s.url, "create_account.php", q).await.is_err(),
            "{q}"
        );
    }
    let (n, msg) = wizard(&s.url, "lookup_account.php", &typed("no-dot", "no-dot"))
        .await
        .unwrap_err();
    assert_eq!(n, -136);
    assert!(msg.contains("not an enrolment token"), "{msg}");
}

/// Open enrolment: the wizard creates accounts (one e-mail and password is one account key,
/// found again by a lookup), and that key attaches; the shared enrolment secret works like a
/// token; closed enrolment finds and creates nothing.
#[tokio::test]
async fn the_managers_wizard_under_open_secret_and_closed_enrolment() {
    let (s, _dir) = server_with(Enrolment::Open).await;
    s.campaign(3, "0");
    let cfg = project_config(&s.url).await;
    assert!(!cfg.has("account_creation_disabled") && !cfg.has("uses_username"));
    let ann = typed("Ann@Example.org", "correct horse");
    let key = wizard(
        &s.url,
        "create_account.php",
        &format!("{ann}&user_name=ann&consent_flag=1"),
    )
    .await
    .unwrap();
    assert_eq!(
        wizard(&s.url, "lookup_account.php", &ann).await,
        Ok(key.clone())
    );
    let bob = wizard(
        &s.url,
        "lookup_account.php",
        &typed("bob@example.org", "correct horse"),
    )
    .await
    .unwrap();
    assert_ne!(bob, key);
    let reply = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    assert_eq!(reply.children_named("result").count(), 1, "{reply:?}");
    assert_eq!(
        schedule(&s.url, request(&key, 0, "cpid-a", 0, &[], &[]))
            .await
            .number::<u64>("hostid"),
        reply.number::<u64>("hostid"),
        "the same account and host"
    );

    let secret = "a-shared-enrolment-secret-0001";
    let (s, _dir) = server_with(Enrolment::secret(secret)).await;
    assert!(project_config(&s.url).await.has("uses_username"));
    assert_eq!(
        wizard(&s.url, "lookup_account.php", &typed(secret, secret)).await,
        Ok(secret.to_string())
    );
    let wrong = "a-shared-enrolment-secret-0002";
    assert_eq!(
        wizard(&s.url, "lookup_account.php", &typed(wrong, wrong))
            .await
            .unwrap_err()
            .0,
        -136
    );
    assert_eq!(
        wizard(&s.url, "create_account.php", &typed(secret, secret))
            .await
            .unwrap_err()
            .0,
        -208
    );

    let (s, _dir) = server_with(Enrolment::Closed).await;
    let cfg = project_config(&s.url).await;
    assert!(cfg.has("account_creation_disabled") && !cfg.has("uses_username"));
    let (n, msg) = wizard(&s.url, "lookup_account.php", &typed("x@y.z", "secret12"))
        .await
        .unwrap_err();
    assert_eq!(n, -136);
    assert!(msg.contains("enrols no new hosts"), "{msg}");
    assert_eq!(
        wizard(&s.url, "create_account.php", &typed("x@y.z", "secret12"))
            .await
            .unwrap_err()
            .0,
        -208
    );
}

/// Issue 54 through the BOINC route: a host whose app lies (the right total of 518 at depth 4,
/// one node moved between two root moves) disagrees with an honest native worker on a
/// workunit over the coordinator's budget (100 nodes). The dispute's challenges reach the host
/// as ordinary tasks in its scheduler replies; its app keeps its story one ply deeper at every
/// challenge (one node more under the first move), and the coordinator's count at a leaf
/// proves it wrong: the host is quarantined, the native worker is not, and with a second native
/// worker the value is the truth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_boinc_app_is_convicted_by_a_dispute_it_answers_as_tasks() {
    use c960_common::digest::result_digest;
    use c960_common::wire::{SubmitRequest, WorkResult};
    let mut config = quick_config();
    config.enrolment = Enrolment::Tokens;
    config.checks.max_nodes = 100;
    let (s, _dir) = server_of(config).await;
    let c = s.campaign(4, "518");
    let key = mint(&s, "liar");
    let lie = |a: &Assignment| -> SubmitRequest {
        let mut sub = honest_submission(a);
        let WorkResult::Perft(r) = &mut sub.result else {
            panic!("perft")
        };
        r.divide[0].1 += 1;
        if c960_coordinator::model::disputes::challenge_of(a.lease_id).is_some() {
            r.nodes += 1;
        } else {
            r.divide[1].1 -= 1;
        }
        sub.digest = result_digest(a.workunit_id, &a.kind, &sub.result);
        sub
    };
    let reply = schedule(&s.url, request(&key, 0, "cpid-liar", 1, &[], &[])).await;
    let hostid: u64 = reply.number("hostid").unwrap();
    let mut tasks: Vec<String> = Vec::new();
    for r in reply.children_named("result") {
        assert_eq!(upload_as(&s.url, &reply, r, &lie).await, "0");
        tasks.push(r.text_of("name").to_string());
    }
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut natives = Vec::new();
    for i in 0..2 {
        let mut cfg = c960_worker::runner::RunnerConfig::new(&s.url);
        cfg.name = format!("native-{i}");
        cfg.progress = false;
        cfg.enrol_secret = Some(mint(&s, &format!("native-{i}")));
        cfg.backoff_cap = Duration::from_millis(500);
        natives.push(tokio::spawn(c960_worker::runner::run(cfg, rx.clone())));
    }
    let until = std::time::Instant::now() + Duration::from_secs(90);
    let mut challenges = 0;
    while !s.store.worker(hostid).unwrap().unwrap().quarantined {
        assert!(
            std::time::Instant::now() < until,
            "the host is not convicted: {:?}",
            s.store.dispute_cost().unwrap()
        );
        let names: Vec<&str> = tasks.iter().map(String::as_str).collect();
        let reply = schedule(&s.url, request(&key, hostid, "cpid-liar", 1, &names, &[])).await;
        tasks.clear();
        for r in reply.children_named("result") {
            challenges += 1;
            assert_eq!(upload_as(&s.url, &reply, r, &lie).await, "0");
            tasks.push(r.text_of("name").to_string());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c960_tests::wait_until(Duration::from_secs(60), || {
        let p = c960_tests::progress_of(&*s.store, c.id);
        if p.valid == p.total {
            Ok(())
        } else {
            Err(format!("{p:?}"))
        }
    })
    .await;
    tx.send(true).unwrap();
    for n in natives {
        n.await.unwrap().unwrap();
    }
    let cost = s.store.dispute_cost().unwrap();
    assert!(cost.convicted >= 1 && cost.challenges >= 2, "{cost:?}");
    assert!(challenges >= 1, "the host answered its challenges as tasks");
    let workers = s
        .store
        .worker_summary(c960_coordinator::clock::now_ms())
        .unwrap();
    for w in workers.list.iter().filter(|w| w.id != hostid) {
        assert!(!w.quarantined, "{w:?}");
    }
    let (_, rows) = s.store.table(c.id).unwrap();
    assert_eq!(rows[0].nodes, Some(c960_tests::reference()[&518][3]));
}
