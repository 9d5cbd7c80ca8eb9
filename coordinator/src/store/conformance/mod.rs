//! The conformance suite: the store's behaviour (assignment, quorum, reissue, expiry,
//! quarantine and re-verification, batches, counters, migrations from an empty database, two
//! stores on one database at once) as generic functions, run against every backend by
//! [`conformance!`]. SQLite runs in a temporary file; PostgreSQL in a schema of its own per test
//! on the server named by `C960_TEST_POSTGRES` (see [`postgres_store`]).

use crate::model::{
    Campaign, CheckOutcome, ReplicaState, ResultOutcome, RowStatus, StoreError, Submission,
    TrustLevel,
};
use std::collections::BTreeSet;

use c960_common::wire::{Capabilities, PerftResult, WorkResult};

pub(crate) mod boinc;
pub(crate) mod credit;
pub(crate) mod disputes;
mod integrity;
mod quarantine;

use crate::integrity::trust::Integrity;
use crate::store::codes::db_to_u64;
use crate::store::db::{Backend, params};
use crate::store::postgres::{Clock, PgOptions, PgStore};
use crate::store::{SqliteStore, Store};
use crate::work::campaign::NewCampaign;
pub(crate) use boinc::{
    a_boinc_host_is_found_within_its_account_by_id_or_cpid_never_across,
    a_registration_writes_its_trust_and_build_with_the_worker,
    boinc_credit_sums_the_hosts_and_the_accounts_validated_nodes,
    registering_a_boinc_host_spends_its_token_and_its_hosts_are_one_party,
};
pub(crate) use credit::credit_columns_equal_the_sum_over_results_through_quarantine_and_restoration;
pub(crate) use disputes::{
    a_dispute_finds_a_wrong_count_plies_down_and_convicts_only_the_liar,
    a_dispute_is_lost_by_contradicting_ones_own_claim, a_dispute_is_lost_by_silence,
    a_value_reopened_two_against_two_at_the_cap_is_decided_by_disputes,
    spare_capacity_reverifies_and_a_disagreement_convicts_the_pair,
    two_honest_sides_of_a_dispute_are_both_cleared,
};
pub(crate) use integrity::{
    a_missed_known_total_keeps_a_queued_check_that_then_quarantines_the_liars,
    a_missed_known_total_recounts_a_value_whose_check_was_over_budget,
    a_split_start_that_misses_its_known_total_is_recounted,
    a_verified_check_overturns_a_valid_lie_with_quarantine_off,
    griefing_untrusted_results_at_the_cap_never_fail_a_workunit,
    probation_caps_leave_work_for_newcomers_and_answering_workers,
    trust_takes_time_and_giving_work_back_costs_it,
    unanchored_agreements_wait_for_their_workers_trust,
    without_a_crowd_an_unanchored_agreement_is_checked_at_once,
};
pub(crate) use quarantine::{
    a_recount_of_a_value_reopened_meanwhile_overturns_nothing,
    a_resplit_recount_overturns_a_lie_of_two_trusted_colluders,
    an_overturned_check_lifts_the_quarantine_of_the_worker_that_told_the_truth,
    ban_releases_leases_and_unban_forgives, quarantine_reopens_what_the_worker_held_at_the_cap,
    quarantine_reopens_what_the_worker_validated,
};

pub(crate) const ALL: Capabilities = Capabilities {
    perft: true,
    builtin_analysis: true,
    uci_analysis: true,
    self_play: true,
};

/// A SQLite store in a temporary directory.
pub(crate) fn sqlite_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
    (dir, s)
}

/// The PostgreSQL server the tests use, from `C960_TEST_POSTGRES`
/// (`postgres://user@127.0.0.1:port/database`). Unset: the PostgreSQL tests are skipped with a
/// loud message, except under CI (`CI` set), where they fail.
pub fn postgres_url() -> Option<String> {
    match std::env::var("C960_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "CI is set but C960_TEST_POSTGRES is not: the PostgreSQL tests must run under CI"
            )
        }
        _ => {
            eprintln!(
                "SKIPPED: PostgreSQL test (set C960_TEST_POSTGRES=postgres://user@127.0.0.1:PORT/DB to run it)"
            );
            None
        }
    }
}

