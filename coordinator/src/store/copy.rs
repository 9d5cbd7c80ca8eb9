//! Moving a whole store to another backend (`c960-coordinator migrate --from c960.sqlite --to
//! postgres://…`): every campaign (with the operator's name, priority and status), enrolment
//! token, workunit, lease, result, worker (with its key hash, so its token keeps working, and
//! its kept credit), setting and counter, ids kept, in one transaction on the target, from
//! one read snapshot of the source. The target must be empty (freshly migrated).

use super::db::{Dialect, Param, Value, params};
use super::{Store, StoreError, StoreResult};

/// Every table with its columns, parents before children; the counters last, so that the
/// target's triggers (which update counters that do not exist yet) change nothing while rows
/// are copied.
const TABLES: &[(&str, &str)] = &[
    (
        "campaigns",
        "id, kind, depth, quorum, max_results, positions, created_ms, engine, split_ply, family, name, priority, \
         status, games, move_nodes, stall_cause, stall_replicas, stall_ms",
    ),
    (
        "enrolment_tokens",
        "id, name, hash, cap, used, created_ms, revoked_ms",
    ),
    (
        "workers",
        "id, name, key_hash, engine, created_ms, last_seen_ms, lost_votes, refused, valid, banned, quarantined_ms, \
         trusted, checks_passed, checks_failed, reg_block, last_block, credit_results, credit_nodes_hi, credit_nodes_lo, \
         enrolment_token, trust_checks, trust_check_ms, gave_back, build, boinc_account, boinc_cpid, trust_check_asked_ms",
    ),
    (
        "workunits",
        "id, campaign_id, sp, fen, depth, quorum, max_results, state, needed, canonical_result_id, canonical_digest, \
         nodes, completed_ms, kind, hash_mib, origin_sp, multiplicity, first_moves, known_nodes, check_state, \
         verified_digest, trusted_only, reverify, family_number, games, move_nodes, audit_replicas",
    ),
    (
        "results",
        "id, workunit_id, worker_id, state, outcome, issued_ms, deadline_ms, returned_ms, digest, nodes, divide, \
         elapsed_ms, engine, error, payload, checked, hard_deadline_ms",
    ),
    // Kept by a trigger on results' updates only, so copied as it stands.
    ("worker_minutes", "worker_id, minute, nodes_hi, nodes_lo"),
    (
        "disputes",
        "id, workunit_id, result_a, result_b, worker_a, worker_b, fen, depth, path, claim_a, claim_b, state, rounds, \
         losers, leaf_nodes, opened_ms, decided_ms",
    ),
    (
        "challenges",
        "id, dispute_id, side, worker_id, fen, depth, claim, issued_ms, deadline_ms, state, nodes, divide, answered_ms",
    ),
    ("settings", "key, value"),
    (
        "campaign_counts",
        "campaign_id, total, valid, failed, queued, in_flight, nodes_valid_hi, nodes_valid_lo, nodes_computed_hi, \
         nodes_computed_lo",
    ),
];

impl Param for Value {
    fn value(&self) -> Value {
        self.clone()
    }
}

