//! The BOINC routes against a hostile volunteer (spoken by hand, as in `boinc_protocol.rs`):
//! the worker routes' limits hold there too — per address, per host, on new hosts from all
//! addresses together (one rule with the native `register`) — answered as BOINC's client
//! understands them (the scheduler and the upload handler: 200 with a delay or a transient
//! status inside, never a status it would take for a failed request), and a host cannot fail
//! or renew another host's task. Never a 5xx.

use c960_common::error_code::ErrorCode;
use c960_coordinator::model::ReplicaState;
use c960_coordinator::net::api::Limits;
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::boinc::names::TaskName;
use c960_coordinator::net::boinc::xml::{self, Element};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, quick_config};

use super::boinc_protocol::{
    compute_and_upload, file_info, mint, post, request, schedule, server_of, upload_body,
};

/// One token every 100 s after a burst of three: nothing refills while a test runs.
const THREE_THEN_DRY: Rate = Rate {
    per_sec: 0.01,
    burst: 3.0,
};

/// The lease of the first task of `reply`.
fn first_lease(s: &TestServer, reply: &Element) -> c960_coordinator::model::LeaseInfo {
    let name = reply.child("result").expect("a task").text_of("name");
    let id = TaskName::from_result(name).unwrap().lease_id;
    s.store.lease(id).unwrap().unwrap()
}

/// The reply refuses for a rate: a message saying so, a delay the client waits, no work.
fn assert_rate_refusal(r: &Element, says: &str) {
    assert!(r.text_of("message").contains(says), "{says}: {r:?}");
    let delay: u32 = r.number("request_delay").expect("a request_delay");
    assert!(delay >= 1, "{r:?}");
    assert!(!r.has("result"), "no work when refused: {r:?}");
}

/// The upload handler's answer as (HTTP status, BOINC status, message).
async fn upload(url: &str, body: Vec<u8>) -> (u16, String, String) {
    let (status, text) = post(url, "/boinc/file_upload_handler", body).await;
    let r =
        xml::parse(text.as_bytes(), "data_server_reply").unwrap_or_else(|e| panic!("{e}: {text}"));
    (
        status,
        r.text_of("status").into(),
        r.text_of("message").into(),
    )
}

/// The uploaded output of the first task of `reply`, signed as the reply signed it (the bytes
/// need not be a result: a refusal comes before they are read).
fn signed_upload(reply: &Element, data: &[u8]) -> Vec<u8> {
    let result = reply.child("result").unwrap();
    let out = file_info(
        reply,
        result.child("file_ref").unwrap().text_of("file_name"),
    );
    upload_body(
        out.text_of("name"),
        out.text_of("xml_signature"),
        out.number("max_nbytes").unwrap(),
        data,
    )
}

/// Past its address's burst, a client gets 200 from the scheduler with the refusal and a
/// `<request_delay>`, a transient status (1) from the upload handler with nothing stored, and
/// 429 + `Retry-After` from the master page and the downloads.
#[tokio::test]
async fn an_address_past_its_rate_gets_a_delay_from_the_scheduler_and_a_transient_upload() {
    let mut config = quick_config();
    config.enrolment = Enrolment::Tokens;
    config.limits = Limits {
        per_address: THREE_THEN_DRY,
        ..quick_config().limits
    };
    let (s, _dir) = server_of(config).await;
    s.campaign(3, "5");
    let key = mint(&s, "ann");
    let first = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    let hostid: u64 = first.number("hostid").unwrap();
    let lease = first_lease(&s, &first);
    for _ in 0..2 {
        schedule(&s.url, request(&key, hostid, "cpid-a", 1, &[], &[])).await;
    }
    // Dry: the scheduler answers 200 (`schedule` asserts it) with the refusal inside.
    for _ in 0..3 {
        let r = schedule(&s.url, request(&key, hostid, "cpid-a", 1, &[], &[])).await;
        assert_rate_refusal(&r, "too many requests");
    }
    let (status, code, message) = upload(&s.url, signed_upload(&first, b"{}")).await;
    assert_eq!((status, code.as_str()), (200, "1"), "{message}");
    assert!(message.contains("too many requests"), "{message}");
    assert_eq!(
        s.store.lease(lease.id).unwrap().unwrap().state,
        ReplicaState::InProgress,
        "nothing judged"
    );
    for path in ["/boinc/", "/boinc/download/c960-worker"] {
        let resp = reqwest::get(format!("{}{path}", s.url)).await.unwrap();
        assert_eq!(resp.status().as_u16(), 429, "{path}");
        assert!(resp.headers().contains_key("retry-after"), "{path}");
        let body: serde_json::Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], "rate_limited", "{path}");
    }
}