/// A PostgreSQL store in a fresh schema named after the test (dropped first if a previous run
/// left it), with the caller's clock so that tests can play with time as on SQLite.
pub(crate) fn postgres_store(test: &str) -> Option<PgStore> {
    let url = postgres_url()?;
    let schema = format!("t_{test}");
    let mut c =
        postgres::Client::connect(&url, postgres::NoTls).expect("connect to C960_TEST_POSTGRES");
    c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .unwrap();
    Some(postgres_store_in(&url, &schema))
}

/// A second store on the schema of [`postgres_store`] (a second coordinator).
pub(crate) fn postgres_store_in(url: &str, schema: &str) -> PgStore {
    PgStore::open_with(
        url,
        &PgOptions {
            pool_size: 4,
            schema: Some(schema.to_string()),
            clock: Clock::Caller,
            // The strictest gate: a store call that opened a second writing transaction while
            // its first was open would wait for itself, and the suite would hang here.
            writers: 1,
        },
    )
    .unwrap()
}

pub(crate) fn sub(nodes: u64, tag: u8) -> Submission {
    Submission {
        result: WorkResult::Perft(PerftResult {
            nodes,
            divide: vec![],
        }),
        digest: [tag; 32],
        elapsed_ms: 1,
        engine: "test 0".into(),
        implausible: false,
    }
}

type Counts = Vec<(u64, u64, u64, u64, u64, u128, u128)>;

/// The progress of every campaign by scanning the tables: what the counters must equal.
pub(crate) fn recount<S: Backend>(s: &S) -> Counts {
    s.with_conn(&mut |tx| {
        let ids: Vec<i64> = tx
            .query("SELECT id FROM campaigns ORDER BY id", params![])?
            .iter()
            .map(|r| r.i64(0))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for id in ids {
            let q = |sql: &str| -> u64 { tx.query_one(sql, params![id]).unwrap().u64(0).unwrap() };
            let nodes = |sql: &str| -> u128 {
                tx.query(sql, params![id])
                    .unwrap()
                    .iter()
                    .map(|r| u128::from(db_to_u64(r.i64(0).unwrap())))
                    .sum()
            };
            out.push((
                q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1"),
                q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1 AND state = 1"),
                q("SELECT COUNT(*) FROM workunits WHERE campaign_id = ?1 AND state = 2"),
                q("SELECT CAST(COALESCE(SUM(needed), 0) AS BIGINT) FROM workunits WHERE campaign_id = ?1 AND state = 0"),
                q("SELECT COUNT(*) FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = ?1 AND r.state = 0"),
                nodes("SELECT nodes FROM workunits WHERE campaign_id = ?1 AND state = 1"),
                nodes("SELECT r.nodes FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE w.campaign_id = ?1 AND r.state = 1"),
            ));
        }
        Ok(out)
    })
    .unwrap()
}

/// The counters as progress reports them.
pub(crate) fn counters<S: Store>(s: &S) -> Counts {
    s.progress()
        .unwrap()
        .into_iter()
        .map(|p| {
            (
                p.total,
                p.valid,
                p.failed,
                p.queued_replicas,
                p.in_flight,
                p.nodes_valid,
                p.nodes_computed,
            )
        })
        .collect()
}

/// Depth 10 has no public answer (`crate::work::known` ships depths 1–9), so only trust or a check
/// can anchor a value.
pub(crate) fn unknown_campaign<S: Store>(s: &S, positions: Vec<u16>) -> Campaign {
    s.create_campaign(&NewCampaign::new(10, 2, None, positions).unwrap(), 0)
        .unwrap()
}

/// An empty database gets every migration: the schema works at once, and opening it again
/// changes nothing.
pub(crate) fn migrations_from_an_empty_database<S: Backend>(s: &S) {
    let p = s.progress().unwrap();
    assert!(p.is_empty());
    let c = s
        .create_campaign(&NewCampaign::new(1, 1, None, vec![0, 518]).unwrap(), 0)
        .unwrap();
    assert_eq!(s.campaigns().unwrap(), vec![c]);
    assert_eq!(counters(s), recount(s));
}

