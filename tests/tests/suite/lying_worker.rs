//! Lying workers on start positions whose answer is public: wrong counts (with a matching
//! digest) fail the known-answer check on receipt, which is evidence and quarantines the liar at
//! once; a digest that does not match its payload is refused (a strike). Neither enters the
//! table, and the workunits complete correctly.

use c960_common::digest::result_digest;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{Capabilities, FetchResponse, PROTOCOL_VERSION, SubmitRequest};
use c960_compute::compute::compute;
use c960_coordinator::model::{ReplicaState, ResultOutcome, RowStatus};
use c960_coordinator::net::api::Config;
use c960_coordinator::store::Store;
use c960_tests::{TestServer, quick_config, reference};
use c960_worker::client::{Client, engine};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_worker_never_enters_the_table_and_is_quarantined() {
    let server = TestServer::start(Config {
        max_strikes: 2,
        ..quick_config()
    })
    .await;
    let c = server.campaign(3, "0-3");
    let liar = Client::new(&server.url).unwrap();
    let auth = liar.register("liar", 1, 0).await.unwrap();

    let honest = |a: &c960_common::wire::Assignment| {
        compute(
            &a.kind,
            &std::sync::atomic::AtomicBool::new(false),
            |_, _, _| {},
        )
        .unwrap()
    };
    let FetchResponse::Assigned(a1) = liar.fetch(&auth, &Capabilities::builtin()).await.unwrap()
    else {
        panic!("no work")
    };
    // Lie 1: wrong but self-consistent counts, honest digest of the lie: the known answer
    // catches it on receipt.
    let mut lie = honest(&a1);
    lie.divide[0].1 += 1;
    lie.nodes += 1;
    let req = SubmitRequest {
        protocol: PROTOCOL_VERSION,
        lease_id: a1.lease_id,
        workunit_id: a1.workunit_id,
        digest: result_digest(a1.workunit_id, &a1.kind, &lie.clone().into()),
        result: lie.into(),
        elapsed_ms: 1,
        engine: engine(),
    };
    let err = liar.submit(&auth, &req).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::CheckFailed));

    // Lie 2, by another worker: true counts with a digest that does not match them. Refused.
    let sloppy = Client::new(&server.url).unwrap();
    let sloppy_auth = sloppy.register("sloppy", 1, 0).await.unwrap();
    let FetchResponse::Assigned(a2) = sloppy
        .fetch(&sloppy_auth, &Capabilities::builtin())
        .await
        .unwrap()
    else {
        panic!("no work")
    };
    let truth = honest(&a2);
    let req2 = SubmitRequest {
        lease_id: a2.lease_id,
        workunit_id: a2.workunit_id,
        digest: [7; 32],
        result: truth.into(),
        ..req.clone()
    };
    let err = sloppy.submit(&sloppy_auth, &req2).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::DigestMismatch));

    // Two honest workers finish the campaign.
    server.finish_with_honest_workers(c.id, 2).await;

    let (_, rows) = server.store.table(c.id).unwrap();
    for r in &rows {
        assert_eq!(r.status, RowStatus::Valid);
        assert_eq!(
            r.nodes,
            Some(reference()[&r.sp.unwrap()][2]),
            "sp {:?}",
            r.sp
        );
    }
    let r1 = server.store.results(a1.workunit_id).unwrap();
    let lie_row = r1.iter().find(|r| r.id == a1.lease_id).unwrap();
    assert_eq!(lie_row.state, ReplicaState::Error);
    assert_eq!(
        r1.iter()
            .filter(|r| r.outcome == ResultOutcome::Valid)
            .count(),
        2
    );
    let r2 = server.store.results(a2.workunit_id).unwrap();
    assert_eq!(
        r2.iter().find(|r| r.id == a2.lease_id).unwrap().state,
        ReplicaState::Error
    );

    // The failed check is evidence: the liar is quarantined at once. The digest mismatch is a
    // strike (threshold 2), not yet a quarantine.
    let w = server.store.worker(auth.worker_id).unwrap().unwrap();
    assert_eq!((w.checks_failed, w.refused, w.valid), (1, 0, 0));
    assert!(w.quarantined);
    let err = liar
        .fetch(&auth, &Capabilities::builtin())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::WorkerQuarantined));
    let s = server.store.worker(sloppy_auth.worker_id).unwrap().unwrap();
    assert_eq!((s.refused, s.quarantined), (1, false));

    // The status page shows the marked worker.
    let text = reqwest::get(format!("{}/api/v1/status", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["workers"]["marked"][0]["id"], auth.worker_id);
    assert_eq!(status["campaigns"][0]["valid"], 4);
}