/// Rows copied per table, in [`TABLES`] order.
pub type CopyCounts = Vec<(&'static str, u64)>;

/// Copies everything in `from` into the empty store `to`.
pub fn copy_store(from: &dyn Store, to: &dyn Store) -> StoreResult<CopyCounts> {
    let mut out = Vec::new();
    from.raw_read(&mut |src| {
        to.raw_tx(&mut |dst| {
            for (table, _) in TABLES {
                let n = dst
                    .query_one(&format!("SELECT COUNT(*) FROM {table}"), params![])?
                    .u64(0)?;
                if n > 0 {
                    return Err(StoreError::Bad(format!(
                        "the target database is not empty ({table} has {n} rows)"
                    )));
                }
            }
            let mut counts = Vec::new();
            for (table, cols) in TABLES {
                let width = cols.split(',').count();
                let slots: Vec<String> = (1..=width).map(|i| format!("?{i}")).collect();
                let insert = format!(
                    "INSERT INTO {table} ({cols}) VALUES ({})",
                    slots.join(", ")
                );
                let mut n = 0u64;
                // Counter shards (PostgreSQL) are summed into one row per campaign: SQLite
                // keeps one, and the target's own connections add shards of their own. The
                // rows its triggers made while the results were copied go first: the source's
                // counters count those results already.
                let select = if *table == "campaign_counts" {
                    dst.exec("DELETE FROM campaign_counts", params![])?;
                    format!(
                        "SELECT campaign_id, {} FROM campaign_counts GROUP BY campaign_id ORDER BY 1",
                        crate::store::sql::SUMMED_COUNTS
                    )
                } else {
                    format!("SELECT {cols} FROM {table} ORDER BY 1")
                };
                src.each(
                    &select,
                    params![],
                    &mut |row| {
                        let p: Vec<&dyn Param> = row.0.iter().map(|v| v as &dyn Param).collect();
                        dst.exec(&insert, &p)?;
                        n += 1;
                        Ok(())
                    },
                )?;
                let keyed_by_id = !matches!(*table, "settings" | "campaign_counts" | "worker_minutes");
                if dst.dialect() == Dialect::Postgres && keyed_by_id {
                    // New rows continue after the copied ids.
                    dst.query_one(
                        &format!(
                            "SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                        ),
                        params![],
                    )?;
                }
                counts.push((*table, n));
            }
            out = counts;
            Ok(())
        })
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{Format, render};
    use crate::model::CampaignChange;
    use crate::store::conformance::{self, ALL, boinc, postgres_store, sqlite_store, sub};
    use crate::work::campaign::NewCampaign;

    /// Everything an operator can read from a store, for comparing two.
    fn everything(s: &dyn Store) -> Vec<String> {
        let mut out = vec![
            format!("{:?}", s.campaigns().unwrap()),
            format!("{:?}", s.progress().unwrap()),
            format!("{:?}", s.worker_summary(0).unwrap()),
            format!("{:?}", s.check_cost().unwrap()),
            format!("{:?}", s.enrolment_tokens().unwrap()),
            // The BOINC host (its account and CPID columns) and its credit.
            format!(
                "{:?}",
                s.boinc_host(&boinc::account(7), 0, "cpid-copy")
                    .unwrap()
                    .map(|id| (id, s.boinc_credit(id, &boinc::account(7)).unwrap()))
            ),
            // The leaderboard: the kept credit columns, in their order.
            format!(
                "{:?}",
                s.standings(&crate::model::standings::StandingsQuery {
                    seen_since_ms: None,
                    recent_since_ms: 0,
                    offset: 0,
                    limit: 100,
                })
                .unwrap()
            ),
        ];
        for c in s.campaigns().unwrap() {
            for f in [Format::Csv, Format::Json] {
                out.push(render(s, c.id, f).unwrap().unwrap());
            }
            for row in s.table(c.id).unwrap().1 {
                out.push(format!("{:?}", s.results(row.workunit_id).unwrap()));
            }
        }
        out
    }

    fn populate(s: &crate::store::SqliteStore) {
        // A campaign half done, with a lie caught and re-verified, a split campaign, an open
        // lease and settings.
        conformance::quarantine_reopens_what_the_worker_validated(s);
        s.create_campaign(&NewCampaign::new(3, 1, None, vec![5]).unwrap(), 10)
            .unwrap();
        s.create_campaign(
            &NewCampaign::new(3, 1, None, vec![7])
                .unwrap()
                .split_at(1)
                .unwrap(),
            10,
        )
        .unwrap();
        // The operator's names, priorities and states, and a volunteer's enrolment token.
        let named = s.campaigns().unwrap()[0].id;
        for change in [
            CampaignChange::Name(Some("the first".into())),
            CampaignChange::Priority(4),
            CampaignChange::Status(crate::model::CampaignAction::Pause),
        ] {
            s.update_campaign(named, &change).unwrap();
        }
        let token = s.mint_enrolment_token("volunteer", 3, b"th", 10).unwrap();
        let tok = crate::model::NewWorker {
            token: Some((token.id, b"th".to_vec())),
            ..crate::model::NewWorker::new("tok", b"k4", "e 1")
        };
        s.register(&tok, 10).unwrap();
        // A BOINC host of that token's account, with a validated result.
        let mut host = boinc::host("boinc", boinc::account(7), "cpid-copy", None);
        host.token = Some((token.id, b"th".to_vec()));
        let h = s.register(&host, 10).unwrap();
        let l = s.assign_batch(h, &ALL, 11, 1000, 1, 0).unwrap();
        s.submit(h, l[0].lease_id, &sub(1 << 41, 5), 12).unwrap();
        let credit = s.boinc_credit(h, &boinc::account(7)).unwrap();
        assert_eq!(credit.host_nodes, 1 << 41, "validated: {credit:?}");
        let w = s.register_worker("late", b"k2", "e 1", 10).unwrap();
        let l = s.assign_batch(w, &ALL, 11, 1000, 1, 0).unwrap();
        assert_eq!(l.len(), 1);
        s.submit(w, l[0].lease_id, &sub(1 << 40, 4), 12).ok();
        s.assign_batch(w, &ALL, 13, 1000, 2, 0).unwrap();
        // A dispute with its challenges open.
        crate::store::conformance::disputes::a_challenged_dispute(s);
    }

    #[test]
    fn sqlite_to_postgres_moves_everything_and_the_exports_are_identical() {
        let (_d, from) = sqlite_store();
        populate(&from);
        let before = everything(&from);
        let Some(to) = postgres_store("copy_target") else {
            return;
        };
        let counts = copy_store(&from, &to).unwrap();
        assert!(counts.iter().all(|(_, n)| *n > 0), "{counts:?}");
        assert_eq!(everything(&to), before);
        // A second copy into the filled target is refused and changes nothing.
        assert!(matches!(copy_store(&from, &to), Err(StoreError::Bad(_))));
        assert_eq!(everything(&to), before);
        // The target goes on: new ids follow the copied ones, the open lease still answers.
        let w = to.register_worker("new", b"k3", "e", 20).unwrap();
        assert!(w > from.worker_summary(0).unwrap().registered);
        assert!(to.assign_batch(w, &ALL, 21, 1000, 4, 0).is_ok());
    }

    #[test]
    fn sqlite_to_sqlite_is_identical_too() {
        let (_d, from) = sqlite_store();
        populate(&from);
        let (_e, to) = sqlite_store();
        copy_store(&from, &to).unwrap();
        assert_eq!(everything(&to), everything(&from));
    }
}