/// One campaign's progress is its row of every campaign's, counters and all, read from its own
/// counters; an unknown campaign is `UnknownCampaign`.
pub(crate) fn one_campaigns_progress_is_its_row_of_all<S: Backend>(s: &S) {
    let a = s
        .create_campaign(&NewCampaign::new(2, 2, None, vec![0, 1, 2]).unwrap(), 0)
        .unwrap();
    let b = s
        .create_campaign(&NewCampaign::new(3, 1, None, vec![518]).unwrap(), 0)
        .unwrap();
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let lease = s.assign(w, &ALL, 1, 1000).unwrap().unwrap();
    s.submit(w, lease.lease_id, &sub(400, 1), 2).unwrap();
    let all = s.progress().unwrap();
    for c in [&a, &b] {
        let one = s.campaign_progress(c.id).unwrap();
        assert_eq!(Some(&one), all.iter().find(|p| p.campaign.id == c.id));
    }
    assert!(all.iter().any(|p| p.nodes_computed > 0), "{all:?}");
    assert!(matches!(
        s.campaign_progress(b.id + 1),
        Err(StoreError::UnknownCampaign(_))
    ));
}

/// Two stores on one database (two coordinators), workers split between them: every replica
/// goes to one worker once, every workunit is validated once, and the counters agree with a
/// recount.
pub(crate) fn two_stores_on_one_database<S: Backend>(a: &S, b: &S) {
    let c = a
        .create_campaign(&NewCampaign::new(2, 2, None, (0..40).collect()).unwrap(), 0)
        .unwrap();
    let workers: Vec<u64> = (0..6)
        .map(|i| a.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
        .collect();
    for &w in &workers {
        a.set_trust(w, true).unwrap();
    }
    std::thread::scope(|scope| {
        for (i, &w) in workers.iter().enumerate() {
            let s: &S = if i % 2 == 0 { a } else { b };
            scope.spawn(move || {
                for round in 0..2_000 {
                    let leases = s.assign_batch(w, &ALL, round, 1_000_000, 4, 0).unwrap();
                    if leases.is_empty() {
                        // Nothing free now: either all is handed out, or the other store holds
                        // row locks this one skipped (SKIP LOCKED). Done only when complete.
                        let (_, rows) = s.table(c.id).unwrap();
                        if rows.iter().all(|r| r.status == RowStatus::Valid) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        continue;
                    }
                    let settle: Vec<_> = leases
                        .iter()
                        .map(|l| crate::model::Settlement::Store {
                            lease_id: l.lease_id,
                            submission: sub(l.workunit_id * 7, (l.workunit_id % 251) as u8),
                        })
                        .collect();
                    for r in s.settle(w, &settle, round).unwrap() {
                        r.unwrap();
                    }
                }
            });
        }
    });
    let (_, rows) = b.table(c.id).unwrap();
    assert_eq!(rows.len(), 40);
    for r in &rows {
        assert_eq!(
            (r.status.as_str(), r.agreeing_results),
            ("valid", 2),
            "{r:?}"
        );
        let results = a.results(r.workunit_id).unwrap();
        let holders: BTreeSet<u64> = results.iter().map(|x| x.worker_id).collect();
        assert_eq!(
            holders.len(),
            results.len(),
            "one replica per worker: {results:?}"
        );
        assert_eq!(
            results
                .iter()
                .filter(|x| x.outcome == ResultOutcome::Valid)
                .count(),
            2
        );
    }
    let valid: u64 = workers
        .iter()
        .map(|&w| a.worker(w).unwrap().unwrap().valid)
        .sum();
    assert_eq!(valid, 80, "every agreeing result credited once");
    assert_eq!(counters(a), recount(b));
}

pub(crate) fn disagreement_up_to_the_cap_waits_for_the_coordinators_count<S: Backend>(s: &S) {
    let c = s
        .create_campaign(&NewCampaign::new(2, 2, Some(3), vec![518]).unwrap(), 0)
        .unwrap();
    // Trusted workers that cannot agree stop the replicas at the cap (untrusted ones hand it to
    // trusted workers instead: griefing_untrusted_results_at_the_cap_never_fail_a_workunit).
    let w: Vec<u64> = (0..4)
        .map(|i| {
            let w = s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap();
            s.set_trust(w, true).unwrap();
            w
        })
        .collect();
    let l0 = s.assign(w[0], &ALL, 1, 1000).unwrap().unwrap();
    assert_eq!(
        s.assign(w[0], &ALL, 1, 1000).unwrap().unwrap(),
        l0,
        "fetching again hands back the open lease, never a second replica"
    );
    let l1 = s.assign(w[1], &ALL, 1, 1000).unwrap().unwrap();
    assert!(
        s.assign(w[2], &ALL, 1, 1000).unwrap().is_none(),
        "more replicas than the quorum"
    );
    s.submit(w[0], l0.lease_id, &sub(400, 1), 2).unwrap();
    s.submit(w[1], l1.lease_id, &sub(401, 2), 2).unwrap();
    let l2 = s
        .assign(w[2], &ALL, 3, 1000)
        .unwrap()
        .expect("disagreement sends one more");
    s.submit(w[2], l2.lease_id, &sub(402, 3), 4).unwrap();
    assert!(
        s.assign(w[3], &ALL, 5, 1000).unwrap().is_none(),
        "cap reached"
    );
    // A contested perft value is not given up at the cap: the coordinator's count (queued at
    // the first disagreement) decides it, or a dispute where it is over the budget.
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!((rows[0].status.as_str(), rows[0].nodes), ("open", None));
    let wanted = s.checks_wanted(8).unwrap();
    assert_eq!(wanted.len(), 1);
    let count = CheckOutcome::Verified {
        digest: [1; 32],
        nodes: 400,
    };
    s.record_check(wanted[0].workunit_id, &count, 5).unwrap();
    // The two it proved wrong are quarantined; one more replica agreeing with it settles it.
    let l3 = s.assign(w[3], &ALL, 6, 1000).unwrap().expect("one more");
    s.submit(w[3], l3.lease_id, &sub(400, 1), 7).unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(
        (rows[0].status.as_str(), rows[0].nodes),
        ("valid", Some(400))
    );
    assert!(matches!(
        s.submit(w[0], l0.lease_id, &sub(400, 1), 8),
        Err(StoreError::LeaseClosed(..))
    ));
}
pub(crate) fn expired_lease_is_reissued_and_late_result_refused<S: Backend>(s: &S) {
    let c = s
        .create_campaign(&NewCampaign::new(2, 2, None, vec![0]).unwrap(), 0)
        .unwrap();
    let w: Vec<u64> = (0..3)
        .map(|i| s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
        .collect();
    let l0 = s.assign(w[0], &ALL, 0, 100).unwrap().unwrap();
    let l1 = s.assign(w[1], &ALL, 0, 100).unwrap().unwrap();
    assert!(s.assign(w[2], &ALL, 50, 100).unwrap().is_none());
    let l2 = s
        .assign(w[2], &ALL, 101, 100)
        .unwrap()
        .expect("expired replicas are reissued");
    assert!(matches!(
        s.submit(w[0], l0.lease_id, &sub(400, 1), 102),
        Err(StoreError::LeaseExpired(_))
    ));
    // The expired holder may take it up again (it never returned a result).
    let again = s.assign(w[0], &ALL, 103, 100).unwrap().unwrap();
    assert_eq!(again.workunit_id, l0.workunit_id);
    s.submit(w[2], l2.lease_id, &sub(400, 1), 104).unwrap();
    s.submit(w[0], again.lease_id, &sub(400, 1), 105).unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(
        (
            rows[0].status.as_str(),
            rows[0].nodes,
            rows[0].agreeing_results
        ),
        ("valid", Some(400), 2)
    );
    assert!(
        s.results(l1.workunit_id)
            .unwrap()
            .iter()
            .any(|r| r.id == l1.lease_id && r.state == ReplicaState::Expired)
    );
    assert_eq!(s.worker(w[0]).unwrap().unwrap().valid, 1);
}
pub(crate) fn progress_counters_equal_a_full_recount_through_every_transition<S: Backend>(s: &S) {
    s.create_campaign(
        &NewCampaign::new(2, 2, Some(3), vec![0, 1, 2, 518]).unwrap(),
        0,
    )
    .unwrap();
    s.create_campaign(&NewCampaign::new(3, 1, None, vec![5]).unwrap(), 0)
        .unwrap();
    assert_eq!(counters(s), recount(s));
    let w: Vec<u64> = (0..4)
        .map(|i| s.register_worker(&format!("w{i}"), b"h", "e", 0).unwrap())
        .collect();
    // Node counts above 2^32 and 2^40 exercise the split of the sums.
    let big = (1u64 << 40) + 12_345;
    let a = s.assign_batch(w[0], &ALL, 1, 1000, 8, 0).unwrap();
    let b = s.assign_batch(w[1], &ALL, 1, 1000, 8, 0).unwrap();
    assert_eq!(counters(s), recount(s));
    for (i, l) in a.iter().enumerate() {
        s.submit(w[0], l.lease_id, &sub(big + i as u64, i as u8), 2)
            .unwrap();
    }
    assert_eq!(counters(s), recount(s));
    // Worker 1 agrees on some, disagrees on one, refuses one and abandons one.
    for (i, l) in b.iter().enumerate() {
        match i {
            0 => s.submit(w[1], l.lease_id, &sub(big, 0), 3).unwrap(),
            1 => s.submit(w[1], l.lease_id, &sub(7, 99), 3).unwrap(),
            2 => s.refuse(w[1], l.lease_id, "digest mismatch", 3).unwrap(),
            _ => s.abandon(w[1], l.lease_id, 3).unwrap(),
        }
    }
    assert_eq!(counters(s), recount(s));
    // A lease that expires, and a ban that reopens what the banned worker validated.
    let c = s.assign_batch(w[2], &ALL, 4, 10, 8, 0).unwrap();
    assert!(!c.is_empty());
    s.expire_leases(100).unwrap();
    assert_eq!(counters(s), recount(s));
    s.set_banned(w[1], true, 101).unwrap();
    assert_eq!(counters(s), recount(s));
    let p = s.progress().unwrap();
    assert!(
        p.iter()
            .any(|p| p.valid > 0 || p.nodes_computed > u128::from(big))
    );
}

pub(crate) fn progress_counters_are_exact_for_node_counts_of_2_to_the_63_and_more<S: Backend>(
    s: &S,
) {
    let c = s
        .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1, 2]).unwrap(), 0)
        .unwrap();
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let leases = s.assign_batch(w, &ALL, 1, 1000, 8, 0).unwrap();
    let counts = [u64::MAX, 1 << 63, (1 << 63) - 1];
    for (l, n) in leases.iter().zip(counts) {
        s.submit(w, l.lease_id, &sub(n, 1), 2).unwrap();
    }
    let want: u128 = counts.iter().map(|&n| u128::from(n)).sum();
    let p = s
        .progress()
        .unwrap()
        .into_iter()
        .find(|p| p.campaign.id == c.id);
    let p = p.unwrap();
    assert_eq!((p.valid, p.nodes_valid, p.nodes_computed), (3, want, want));
    assert_eq!(counters(s), recount(s));
    // Voiding them (a ban reopens what the worker validated) subtracts them exactly.
    s.set_banned(w, true, 3).unwrap();
    assert_eq!(counters(s), recount(s));
    assert_eq!(s.progress().unwrap()[0].nodes_valid, 0);
}