/// Past its own burst, a host's requests and uploads are refused the same way (its host id
/// still sent), while another host of the same address is served and its upload judged.
#[tokio::test]
async fn a_host_past_its_rate_is_refused_and_another_host_is_not() {
    let mut config = quick_config();
    config.enrolment = Enrolment::Tokens;
    config.limits = Limits {
        per_worker: THREE_THEN_DRY,
        ..quick_config().limits
    };
    let (s, _dir) = server_of(config).await;
    s.campaign(3, "5");
    let key = mint(&s, "ann");
    let first = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    let hostid: u64 = first.number("hostid").unwrap();
    let lease = first_lease(&s, &first);
    let held = first.child("result").unwrap().text_of("name").to_string();
    for _ in 0..2 {
        schedule(&s.url, request(&key, hostid, "cpid-a", 0, &[], &[&held])).await;
    }
    let r = schedule(&s.url, request(&key, hostid, "cpid-a", 1, &[], &[&held])).await;
    assert_rate_refusal(&r, "too many requests");
    assert!(!r.has("result_abort"), "a refused request aborts nothing");
    // Asked again from scratch (a reattach), it learns its host id even when refused.
    let r = schedule(&s.url, request(&key, 0, "cpid-a", 1, &[], &[])).await;
    assert_rate_refusal(&r, "too many requests");
    assert_eq!(r.number::<u64>("hostid"), Some(hostid), "{r:?}");
    let status = compute_and_upload(&s.url, &first, first.child("result").unwrap()).await;
    assert_eq!(status, "1", "transient: the client uploads it again later");
    assert_eq!(
        s.store.lease(lease.id).unwrap().unwrap().state,
        ReplicaState::InProgress
    );

    // Another host (another account, so another replica) has its own bucket.
    let other = schedule(&s.url, request(&mint(&s, "bob"), 0, "cpid-b", 1, &[], &[])).await;
    assert!(other.has("result"), "{other:?}");
    let status = compute_and_upload(&s.url, &other, other.child("result").unwrap()).await;
    assert_eq!(status, "0", "judged and stored");
    assert_eq!(
        first_lease(&s, &other).state,
        ReplicaState::Returned,
        "stored"
    );
}

/// New hosts from all addresses together share one budget with native registrations (one
/// rule): the third new host waits, told so, and so does a native worker; known hosts are
/// still served.
#[tokio::test]
async fn new_hosts_and_native_registrations_share_the_budget_of_all_addresses() {
    let mut config = quick_config();
    config.enrolment = Enrolment::Open;
    config.limits = Limits {
        registrations_total: Rate {
            per_sec: 0.0001,
            burst: 2.0,
        },
        ..quick_config().limits
    };
    let (s, _dir) = server_of(config).await;
    s.campaign(3, "5");
    let a = schedule(&s.url, request("key-a", 0, "cpid-a", 0, &[], &[])).await;
    let hostid: u64 = a.number("hostid").unwrap();
    schedule(&s.url, request("key-b", 0, "cpid-b", 0, &[], &[])).await;
    let third = schedule(&s.url, request("key-c", 0, "cpid-c", 1, &[], &[])).await;
    assert_rate_refusal(&third, "too many registrations from all addresses");
    assert!(!third.has("hostid"), "no host made: {third:?}");
    let client = c960_worker::client::Client::new(&s.url).unwrap();
    let err = client.register("native", 1, 0).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::RateLimited), "{err}");
    // A known host is no registration.
    let again = schedule(&s.url, request("key-a", hostid, "cpid-a", 1, &[], &[])).await;
    assert!(again.has("result"), "{again:?}");
}

