//! Batched fetch and submit over real HTTP: a batch holds distinct workunits, each result in a
//! batch is judged on its own (one bad result refuses that one only, with the code a single
//! submission would get), bad batch sizes are coded 4xx, and a campaign finished by batching
//! workers equals the reference.

use c960_common::digest::result_digest;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{
    BatchedOutcome, BatchedResult, Capabilities, FetchBatchRequest, FetchBatchResponse, MAX_BATCH,
    PROTOCOL_VERSION, SubmitBatchRequest, WorkResult,
};
use c960_coordinator::net::api::Config;
use c960_coordinator::store::Store;
use c960_tests::{TestServer, honest_result, quick_config, raw_post, reference};
use c960_worker::client::{Client, engine};

fn code(o: &BatchedOutcome) -> &str {
    match o {
        BatchedOutcome::Accepted => "accepted",
        BatchedOutcome::Refused(e) => &e.code,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_result_of_a_batch_is_judged_on_its_own() {
    let mut config: Config = quick_config();
    config.limits.max_open_leases = 16;
    let server = TestServer::start(config).await;
    let c = server.campaign(2, "0-9");
    let client = Client::new(&server.url).unwrap();
    let alice = client.register("alice", 1, 0).await.unwrap();
    let bob = client.register("bob", 1, 0).await.unwrap();
    let caps = Capabilities::builtin();

    let FetchBatchResponse::Assigned(mine) = client.fetch_batch(&alice, &caps, 6).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(mine.len(), 6);
    let units: std::collections::BTreeSet<u64> = mine.iter().map(|a| a.workunit_id).collect();
    assert_eq!(units.len(), 6, "a batch never holds one workunit twice");
    let FetchBatchResponse::Assigned(bobs) = client.fetch_batch(&bob, &caps, 1).await.unwrap()
    else {
        panic!("no work")
    };

    let mut results: Vec<BatchedResult> = mine.iter().map(honest_result).collect();
    // 1: the count changed after the digest was made.
    if let WorkResult::Perft(p) = &mut results[1].result {
        p.nodes += 1;
    }
    // 2: a lease that does not exist; 3: bob's lease quoted by alice.
    results[2].lease_id += 1 << 40;
    results[3] = BatchedResult {
        lease_id: bobs[0].lease_id,
        ..honest_result(&bobs[0])
    };
    // 4: a divide that does not sum to the count, with a digest that matches it.
    if let WorkResult::Perft(p) = &mut results[4].result {
        p.nodes += 1;
        results[4].digest = result_digest(mine[4].workunit_id, &mine[4].kind, &results[4].result);
    }
    let answer = client.submit_batch(&alice, results.clone()).await.unwrap();
    let codes: Vec<&str> = answer.outcomes.iter().map(code).collect();
    assert_eq!(
        codes,
        [
            "accepted",
            "digest_mismatch",
            "unknown_lease",
            "lease_not_yours",
            "invalid_result",
            "accepted"
        ]
    );
    // What was refused left nothing behind but the refusals; the accepted ones are stored.
    let stored = |wu: u64| server.store.results(wu).unwrap();
    assert_eq!(
        stored(mine[0].workunit_id)[0].nodes,
        Some(results[0].result.nodes())
    );
    assert_eq!(
        stored(mine[5].workunit_id)[0].nodes,
        Some(results[5].result.nodes())
    );
    assert_eq!(stored(mine[1].workunit_id)[0].nodes, None);
    // Submitting the same batch again: every lease is closed now (or never was alice's).
    let again = client.submit_batch(&alice, results).await.unwrap();
    let codes: Vec<&str> = again.outcomes.iter().map(code).collect();
    assert_eq!(
        codes,
        [
            "lease_closed",
            "lease_closed",
            "unknown_lease",
            "lease_not_yours",
            "lease_closed",
            "lease_closed"
        ]
    );
    // Bob's lease is untouched by alice's attempt: he can still submit it.
    let ok = client
        .submit_batch(&bob, vec![honest_result(&bobs[0])])
        .await
        .unwrap();
    assert_eq!(ok.outcomes, [BatchedOutcome::Accepted]);

    // Alice still holds the two leases she never answered; she gives them back.
    for a in &mine[2..4] {
        client.abandon(&alice, a.lease_id).await.unwrap();
    }
    // Honest batching workers finish the campaign exactly.
    server.finish_with_honest_workers(c.id, 3).await;
    let (_, rows) = server.store.table(c.id).unwrap();
    for r in rows {
        let sp = r.sp.unwrap();
        assert_eq!(r.nodes, Some(reference()[&sp][1]), "sp {sp}");
    }
}

#[tokio::test]
async fn bad_batch_sizes_and_the_lease_cap_are_coded() {
    let mut config: Config = quick_config();
    config.limits.max_open_leases = 3;
    let server = TestServer::start(config).await;
    // Ordinary workunits: a lease each against the cap.
    server.campaign(5, "0-9");
    let client = Client::new(&server.url).unwrap();
    let auth = client.register("w", 1, 0).await.unwrap();
    let post = |path: &'static str, body: Vec<u8>| {
        let (url, token) = (server.url.clone(), auth.token.clone());
        async move {
            let (s, c, _) = raw_post(
                &url,
                &format!("/api/v1/{path}"),
                Some(&token),
                "application/octet-stream",
                body,
            )
            .await;
            (s, c)
        }
    };
    for max_units in [0, MAX_BATCH + 1] {
        let body = c960_common::codec::encode(&FetchBatchRequest {
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities::builtin(),
            max_units,
        })
        .unwrap();
        assert_eq!(post("fetch-batch", body).await, (400, "bad_field".into()));
    }
    let empty = c960_common::codec::encode(&SubmitBatchRequest {
        protocol: PROTOCOL_VERSION,
        engine: engine(),
        results: vec![],
    })
    .unwrap();
    assert_eq!(post("submit-batch", empty).await, (400, "bad_field".into()));

    // The cap holds within a batch; a full worker that fetches again gets its own open leases
    // back (as after a crash), never more; asking for work it holds none of, it is told
    // lease_limit with Retry-After.
    let caps = Capabilities::builtin();
    let FetchBatchResponse::Assigned(got) = client.fetch_batch(&auth, &caps, 8).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(got.len(), 3);
    let FetchBatchResponse::Assigned(again) = client.fetch_batch(&auth, &caps, 8).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(again, got);
    let analysis_only = Capabilities {
        perft: false,
        ..caps
    };
    let err = client
        .fetch_batch(&auth, &analysis_only, 8)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::LeaseLimit));
    assert!(err.retry_after().is_some());
    assert_eq!(server.store.open_leases(auth.worker_id, 0).unwrap(), 3);
}