pub(crate) fn a_batch_assign_respects_the_lease_cap_in_its_transaction<S: Backend>(s: &S) {
    // Ordinary workunits, a lease each against the cap (tiny ones weigh less: handout::lease_weight).
    s.create_campaign(&NewCampaign::new(5, 1, None, (0..10).collect()).unwrap(), 0)
        .unwrap();
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    s.set_trust(w, true).unwrap();
    let first = s.assign_batch(w, &ALL, 1, 1000, 8, 5).unwrap();
    assert_eq!(first.len(), 5, "capped at 5 open leases");
    let ids: std::collections::BTreeSet<u64> = first.iter().map(|l| l.workunit_id).collect();
    assert_eq!(ids.len(), 5, "distinct workunits");
    // Fetching again at the cap hands back the open leases (a crashed worker recovers
    // them), never more.
    assert_eq!(s.assign_batch(w, &ALL, 2, 1000, 8, 5).unwrap(), first);
    s.submit(w, first[0].lease_id, &sub(400, 1), 3).unwrap();
    let again = s.assign_batch(w, &ALL, 4, 1000, 8, 5).unwrap();
    assert_eq!(again.len(), 5);
    assert_eq!(again[..4], first[1..]);
    assert!(!ids.contains(&again[4].workunit_id));
    // Only kinds the worker accepts come back; with none open of those, the cap refuses.
    let analysis_only = Capabilities {
        perft: false,
        builtin_analysis: true,
        uci_analysis: false,
        self_play: false,
    };
    assert!(matches!(
        s.assign_batch(w, &analysis_only, 5, 1000, 8, 5),
        Err(StoreError::LeaseLimit {
            open: 5,
            cap: 5,
            ..
        })
    ));
}
pub(crate) fn unanchored_agreement_waits_for_a_trusted_worker_or_a_check<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        ..Integrity::default()
    })
    .unwrap();
    let c = unknown_campaign(s, vec![0, 1]);
    let [a, b, u, t] = ["a", "b", "u", "t"].map(|n| s.register_worker(n, b"h", "e", 0).unwrap());
    s.set_trust(t, true).unwrap();
    // Two untrusted workers agree on workunit 1: not valid, reserved for trusted workers,
    // and queued for the coordinator's check.
    let la = s.assign(a, &ALL, 1, 1000).unwrap().unwrap();
    let lb = s.assign(b, &ALL, 1, 1000).unwrap().unwrap();
    assert_eq!(la.workunit_id, lb.workunit_id);
    s.submit(a, la.lease_id, &sub(7, 7), 2).unwrap();
    s.submit(b, lb.lease_id, &sub(7, 7), 2).unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Open);
    assert_eq!(s.checks_wanted(10).unwrap()[0].workunit_id, la.workunit_id);
    let lu = s.assign(u, &ALL, 3, 1000).unwrap().unwrap();
    assert_ne!(lu.workunit_id, la.workunit_id, "untrusted U skips it");
    // A trusted worker that agrees anchors it.
    let lt = s.assign(t, &ALL, 3, 1000).unwrap().unwrap();
    assert_eq!(lt.workunit_id, la.workunit_id);
    s.submit(t, lt.lease_id, &sub(7, 7), 4).unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!((rows[0].status.as_str(), rows[0].nodes), ("valid", Some(7)));
    // Workunit 2: the coordinator's check anchors an untrusted agreement, and the check is
    // graded: both pass.
    let lb2 = s.assign(b, &ALL, 5, 1000).unwrap().unwrap();
    s.submit(u, lu.lease_id, &sub(9, 9), 5).unwrap();
    s.submit(b, lb2.lease_id, &sub(9, 9), 5).unwrap();
    s.record_check(
        lu.workunit_id,
        &CheckOutcome::Verified {
            digest: [9; 32],
            nodes: 9,
        },
        6,
    )
    .unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(rows[1].status, RowStatus::Valid);
    assert_eq!(s.worker(u).unwrap().unwrap().checks_passed, 1);
    let cost = s.check_cost().unwrap();
    // Workunit 1's check still waits: valid through T, it is still evidence about A and B.
    assert_eq!(
        (cost.checks_run, cost.check_nodes, cost.checks_waiting),
        (1, 9, 1)
    );
    assert!((cost.replicas_per_valid_workunit - 2.5).abs() < 1e-9);
}
pub(crate) fn trust_is_earned_by_checks_and_lost_with_the_standing_on_a_failed_one<S: Backend>(
    s: &S,
) {
    s.set_max_strikes(3).unwrap();
    s.set_integrity(&Integrity {
        trust_after_checks: 2,
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        ..Integrity::default()
    })
    .unwrap();
    let c = unknown_campaign(s, vec![0, 1, 2]);
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let v = s.register_worker("v", b"h", "e", 0).unwrap();
    let ls = s.assign_batch(w, &ALL, 1, 1000, 3, 0).unwrap();
    assert_eq!(ls.len(), 3);
    for (i, l) in ls.iter().enumerate() {
        s.submit(w, l.lease_id, &sub(i as u64, i as u8), 2).unwrap();
    }
    let check = |wu: u64, d: u8| {
        s.record_check(
            wu,
            &CheckOutcome::Verified {
                digest: [d; 32],
                nodes: 1,
            },
            3,
        )
        .unwrap()
    };
    check(ls[0].workunit_id, 0);
    assert_eq!(s.worker(w).unwrap().unwrap().trust, TrustLevel::Untrusted);
    check(ls[1].workunit_id, 1);
    let rec = s.worker(w).unwrap().unwrap();
    assert_eq!((rec.trust, rec.checks_passed), (TrustLevel::Earned, 2));
    // Trusted now, until it fails a check: trust and standing go at once.
    check(ls[2].workunit_id, 99);
    let rec = s.worker(w).unwrap().unwrap();
    assert_eq!(
        (rec.trust, rec.checks_failed, rec.quarantined),
        (TrustLevel::Untrusted, 1, true)
    );
    assert!(matches!(
        s.assign(w, &ALL, 4, 1000),
        Err(StoreError::NotInGoodStanding { banned: false, .. })
    ));
    // With quorum 2 nothing was valid on W's results alone; V still works.
    assert!(s.assign(v, &ALL, 5, 1000).unwrap().is_some());
    let (_, rows) = s.table(c.id).unwrap();
    assert!(
        rows.iter().all(|r| r.status != RowStatus::Valid),
        "{rows:?}"
    );
}
pub(crate) fn untrusted_lease_cap_block_separation_and_block_cap<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        block_lease_cap: 6,
        ..Integrity::default()
    })
    .unwrap();
    unknown_campaign(s, (0..20).collect());
    let reg = |n: &str, b: &str| s.register_worker_from(n, b"h", "e", Some(b), 0).unwrap();
    let [a1, a2, a3] = ["a1", "a2", "a3"].map(|n| reg(n, "198.51.100.0/24"));
    let b1 = reg("b1", "203.0.113.0/24");
    let fetch = |w: u64, block: &str| {
        s.assign_from(w, &ALL, 1, 1000, 16, 64, Some(block))
            .unwrap()
    };
    let la1 = fetch(a1, "198.51.100.0/24");
    assert_eq!(la1.len(), 4, "an untrusted worker holds 4 leases");
    let la2 = fetch(a2, "198.51.100.0/24");
    assert_eq!(la2.len(), 2, "the block holds 6 at most");
    let ids1: BTreeSet<u64> = la1.iter().map(|l| l.workunit_id).collect();
    assert!(
        la2.iter().all(|l| !ids1.contains(&l.workunit_id)),
        "no two workers of one block on one workunit"
    );
    assert!(fetch(a3, "198.51.100.0/24").is_empty());
    // Another block gets the replicas the first block holds.
    let lb = fetch(b1, "203.0.113.0/24");
    assert_eq!(lb.len(), 4);
    assert!(lb.iter().all(|l| ids1.contains(&l.workunit_id)));
    // Moving to another address does not escape the block it registered from.
    let la3 = fetch(a3, "192.0.2.0/24");
    assert!(la3.iter().all(|l| !ids1.contains(&l.workunit_id)));
}
/// The default separates public blocks only: two workers of one loopback or private block pair
/// on one workunit and are not held to the block's cap; `Everywhere` keeps them apart.
pub(crate) fn local_blocks_pair_by_default<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        block_lease_cap: 1,
        untrusted_lease_cap: 0,
        ..Integrity::default()
    })
    .unwrap();
    unknown_campaign(s, (0..4).collect());
    let reg = |n: &str, b: &str| s.register_worker_from(n, b"h", "e", Some(b), 0).unwrap();
    let fetch = |w: u64, block: &str| {
        s.assign_from(w, &ALL, 1, 1000, 16, 64, Some(block))
            .unwrap()
    };
    for block in ["127.0.0.0/24", "192.168.7.0/24"] {
        let [a, b] = ["a", "b"].map(|n| reg(n, block));
        let (la, lb) = (fetch(a, block), fetch(b, block));
        assert_eq!(
            (la.len(), lb.len()),
            (4, 4),
            "{block}: no block cap, no separation"
        );
        let ids =
            |l: &[crate::model::Lease]| l.iter().map(|l| l.workunit_id).collect::<BTreeSet<u64>>();
        assert_eq!(
            ids(&la),
            ids(&lb),
            "{block}: both replicas of each workunit"
        );
        for (w, l) in la.iter().map(|l| (a, l)).chain(lb.iter().map(|l| (b, l))) {
            s.abandon(w, l.lease_id, 2).unwrap();
        }
    }
    s.set_integrity(&Integrity {
        address_separation: crate::integrity::trust::AddressSeparation::Everywhere,
        untrusted_lease_cap: 0,
        block_lease_cap: 0,
        ..Integrity::default()
    })
    .unwrap();
    let [a, b] = ["c", "d"].map(|n| reg(n, "10.1.1.0/24"));
    let la = fetch(a, "10.1.1.0/24");
    assert_eq!(la.len(), 4);
    assert!(
        fetch(b, "10.1.1.0/24").is_empty(),
        "everywhere: one private block is one party"
    );
}
/// Instantiates every conformance function for SQLite and PostgreSQL.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite_backend {
            $(
                #[test]
                fn $name() {
                    let (_dir, s) = super::sqlite_store();
                    super::$name(&s);
                }
            )*
            #[test]
            fn two_stores_on_one_database() {
                let (dir, a) = super::sqlite_store();
                let b = crate::store::SqliteStore::open(&dir.path().join("t.db")).unwrap();
                super::two_stores_on_one_database(&a, &b);
            }
        }
        mod postgres_backend {
            $(
                #[test]
                fn $name() {
                    if let Some(s) = super::postgres_store(stringify!($name)) {
                        super::$name(&s);
                    }
                }
            )*
            #[test]
            fn two_stores_on_one_database() {
                if let Some(a) = super::postgres_store("two_stores") {
                    let url = super::postgres_url().unwrap();
                    let b = super::postgres_store_in(&url, "t_two_stores");
                    super::two_stores_on_one_database(&a, &b);
                }
            }
        }
    };
}

