//! Hardening of issue 12 ("also found on the same run"), one test each, against a real server on
//! 127.0.0.1 with a real SQLite file: engine labels bounded on submission.

use c960_common::codec;
use c960_common::wire::{
    Capabilities, EngineInfo, FetchResponse, PROTOCOL_VERSION, SubmitBatchRequest,
};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, honest_result, honest_submission, quick_config, raw_post};
use c960_worker::client::Client;

const OCTET: &str = "application/octet-stream";

#[tokio::test]
async fn long_engine_labels_are_refused_on_submit_and_submit_batch() {
    let server = TestServer::start(quick_config()).await;
    server.campaign(1, "0-1");
    let client = Client::new(&server.url).unwrap();
    let auth = client.register("w", 1, 0).await.unwrap();
    let a = match client.fetch(&auth, &Capabilities::builtin()).await.unwrap() {
        FetchResponse::Assigned(a) => a,
        other => panic!("no work: {other:?}"),
    };
    let long = "x".repeat(101);
    for engine in [
        EngineInfo {
            name: long.clone(),
            version: "1".into(),
        },
        EngineInfo {
            name: "c960".into(),
            version: long.clone(),
        },
    ] {
        let mut single = honest_submission(&a);
        single.engine = engine.clone();
        let (s, c, _) = raw_post(
            &server.url,
            "/api/v1/submit",
            Some(&auth.token),
            OCTET,
            codec::encode(&single).unwrap(),
        )
        .await;
        assert_eq!((s, c.as_str()), (400, "bad_field"));
        let batch = SubmitBatchRequest {
            protocol: PROTOCOL_VERSION,
            engine,
            results: vec![honest_result(&a)],
        };
        let (s, c, _) = raw_post(
            &server.url,
            "/api/v1/submit-batch",
            Some(&auth.token),
            OCTET,
            codec::encode(&batch).unwrap(),
        )
        .await;
        assert_eq!((s, c.as_str()), (400, "bad_field"));
    }
    // Nothing was stored and the lease is still open: the same result with a short label goes in.
    assert!(
        server
            .store
            .results(a.workunit_id)
            .unwrap()
            .iter()
            .all(|r| r.state == "in_progress")
    );
    client.submit(&auth, &honest_submission(&a)).await.unwrap();
}
