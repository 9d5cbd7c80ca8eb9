//! The SQLite store's own tests (its files, its connections, its migrations); the behaviour
//! both backends share is tested in [`crate::store::conformance`].

use super::*;
use crate::integrity::trust::Integrity;
use crate::model::{Lease, StoreError};
use crate::store::Store;
use crate::store::conformance::credit as conformance_credit;
use crate::store::conformance::{self, ALL, counters, recount, sub};
use crate::work::campaign::NewCampaign;
use c960_common::wire::{PositionSpec, WorkUnitKind};

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
    (dir, s)
}

#[test]
fn reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let s = SqliteStore::open(&path).unwrap();
    let spec = NewCampaign::new(1, 1, None, vec![1, 2]).unwrap();
    let c = s.create_campaign(&spec, 0).unwrap();
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let l = s.assign(w, &ALL, 0, 100).unwrap().unwrap();
    s.submit(w, l.lease_id, &sub(20, 9), 1).unwrap();
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.find_campaign(&spec).unwrap(), Some(c.clone()));
    let p = &s.progress().unwrap()[0];
    assert_eq!((p.total, p.valid, p.nodes_valid), (2, 1, 20));
}

#[test]
fn counters_survive_reopening_and_migration_5_fills_them_in() {
    let (_d, s) = store();
    conformance::progress_counters_equal_a_full_recount_through_every_transition(&s);
    // Reopening keeps the counters too.
    let path = _d.path().join("t.db");
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(counters(&s), recount(&s));
    // A database from before the counters (schema 4) gets them filled in by the migration.
    s.lock()
        .unwrap()
        .execute_batch(
            "DROP INDEX workunits_waiting; ALTER TABLE workers DROP COLUMN trust_check_asked_ms;
             DROP TRIGGER result_minute; DROP TABLE worker_minutes; DROP TABLE program_versions; DROP INDEX workunits_numbers;
             DROP INDEX workunits_audit_replicas;
             DROP TRIGGER workunit_counts; DROP TRIGGER result_issued; DROP TRIGGER result_counts;
             DROP TABLE campaign_counts;
             DROP INDEX workers_last_block; DROP INDEX workunits_checks; DROP INDEX workunits_resplits; DROP INDEX workunits_audits; DROP INDEX workunits_unaudited;
             ALTER TABLE workers DROP COLUMN trusted; ALTER TABLE workers DROP COLUMN checks_passed;
             ALTER TABLE workers DROP COLUMN checks_failed; ALTER TABLE workers DROP COLUMN reg_block;
             ALTER TABLE workers DROP COLUMN last_block; ALTER TABLE workunits DROP COLUMN known_nodes;
             ALTER TABLE workunits DROP COLUMN check_state; ALTER TABLE workunits DROP COLUMN verified_digest;
             ALTER TABLE workunits DROP COLUMN trusted_only; ALTER TABLE workunits DROP COLUMN reverify;
             ALTER TABLE results DROP COLUMN checked;
             ALTER TABLE campaigns DROP COLUMN family; ALTER TABLE workunits DROP COLUMN family_number;
             DROP INDEX workunits_ready_by_campaign; ALTER TABLE campaigns DROP COLUMN name; ALTER TABLE campaigns DROP COLUMN priority; ALTER TABLE campaigns DROP COLUMN status;
             DROP INDEX workers_enrolment_token; ALTER TABLE workers DROP COLUMN enrolment_token;
             DROP TABLE enrolment_tokens; DROP TRIGGER result_credit; DROP INDEX workers_credit;
             ALTER TABLE workers DROP COLUMN credit_results; ALTER TABLE workers DROP COLUMN credit_nodes_hi;
             ALTER TABLE workers DROP COLUMN credit_nodes_lo;
             ALTER TABLE campaigns DROP COLUMN games; ALTER TABLE campaigns DROP COLUMN move_nodes;
             ALTER TABLE workunits DROP COLUMN games; ALTER TABLE workunits DROP COLUMN move_nodes;
             DROP INDEX results_open_by_worker;
             ALTER TABLE results DROP COLUMN hard_deadline_ms; ALTER TABLE campaigns DROP COLUMN stall_cause;
             ALTER TABLE campaigns DROP COLUMN stall_replicas; ALTER TABLE campaigns DROP COLUMN stall_ms;
             ALTER TABLE workunits DROP COLUMN audit_replicas;
             ALTER TABLE workers DROP COLUMN trust_checks; ALTER TABLE workers DROP COLUMN trust_check_ms; ALTER TABLE workers DROP COLUMN gave_back;
             ALTER TABLE workers DROP COLUMN build;
             DROP INDEX workers_boinc_host; ALTER TABLE workers DROP COLUMN boinc_account; ALTER TABLE workers DROP COLUMN boinc_cpid;
             DROP TABLE challenges; DROP TABLE disputes;
             CREATE INDEX workunits_ready ON workunits(id) WHERE state = 0 AND needed > 0;
             PRAGMA user_version = 4;",
        )
        .unwrap();
    let before = recount(&s);
    drop(s);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(counters(&s), before);
}