conformance!(
    migrations_from_an_empty_database,
    a_registration_writes_its_trust_and_build_with_the_worker,
    one_campaigns_progress_is_its_row_of_all,
    disagreement_up_to_the_cap_waits_for_the_coordinators_count,
    griefing_untrusted_results_at_the_cap_never_fail_a_workunit,
    a_split_start_that_misses_its_known_total_is_recounted,
    a_missed_known_total_keeps_a_queued_check_that_then_quarantines_the_liars,
    a_missed_known_total_recounts_a_value_whose_check_was_over_budget,
    a_verified_check_overturns_a_valid_lie_with_quarantine_off,
    trust_takes_time_and_giving_work_back_costs_it,
    probation_caps_leave_work_for_newcomers_and_answering_workers,
    expired_lease_is_reissued_and_late_result_refused,
    progress_counters_equal_a_full_recount_through_every_transition,
    progress_counters_are_exact_for_node_counts_of_2_to_the_63_and_more,
    a_batch_assign_respects_the_lease_cap_in_its_transaction,
    unanchored_agreement_waits_for_a_trusted_worker_or_a_check,
    unanchored_agreements_wait_for_their_workers_trust,
    without_a_crowd_an_unanchored_agreement_is_checked_at_once,
    trust_is_earned_by_checks_and_lost_with_the_standing_on_a_failed_one,
    untrusted_lease_cap_block_separation_and_block_cap,
    local_blocks_pair_by_default,
    quarantine_reopens_what_the_worker_validated,
    ban_releases_leases_and_unban_forgives,
    quarantine_reopens_what_the_worker_held_at_the_cap,
    an_overturned_check_lifts_the_quarantine_of_the_worker_that_told_the_truth,
    a_resplit_recount_overturns_a_lie_of_two_trusted_colluders,
    a_recount_of_a_value_reopened_meanwhile_overturns_nothing,
    credit_columns_equal_the_sum_over_results_through_quarantine_and_restoration,
    a_boinc_host_is_found_within_its_account_by_id_or_cpid_never_across,
    registering_a_boinc_host_spends_its_token_and_its_hosts_are_one_party,
    boinc_credit_sums_the_hosts_and_the_accounts_validated_nodes,
    a_dispute_finds_a_wrong_count_plies_down_and_convicts_only_the_liar,
    a_dispute_is_lost_by_silence,
    a_dispute_is_lost_by_contradicting_ones_own_claim,
    two_honest_sides_of_a_dispute_are_both_cleared,
    spare_capacity_reverifies_and_a_disagreement_convicts_the_pair,
    a_value_reopened_two_against_two_at_the_cap_is_decided_by_disputes,
);
