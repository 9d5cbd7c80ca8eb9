//! Sybils and hoarders: many identities from one block or many, registering and fetching.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use c960_common::wire::{BatchedOutcome, BatchedResult};
use c960_coordinator::integrity::trust::Integrity;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::NewCampaign;
use c960_tests::TestServer;

use super::client::*;
use super::harness::*;
use super::liar::*;

/// Sybils: 12 identities from one address block. Registrations beyond the burst are refused
/// (429); the block's open leases are capped; no two of them ever hold or answer replicas of one
/// workunit, so even all of them colluding never form a quorum; an honest worker from another
/// block still gets work; a quarantined sybil gets no lease from inside the assign transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sybils_from_one_block_never_pair_and_cannot_hoard() {
    // Loopback blocks stand in for public ones here: separation everywhere.
    let mut cfg = config(Integrity {
        block_lease_cap: 20,
        address_separation: c960_coordinator::integrity::trust::AddressSeparation::Everywhere,
        ..Integrity::default()
    });
    cfg.limits.registrations_per_block = Rate::new(1.0 / 3600.0, 10.0);
    let server = TestServer::start(cfg).await;
    let spec = NewCampaign::new(3, 2, None, (0..100).collect()).unwrap();
    server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let mut sybils = Vec::new();
    let mut refused = 0;
    for i in 0..12 {
        // Distinct addresses inside one /24 change nothing.
        let ip: IpAddr = format!("127.0.0.{}", 1 + i).parse().unwrap();
        let client = RawClient::new(&server.url, Some(ip));
        match client.register(&format!("sybil-{i}")).await {
            Ok(a) => sybils.push((client, a)),
            Err((429, code)) => {
                assert_eq!(code, "rate_limited");
                refused += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!((sybils.len(), refused), (10, 2));
    // Every sybil fetches as much as it can.
    let mut held = Vec::new();
    for (client, auth) in &sybils {
        held.extend(client.fetch(auth, 64).await.unwrap());
    }
    assert!(held.len() <= 20, "the block holds {} leases", held.len());
    let units: BTreeSet<u64> = held.iter().map(|a| a.workunit_id).collect();
    assert_eq!(units.len(), held.len(), "two sybils on one workunit");
    // They all answer the same lie; nothing pairs, nothing is valid.
    for (client, auth) in &sybils {
        let mine: Vec<BatchedResult> = held
            .iter()
            .filter(|a| {
                server.store.lease(a.lease_id).unwrap().unwrap().worker_id == auth.worker_id
            })
            .map(|a| batched(a, fake(&a.kind)))
            .collect();
        if !mine.is_empty() {
            let _ = client.submit(auth, mine).await.unwrap();
        }
    }
    // An honest worker from another block gets work at once.
    let honest = RawClient::new(&server.url, Some("127.0.1.1".parse().unwrap()));
    let h = honest.register("honest").await.unwrap();
    let got = honest.fetch(&h, 8).await.unwrap();
    assert!(!got.is_empty());
    let liars: BTreeSet<u64> = held
        .iter()
        .map(|a| server.store.lease(a.lease_id).unwrap().unwrap().worker_id)
        .collect();
    assert_eq!(liars.len(), 5, "4 leases each until the block's 20");
    for (_, auth) in &sybils {
        let w = server.store.worker(auth.worker_id).unwrap().unwrap();
        assert_eq!(
            w.quarantined,
            liars.contains(&auth.worker_id),
            "a known-answer lie is evidence: {w:?}"
        );
    }
    for (client, auth) in sybils.iter().filter(|(_, a)| liars.contains(&a.worker_id)) {
        assert_eq!(client.fetch(auth, 8).await.unwrap_err().0, 403);
    }
    let p = &server.store.progress().unwrap()[0];
    assert_eq!(p.valid, 0);
}

/// Issue 31's lease hoarding: 480 identities from 48 address blocks (open enrolment, `serve`'s
/// registration limit of 10 per block) register and fetch all they can, twice, while an honest
/// worker from a block of its own starts at the same time. Without probation they held every
/// replica within a second. Now each identity in probation holds one lease, a block eight, and
/// all of them together a quarter of the campaign plus one per block that held none
/// (`trust::probation_room`); the honest worker gets its first workunit, answers it, and
/// completes every replica it is offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hoarders_from_48_blocks_leave_work_for_an_honest_newcomer() {
    use c960_coordinator::integrity::trust;
    const BLOCKS: usize = 48;
    const PER_BLOCK: usize = 10;
    let mut cfg = config(Integrity {
        probation_lease_cap: trust::PROBATION_LEASE_CAP,
        probation_block_cap: trust::PROBATION_BLOCK_CAP,
        probation_share_pct: trust::PROBATION_SHARE_PCT,
        draw_pool: c960_coordinator::work::transitioner::DRAW_POOL,
        ..Integrity::default()
    });
    cfg.limits.registrations_per_block = Rate::new(1.0 / 60.0, 10.0);
    let server = TestServer::start(cfg).await;
    let spec = NewCampaign::new(3, 2, None, (0..40).collect()).unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let began = Instant::now();
    let mut hoarders = Vec::new();
    for b in 0..BLOCKS {
        let url = server.url.clone();
        hoarders.push(tokio::spawn(async move {
            let mut held = Vec::new();
            for i in 0..PER_BLOCK {
                let ip: IpAddr = format!("127.60.{b}.{}", 1 + i).parse().unwrap();
                let client = RawClient::new(&url, Some(ip));
                let Ok(auth) = client.register(&format!("hoarder-{b}-{i}")).await else {
                    continue;
                };
                for _ in 0..2 {
                    let got = client.fetch(&auth, 64).await.unwrap_or_default();
                    held.extend(got.into_iter().map(|a| (b, auth.worker_id, a.lease_id)));
                }
            }
            held
        }));
    }
    // The honest worker, at the same time: fetch, compute, answer, until nothing is left for it.
    let honest = RawClient::new(&server.url, Some("127.0.0.1".parse().unwrap()));
    let h = honest.register("honest").await.unwrap();
    let (mut offered, mut completed, mut idle) = (0, 0, 0);
    let mut first_work = None;
    while began.elapsed() < Duration::from_secs(60) && idle < 20 {
        let got = honest.fetch(&h, 8).await.unwrap();
        if got.is_empty() {
            idle += if offered > 0 { 1 } else { 0 };
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        idle = 0;
        first_work.get_or_insert_with(|| began.elapsed());
        offered += got.len();
        let results = got.iter().map(c960_tests::honest_result).collect();
        let outcomes = honest.submit(&h, results).await.unwrap();
        completed += outcomes
            .iter()
            .filter(|o| matches!(o, BatchedOutcome::Accepted))
            .count();
    }
    let secs = began.elapsed().as_secs_f64();
    let mut held = Vec::new();
    for t in hoarders {
        held.extend(t.await.unwrap());
    }
    // A second fetch hands an identity its own open lease again: distinct leases count.
    let held: BTreeSet<(usize, u64, u64)> = held.into_iter().collect();
    let leases: BTreeSet<u64> = held.iter().map(|(_, _, l)| *l).collect();
    let (mut per_worker, mut per_block) = (BTreeMap::new(), BTreeMap::new());
    for (b, w, _) in &held {
        *per_worker.entry(*w).or_insert(0) += 1;
        *per_block.entry(*b).or_insert(0) += 1;
    }
    let share = 80 * trust::PROBATION_SHARE_PCT as usize / 100;
    println!(
        "hoard: {} identities, {} leases held ({} blocks holding, at most {} a block); honest: first work after {:.2} s, {offered} replicas offered, {completed} completed in {secs:.1} s",
        per_worker.len(),
        leases.len(),
        per_block.len(),
        per_block.values().max().copied().unwrap_or(0),
        first_work.map_or(f64::NAN, |d| d.as_secs_f64()),
    );
    assert!(
        per_worker.values().all(|&n| n <= 1),
        "one lease an identity"
    );
    assert!(
        per_block
            .values()
            .all(|&n| n <= trust::PROBATION_BLOCK_CAP as usize),
        "{per_block:?}"
    );
    assert!(
        leases.len() <= share + BLOCKS,
        "the hoarders hold {} of 80 replicas",
        leases.len()
    );
    assert!(offered > 0, "the honest worker got no work");
    assert_eq!(completed, offered, "every replica offered completed");
    assert!(
        idle >= 20,
        "the honest worker was still being offered work after 60 s"
    );
    let (_, rows) = server.store.table(c.id).unwrap();
    assert_eq!(rows.len(), 40);
}

/// Issue 31: registrations from many address blocks are throttled as a whole, not only per
/// block: with a burst of 5, the sixth identity from a sixth block is refused (429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_from_many_blocks_are_throttled_as_a_whole() {
    let mut cfg = config(Integrity::default());
    cfg.limits.registrations_total = Rate::new(1.0 / 3600.0, 5.0);
    let server = TestServer::start(cfg).await;
    let mut outcomes = Vec::new();
    for i in 0..8 {
        let ip: IpAddr = format!("127.0.{}.1", 10 + i).parse().unwrap();
        let client = RawClient::new(&server.url, Some(ip));
        outcomes.push(match client.register(&format!("id-{i}")).await {
            Ok(_) => "ok".to_string(),
            Err((status, code)) => format!("{status} {code}"),
        });
    }
    assert_eq!(outcomes[..5], ["ok"; 5]);
    assert!(
        outcomes[5..].iter().all(|o| o == "429 rate_limited"),
        "{outcomes:?}"
    );
}