#[test]
fn migration_7_recounts_node_sums_of_2_to_the_63_and_more() {
    let (d, s) = store();
    conformance::progress_counters_are_exact_for_node_counts_of_2_to_the_63_and_more(&s);
    // A database counted by the old triggers (schema 6, before migration 7 masked them) is
    // recounted by the migration (the family columns go too, so migration 8 runs again).
    s.lock()
        .unwrap()
        .execute_batch(
            "DROP INDEX workunits_waiting; ALTER TABLE workers DROP COLUMN trust_check_asked_ms;
             DROP TRIGGER result_minute; DROP TABLE worker_minutes; DROP TABLE program_versions; DROP INDEX workunits_numbers;
             DROP INDEX workunits_audit_replicas;
             UPDATE campaign_counts SET nodes_valid_hi = -7, nodes_computed_hi = -7;
             ALTER TABLE campaign_counts DROP COLUMN shard;
             ALTER TABLE campaigns DROP COLUMN family; ALTER TABLE workunits DROP COLUMN family_number;
             DROP INDEX workunits_ready_by_campaign; ALTER TABLE campaigns DROP COLUMN name; ALTER TABLE campaigns DROP COLUMN priority; ALTER TABLE campaigns DROP COLUMN status;
             DROP INDEX workers_enrolment_token; ALTER TABLE workers DROP COLUMN enrolment_token;
             DROP TABLE enrolment_tokens; DROP TRIGGER result_credit; DROP INDEX workers_credit;
             ALTER TABLE workers DROP COLUMN credit_results; ALTER TABLE workers DROP COLUMN credit_nodes_hi;
             ALTER TABLE workers DROP COLUMN credit_nodes_lo; DROP INDEX workunits_resplits;
             ALTER TABLE campaigns DROP COLUMN games; ALTER TABLE campaigns DROP COLUMN move_nodes;
             ALTER TABLE workunits DROP COLUMN games; ALTER TABLE workunits DROP COLUMN move_nodes;
             DROP INDEX results_open_by_worker;
             ALTER TABLE results DROP COLUMN hard_deadline_ms; ALTER TABLE campaigns DROP COLUMN stall_cause;
             ALTER TABLE campaigns DROP COLUMN stall_replicas; ALTER TABLE campaigns DROP COLUMN stall_ms;
             DROP INDEX workunits_audits; DROP INDEX workunits_unaudited; ALTER TABLE workunits DROP COLUMN audit_replicas;
             ALTER TABLE workers DROP COLUMN trust_checks; ALTER TABLE workers DROP COLUMN trust_check_ms; ALTER TABLE workers DROP COLUMN gave_back;
             ALTER TABLE workers DROP COLUMN build;
             DROP INDEX workers_boinc_host; ALTER TABLE workers DROP COLUMN boinc_account; ALTER TABLE workers DROP COLUMN boinc_cpid;
             DROP TABLE challenges; DROP TABLE disputes;
             CREATE INDEX workunits_ready ON workunits(id) WHERE state = 0 AND needed > 0;
             PRAGMA user_version = 6;",
        )
        .unwrap();
    drop(s);
    let s = SqliteStore::open(&d.path().join("t.db")).unwrap();
    assert_eq!(counters(&s), recount(&s));
}