/// A host that reports or holds another host's task changes nothing of it: its failure report
/// is acknowledged (the client forgets it) but not recorded, its renewal is refused and the
/// task aborted on its side; the owner's lease stays open, its own.
#[tokio::test]
async fn a_host_cannot_fail_or_renew_another_hosts_task() {
    let (s, _dir) = server_of({
        let mut c = quick_config();
        c.enrolment = Enrolment::Tokens;
        c
    })
    .await;
    s.campaign(3, "5");
    let ann = mint(&s, "ann");
    let owner = schedule(&s.url, request(&ann, 0, "cpid-a", 1, &[], &[])).await;
    let owner_id: u64 = owner.number("hostid").unwrap();
    let task = owner.child("result").unwrap().text_of("name").to_string();
    let lease = first_lease(&s, &owner);

    let mallory = mint(&s, "mallory");
    let m = schedule(&s.url, request(&mallory, 0, "cpid-m", 0, &[], &[])).await;
    let m_id: u64 = m.number("hostid").unwrap();
    let body = request(&mallory, m_id, "cpid-m", 0, &[], &[&task]).replace(
        "</host_info>\n",
        &format!("</host_info>\n<result><name>{task}</name><state>3</state><exit_status>1</exit_status></result>\n"),
    );
    let r = schedule(&s.url, body).await;
    assert_eq!(r.child("result_ack").unwrap().text_of("name"), task);
    assert_eq!(
        r.child("result_abort").map(|a| a.text_of("name")),
        Some(task.as_str()),
        "not its task: {r:?}"
    );
    let now = s.store.lease(lease.id).unwrap().unwrap();
    assert_eq!(
        (now.state, now.worker_id),
        (ReplicaState::InProgress, lease.worker_id),
        "the owner's lease is untouched"
    );
    let again = schedule(&s.url, request(&ann, owner_id, "cpid-a", 0, &[], &[&task])).await;
    assert!(!again.has("result_abort"), "still the owner's: {again:?}");
}

/// Wrong enrolment tokens spend no registration budget: with room for two new identities from
/// all addresses, a flood of wrong keys at the scheduler and at `/api/v1/register` is refused as
/// wrong keys (BOINC's hour of delay; 401), and two honest newcomers, a BOINC host and a native
/// worker, still get in; the next is refused for the rate.
#[tokio::test]
async fn wrong_tokens_spend_no_registration_budget() {
    let mut config = quick_config();
    config.enrolment = Enrolment::Tokens;
    config.limits = Limits {
        registrations_total: Rate {
            per_sec: 0.0001,
            burst: 2.0,
        },
        ..quick_config().limits
    };
    let (s, _dir) = server_of(config).await;
    s.campaign(3, "5");
    let good = mint(&s, "ann");
    let (id, _) = good.split_once('.').unwrap();
    let wrong = [
        format!("{id}.wrongsecretwrongsecret"),
        "999.nosuchtoken".into(),
    ];
    for key in wrong.iter().cycle().take(6) {
        let r = schedule(&s.url, request(key, 0, "cpid-x", 1, &[], &[])).await;
        assert!(
            r.text_of("message").contains("refuses this account key"),
            "{r:?}"
        );
        assert_eq!(r.text_of("request_delay"), "3600", "{r:?}");
        let native = c960_worker::client::Client::new(&s.url)
            .unwrap()
            .with_enrol_secret(Some(key.clone()));
        let err = native.register("w", 1, 0).await.unwrap_err();
        assert_ne!(err.code(), Some(ErrorCode::RateLimited), "{err}");
    }
    let host = schedule(&s.url, request(&good, 0, "cpid-a", 1, &[], &[])).await;
    assert!(host.has("hostid") && host.has("result"), "{host:?}");
    let native = c960_worker::client::Client::new(&s.url)
        .unwrap()
        .with_enrol_secret(Some(mint(&s, "bob")));
    native.register("bob", 1, 0).await.unwrap();
    let third = schedule(&s.url, request(&mint(&s, "cy"), 0, "cpid-c", 1, &[], &[])).await;
    assert_rate_refusal(&third, "too many registrations from all addresses");
}
