//! Malformed and unauthorised requests each get a 4xx with their code; the coordinator stays up
//! and loses nothing: afterwards the campaign still completes exactly.

use c960_common::codec;
use c960_common::digest::result_digest;
use c960_common::wire::{
    AbandonRequest, Capabilities, FetchRequest, FetchResponse, MAX_BODY_BYTES, PROTOCOL_VERSION,
    SubmitRequest,
};
use c960_compute::compute::compute;
use c960_coordinator::model::{ResultOutcome, RowStatus};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, quick_config, reference};
use c960_worker::client::{Client, engine};

async fn post_as(
    token: Option<&str>,
    url: &str,
    path: &str,
    ct: &str,
    body: Vec<u8>,
) -> (u16, String) {
    let (status, code, _) =
        c960_tests::raw_post(url, &format!("/api/v1/{path}"), token, ct, body).await;
    (status, code)
}

const OCTET: &str = "application/octet-stream";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_coded_4xx_and_nothing_is_lost() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "0-2");
    let url = server.url.clone();
    let client = Client::new(&url).unwrap();
    let alice = client.register("alice", 1, 0).await.unwrap();
    let bob = client.register("bob", 1, 0).await.unwrap();
    let fetch = || {
        codec::encode(&FetchRequest {
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities::builtin(),
        })
        .unwrap()
    };
    let a = alice.token.clone();
    let post = |path: &'static str, ct: &'static str, body: Vec<u8>| {
        post_as(Some(&a), &url, path, ct, body)
    };

    // Garbage, truncated bincode, trailing bytes.
    assert_eq!(
        post("fetch", OCTET, vec![0xff; 40]).await,
        (400, "bad_body".into())
    );
    let good = fetch();
    let truncated = codec::encode(&AbandonRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: 1 << 40,
    })
    .unwrap();
    assert_eq!(
        post("abandon", OCTET, truncated[..truncated.len() - 3].to_vec()).await,
        (400, "bad_body".into())
    );
    assert_eq!(post("fetch", OCTET, vec![]).await, (400, "bad_body".into()));
    let mut longer = good.clone();
    longer.push(1);
    assert_eq!(post("fetch", OCTET, longer).await, (400, "bad_body".into()));
    // Oversize body.
    assert_eq!(
        post("submit", OCTET, vec![1; MAX_BODY_BYTES + 1]).await,
        (413, "body_too_large".into())
    );
    // Wrong protocol version, wrong content type, unknown endpoint.
    let mut old = good.clone();
    old[0] = 99;
    assert_eq!(
        post("fetch", OCTET, old).await,
        (400, "unsupported_protocol".into())
    );
    assert_eq!(
        post("fetch", "application/json", good.clone()).await,
        (415, "wrong_content_type".into())
    );
    assert_eq!(
        post("nonsense", OCTET, good.clone()).await,
        (404, "not_found".into())
    );
    // Unknown worker, wrong token, no token.
    let ghost = format!("999.{}", alice.token.split_once('.').unwrap().1);
    assert_eq!(
        post_as(Some(&ghost), &url, "fetch", OCTET, fetch()).await,
        (401, "unknown_worker".into())
    );
    let forger = format!("{}.00", alice.worker_id);
    assert_eq!(
        post_as(Some(&forger), &url, "fetch", OCTET, fetch()).await,
        (401, "bad_token".into())
    );
    assert_eq!(
        post_as(None, &url, "fetch", OCTET, fetch()).await,
        (401, "missing_token".into())
    );

    // A real lease for alice, and submissions that must be refused.
    let FetchResponse::Assigned(a) = client
        .fetch(&alice, &Capabilities::builtin())
        .await
        .unwrap()
    else {
        panic!("no work")
    };
    let result = compute(
        &a.kind,
        &std::sync::atomic::AtomicBool::new(false),
        |_, _, _| {},
    )
    .unwrap();
    let honest = SubmitRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: result_digest(a.workunit_id, &a.kind, &result.clone().into()),
        result: result.into(),
        elapsed_ms: 1,
        engine: engine(),
    };
    let submit = |r: &SubmitRequest| codec::encode(r).unwrap();
    let unknown_wu = SubmitRequest {
        workunit_id: 999,
        ..honest.clone()
    };
    assert_eq!(
        post("submit", OCTET, submit(&unknown_wu)).await,
        (404, "unknown_workunit".into())
    );
    let unknown_lease = SubmitRequest {
        lease_id: 999,
        ..honest.clone()
    };
    assert_eq!(
        post("submit", OCTET, submit(&unknown_lease)).await,
        (404, "unknown_lease".into())
    );
    // Someone else's lease: bob's valid token cannot answer or give back alice's lease.
    assert_eq!(
        post_as(Some(&bob.token), &url, "submit", OCTET, submit(&honest)).await,
        (403, "lease_not_yours".into())
    );
    let bob_abandons = codec::encode(&AbandonRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: a.lease_id,
    })
    .unwrap();
    assert_eq!(
        post_as(Some(&bob.token), &url, "abandon", OCTET, bob_abandons).await,
        (403, "lease_not_yours".into())
    );
    // None of that touched alice's lease: her honest result is accepted once, then the lease is closed.
    client.submit(&alice, &honest).await.unwrap();
    assert_eq!(
        post("submit", OCTET, submit(&honest)).await,
        (409, "lease_closed".into())
    );
    // Human endpoints refuse bad input with codes too.
    let r = reqwest::get(format!("{url}/api/v1/campaigns/77/table"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = reqwest::get(format!("{url}/api/v1/campaigns/1/table?format=xml"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // The coordinator is still up and the campaign completes exactly, alice's result included.
    server.finish_with_honest_workers(c.id, 2).await;
    let (_, rows) = server.store.table(c.id).unwrap();
    for r in &rows {
        assert_eq!(r.status, RowStatus::Valid);
        assert_eq!(r.nodes, Some(reference()[&r.sp.unwrap()][1]));
    }
    let rs = server.store.results(a.workunit_id).unwrap();
    assert_eq!(
        rs.iter().find(|r| r.id == a.lease_id).unwrap().outcome,
        ResultOutcome::Valid
    );
    let csv = reqwest::get(format!("{url}/api/v1/campaigns/{}/table?format=csv", c.id))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(csv.starts_with("sp,fen,depth,nodes"));
    assert_eq!(csv.lines().count(), 4);
}