#[test]
fn migration_12_fills_in_the_credit_columns() {
    let (d, s) = store();
    conformance_credit::credit_columns_equal_the_sum_over_results_through_quarantine_and_restoration(&s);
    let before = conformance_credit::credit_is_the_sum(&s, "before the downgrade");
    assert!(!before.is_empty());
    // A database from before the credit columns (schema 11).
    s.lock()
        .unwrap()
        .execute_batch(
            "DROP INDEX workunits_waiting; ALTER TABLE workers DROP COLUMN trust_check_asked_ms;
             DROP TRIGGER result_minute; DROP TABLE worker_minutes; DROP TABLE program_versions; DROP INDEX workunits_numbers;
             DROP INDEX workunits_audit_replicas;
             DROP TRIGGER result_credit; DROP INDEX workers_credit;
             ALTER TABLE workers DROP COLUMN credit_results; ALTER TABLE workers DROP COLUMN credit_nodes_hi;
             ALTER TABLE workers DROP COLUMN credit_nodes_lo;
             ALTER TABLE campaigns DROP COLUMN games; ALTER TABLE campaigns DROP COLUMN move_nodes;
             ALTER TABLE workunits DROP COLUMN games; ALTER TABLE workunits DROP COLUMN move_nodes;
             ALTER TABLE campaign_counts DROP COLUMN shard;
             DROP INDEX results_open_by_worker;
             ALTER TABLE results DROP COLUMN hard_deadline_ms; ALTER TABLE campaigns DROP COLUMN stall_cause;
             ALTER TABLE campaigns DROP COLUMN stall_replicas; ALTER TABLE campaigns DROP COLUMN stall_ms;
             DROP INDEX workunits_audits; DROP INDEX workunits_unaudited; ALTER TABLE workunits DROP COLUMN audit_replicas;
             ALTER TABLE workers DROP COLUMN trust_checks; ALTER TABLE workers DROP COLUMN trust_check_ms; ALTER TABLE workers DROP COLUMN gave_back;
             ALTER TABLE workers DROP COLUMN build;
             DROP INDEX workers_boinc_host; ALTER TABLE workers DROP COLUMN boinc_account; ALTER TABLE workers DROP COLUMN boinc_cpid;
             DROP TABLE challenges; DROP TABLE disputes;
             CREATE INDEX workunits_ready ON workunits(id) WHERE state = 0 AND needed > 0;
             PRAGMA user_version = 11;",
        )
        .unwrap();
    drop(s);
    let s = SqliteStore::open(&d.path().join("t.db")).unwrap();
    assert_eq!(
        conformance_credit::credit_is_the_sum(&s, "after migration 12"),
        before
    );
}

#[test]
fn exports_pages_and_status_read_beside_a_writer_holding_its_lock() {
    let (_d, s) = store();
    let c = s
        .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1]).unwrap(), 0)
        .unwrap();
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let l = s.assign_batch(w, &ALL, 1, 1000, 1, 0).unwrap();
    s.submit(w, l[0].lease_id, &sub(400, 1), 2).unwrap();
    // The writer is busy (its lock held, a write transaction open): an export, and what the
    // status and the pages read, still read, from the last committed snapshot (with 50 workers
    // keeping the writer busy, `/api/v1/status` once waited past its 30 s timeout).
    let writer = s.lock().unwrap();
    writer
        .execute_batch(&format!(
            "BEGIN IMMEDIATE; UPDATE workunits SET nodes = 7 WHERE campaign_id = {}",
            c.id
        ))
        .unwrap();
    let (done, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let table = s.table(c.id).map(|(_, rows)| rows);
            let _ = s.campaigns().unwrap();
            let units = s.split_units(c.id).map(|(_, u)| u.len());
            let status = (
                s.progress().map(|p| p[0].valid),
                s.campaign_progress(c.id).map(|p| p.valid),
                s.check_cost().map(|c| c.checks_run),
                s.worker_summary(3).map(|w| w.registered),
                s.dispute_cost().map(|_| ()),
                s.campaign_tallies().map(|t| t.len()),
            );
            done.send((table, units, status)).unwrap();
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(20));
        // Let go of the writer before judging, so a failure cannot hang the scope.
        writer.execute_batch("ROLLBACK").unwrap();
        drop(writer);
        let (rows, units, status) = got.expect("a read waited for the writer's lock");
        assert_eq!(status.0.unwrap(), 1);
        assert_eq!(status.1.unwrap(), 1);
        assert_eq!(status.2.unwrap(), 0);
        assert_eq!(status.3.unwrap(), 1);
        status.4.unwrap();
        status.5.unwrap();
        let rows = rows.unwrap();
        assert_eq!(units.unwrap(), 0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows.iter().filter(|r| r.nodes == Some(400)).count(), 1);
    });
}