/// A lease weighs by its workunit's size against the cap (`work::handout::lease_weight`):
/// tiny ones (perft of at most 3 plies) sixteen to a lease, so one worker holds a whole batch of
/// them under the default cap of 64, ordinary ones one each. Every answer of the worker API
/// says the largest batch the coordinator takes, and the client asks for no more (256 until it
/// is told).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_workunits_fill_a_large_batch_and_ordinary_ones_the_cap() {
    use c960_common::wire::LEGACY_MAX_BATCH;
    let mut config = quick_config();
    // A block's cap counts leases (sybils of one block lock workunits, whatever their size);
    // with the default separation loopback is no block, which quick_config turns off.
    config.integrity.block_lease_cap = 0;
    let server = TestServer::start(config).await;
    server.campaign(2, "0-959");
    let client = Client::new(&server.url).unwrap();
    assert_eq!(client.max_batch(), LEGACY_MAX_BATCH, "until told");
    let w = client.register("w", 1, 0).await.unwrap();
    assert_eq!(client.max_batch(), MAX_BATCH, "the coordinator said");
    let caps = Capabilities::builtin();
    let FetchBatchResponse::Assigned(tiny) =
        client.fetch_batch(&w, &caps, MAX_BATCH).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(tiny.len(), 960, "every tiny workunit, in one batch");
    // 960 sixteenths held of 64 leases: room for four ordinary ones (a fetch hands back the
    // leases it holds first, as after a crash).
    server.campaign(5, "0-99");
    let held: std::collections::BTreeSet<u64> = tiny.iter().map(|a| a.lease_id).collect();
    let new_ones = |got: &[c960_common::wire::Assignment]| {
        got.iter()
            .filter(|a| !held.contains(&a.lease_id))
            .map(|a| a.kind.depth())
            .collect::<Vec<u32>>()
    };
    let FetchBatchResponse::Assigned(again) =
        client.fetch_batch(&w, &caps, MAX_BATCH).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(new_ones(&again), [5; 4]);
    let analysis_only = Capabilities {
        perft: false,
        builtin_analysis: true,
        ..caps.clone()
    };
    let refused = client
        .fetch_batch(&w, &analysis_only, MAX_BATCH)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::LeaseLimit), "{refused}");
    let results: Vec<BatchedResult> = tiny.iter().map(honest_result).collect();
    let answer = client.submit_batch(&w, results).await.unwrap();
    assert!(
        answer
            .outcomes
            .iter()
            .all(|o| matches!(o, BatchedOutcome::Accepted))
    );
    // With the tiny ones answered: the four it holds, and sixty more to the cap.
    let FetchBatchResponse::Assigned(more) =
        client.fetch_batch(&w, &caps, MAX_BATCH).await.unwrap()
    else {
        panic!("no work")
    };
    assert_eq!(more.len(), 64);
    assert!(more.iter().all(|a| a.kind.depth() == 5));
}