#[test]
fn an_export_beside_another_opens_its_own_read_connection() {
    let (_d, s) = store();
    let c = s
        .create_campaign(&NewCampaign::new(2, 1, None, vec![0, 1]).unwrap(), 0)
        .unwrap();
    let busy = s.reader.lock().unwrap();
    assert_eq!(s.table(c.id).unwrap().1.len(), 2);
    drop(busy);
    assert_eq!(s.table(c.id).unwrap().1.len(), 2);
}

#[test]
fn a_batch_is_filled_by_priority_skipping_paused_and_cancelled_campaigns() {
    use crate::model::CampaignChange;
    use crate::model::{CampaignAction, CampaignStatus};
    let (_d, s) = store();
    let add = |positions: Vec<u16>, priority: i64| {
        let spec = NewCampaign::new(1, 1, None, positions)
            .unwrap()
            .with_priority(priority);
        s.create_campaign(&spec, 0).unwrap().id
    };
    let low = add(vec![0, 1], 0);
    add(vec![2, 3], 5);
    let paused = add(vec![4], 9);
    let cancelled = add(vec![5], 9);
    let act = |id, a| {
        s.update_campaign(id, &CampaignChange::Status(a)).unwrap();
    };
    act(paused, CampaignAction::Pause);
    act(cancelled, CampaignAction::Cancel);
    assert_eq!(
        s.campaign(cancelled).unwrap().status,
        CampaignStatus::Cancelled
    );
    assert!(matches!(
        s.update_campaign(cancelled, &CampaignChange::Status(CampaignAction::Resume)),
        Err(StoreError::CampaignCancelled(..))
    ));
    assert!(matches!(
        s.update_campaign(99, &CampaignChange::Priority(1)),
        Err(StoreError::UnknownCampaign(99))
    ));
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let starts = |leases: &[Lease]| -> Vec<u16> {
        leases
            .iter()
            .map(|l| match &l.kind {
                WorkUnitKind::Perft {
                    position: PositionSpec::StartPosition(sp),
                    ..
                } => *sp,
                k => panic!("{k:?}"),
            })
            .collect()
    };
    // The batch crosses from the high-priority campaign into the low one.
    let leases = s.assign_batch(w, &ALL, 1, 1000, 3, 0).unwrap();
    assert_eq!(starts(&leases), [2, 3, 0]);
    // Reprioritised, the low campaign's rest comes next anyway; the paused one not at all.
    s.update_campaign(low, &CampaignChange::Priority(10))
        .unwrap();
    let w2 = s.register_worker("w2", b"h2", "e", 0).unwrap();
    let leases = s.assign_batch(w2, &ALL, 1, 1000, 8, 0).unwrap();
    assert_eq!(starts(&leases), [1]);
    act(paused, CampaignAction::Resume);
    let w3 = s.register_worker("w3", b"h3", "e", 0).unwrap();
    let leases = s.assign_batch(w3, &ALL, 1, 1000, 8, 0).unwrap();
    assert_eq!(starts(&leases), [4]);
}

/// Behind a proxy (blocks do not separate) workers registered in one burst from one block are
/// one party; one that registered later pairs with them.
#[test]
fn one_registration_burst_is_one_party() {
    let (_d, s) = store();
    s.set_integrity(&Integrity {
        address_separation: crate::integrity::trust::AddressSeparation::Off,
        registration_burst_ms: 5_000,
        ..Integrity::default()
    })
    .unwrap();
    s.create_campaign(&NewCampaign::new(9, 2, None, (0..3).collect()).unwrap(), 0)
        .unwrap();
    let b = Some("10.0.0.0/24");
    let reg = |n: &str, at| s.register_worker_from(n, b"h", "e", b, at).unwrap();
    let (w1, w2, w3) = (reg("w1", 0), reg("w2", 1_000), reg("w3", 100_000));
    let fetch = |w| s.assign_from(w, &ALL, 200_000, 1000, 16, 64, b).unwrap();
    assert_eq!(fetch(w1).len(), 3);
    assert!(fetch(w2).is_empty(), "registered in w1's burst");
    assert_eq!(fetch(w3).len(), 3, "registered later: pairs with w1");
}
