//! Workers: registration, trust, integrity settings, the coordinator's checks, bans.

use super::cascade::{self, retransition};
use super::enrolment_tokens;
use super::transition::bump_setting;
use super::{WORKER_COLS, worker_in, worker_row};
use super::{bump_check_nodes, campaign_check_nodes_key};
use crate::integrity::audit::{self, AuditPath};
use crate::integrity::trust::Integrity;
use crate::model::{
    CampaignTally, CheckCost, CheckOutcome, CheckPurpose, CheckRequest, NewWorker, StoreError,
    StoreResult, TrustLevel, WorkerRecord, WorkerSummary,
};
use crate::store::codes::{
    CHECK_AUDIT_WANTED, CHECK_OVER_BUDGET, CHECK_RESPLIT_DONE, CHECK_RESPLIT_WANTED,
    CHECK_UNAUDITED, CHECK_VERIFIED, CHECK_WANTED, KIND_COLUMN_COUNT, KIND_COLUMNS, OUTCOME_VALID,
    REPLICA_RETURNED, TRUST_UNTRUSTED, WORKUNIT_OPEN, WORKUNIT_VALID, trust_code, u64_to_db,
};
use crate::store::db::{Backend, params};
use c960_common::wire::WorkUnitKind;

/// Sets a value in the settings table.
const SET_SETTING: &str = "INSERT INTO settings (key, value) VALUES (?1, ?2)
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Registers a worker as its registration decided it: the token spent, the row inserted with
/// its trust, build and BOINC identity, the token's registration recorded; returns its id.
pub(super) fn register(tx: super::Tx, w: &NewWorker, now_ms: i64) -> StoreResult<u64> {
    if let Some((token_id, token_hash)) = &w.token {
        enrolment_tokens::spend(tx, *token_id, token_hash)?;
    }
    let now_ms = tx.now_ms(now_ms)?;
    let (account, cpid) = match &w.boinc {
        Some(b) => (Some(&b.account_hash[..]), Some(b.host_cpid.as_str())),
        None => (None, None),
    };
    let id = tx
        .query_one(
            "INSERT INTO workers (name, key_hash, engine, created_ms, last_seen_ms, reg_block, last_block,
                                  trusted, build, boinc_account, boinc_cpid)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?5, ?6, ?7, ?8, ?9) RETURNING id",
            params![
                w.name,
                &w.key_hash[..],
                w.engine,
                now_ms,
                w.block,
                trust_code(w.trust),
                w.build,
                account,
                cpid
            ],
        )?
        .u64(0)?;
    if let Some((token_id, _)) = &w.token {
        enrolment_tokens::mark_enrolled(tx, id, *token_id)?;
    }
    Ok(id)
}

pub(super) fn set_worker_build(
    s: &impl Backend,
    worker_id: u64,
    build: Option<&str>,
) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        let changed = tx.exec(
            "UPDATE workers SET build = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), build],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownWorker(worker_id));
        }
        Ok(())
    })
}

pub(super) fn set_trust(
    s: &impl Backend,
    worker_id: u64,
    trusted: bool,
) -> StoreResult<WorkerRecord> {
    s.with_tx(&mut |tx| {
        let level = if trusted {
            TrustLevel::Operator
        } else {
            TrustLevel::Untrusted
        };
        let changed = tx.exec(
            "UPDATE workers SET trusted = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), trust_code(level)],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownWorker(worker_id));
        }
        if trusted {
            // Its results on open workunits may be the anchor they waited for.
            let waiting: Vec<u64> = tx
                .query(
                    &format!(
                        "SELECT DISTINCT r.workunit_id FROM results r JOIN workunits u ON u.id = r.workunit_id
                         WHERE r.worker_id = ?1 AND r.state = {REPLICA_RETURNED} AND u.state = {WORKUNIT_OPEN} ORDER BY r.workunit_id"
                    ),
                    params![u64_to_db(worker_id)],
                )?
                .iter()
                .map(|r| r.u64(0))
                .collect::<StoreResult<_>>()?;
            super::deferring(tx, |tx| {
                cascade::retransition_many(tx, &waiting, crate::clock::now_ms())
            })?;
        }
        worker_in(tx, worker_id)?.ok_or(StoreError::UnknownWorker(worker_id))
    })
}

pub(super) fn set_integrity(s: &impl Backend, integrity: &Integrity) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        for (k, v) in integrity.to_settings() {
            tx.exec(SET_SETTING, params![k, u64_to_db(v)])?;
        }
        Ok(())
    })
}

pub(super) fn checks_wanted(s: &impl Backend, limit: usize) -> StoreResult<Vec<CheckRequest>> {
    s.with_conn(&mut |tx| {
        tx.query(
            &format!("SELECT * FROM (SELECT w.id, {KIND_COLUMNS}, 0 AS purpose FROM workunits w WHERE w.check_state = {CHECK_WANTED} ORDER BY w.id LIMIT ?1) AS checks
             UNION ALL
             SELECT * FROM (SELECT w.id, {KIND_COLUMNS}, 1 AS purpose FROM workunits w WHERE w.check_state = {CHECK_RESPLIT_WANTED} ORDER BY w.id LIMIT ?1) AS resplits
             UNION ALL
             SELECT * FROM (SELECT w.id, {KIND_COLUMNS}, 2 AS purpose FROM workunits w WHERE w.check_state = {CHECK_AUDIT_WANTED} ORDER BY w.id LIMIT ?1) AS audits"),
            params![limit as i64],
        )?
        .iter()
        .map(|r| {
            let workunit_id = r.u64(0)?;
            let purpose = CheckPurpose::from_code(r.i64(1 + KIND_COLUMN_COUNT)?);
            let kind = super::leases::workunit_kind(r, 1)?;
            // An analysis's or a game's engine id, from its canonical result.
            let engine_id = match (&kind, purpose) {
                (WorkUnitKind::Perft { .. }, _) | (_, CheckPurpose::Check | CheckPurpose::Resplit) => None,
                _ => tx
                    .query_opt(
                        "SELECT r.payload FROM workunits w JOIN results r ON r.id = w.canonical_result_id WHERE w.id = ?1",
                        params![u64_to_db(workunit_id)],
                    )?
                    .and_then(|p| p.opt_text(0).ok().flatten())
                    .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
                    .and_then(|v| v["engine_id"].as_str().map(str::to_string)),
            };
            Ok(CheckRequest {
                workunit_id,
                kind,
                purpose,
                engine_id,
            })
        })
        .collect()
    })
}

pub(super) fn record_check(
    s: &impl Backend,
    workunit_id: u64,
    outcome: &CheckOutcome,
    now_ms: i64,
) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        if record_resplit(tx, workunit_id, outcome, now_ms)?
            || record_audit(tx, workunit_id, outcome, now_ms)?
        {
            return Ok(());
        }
        match outcome {
            CheckOutcome::Verified { digest, nodes } => {
                bump_setting(tx, "checks_run", 1)?;
                bump_check_nodes(tx, workunit_id, *nodes)?;
                // A value already valid that the check contradicts (its check was queued when it
                // validated) is overturned: reopened whether or not its workers get quarantined
                // (`max_strikes` 0 turns that off).
                let row = tx.query_opt(
                    "SELECT state, canonical_digest FROM workunits WHERE id = ?1",
                    params![u64_to_db(workunit_id)],
                )?;
                if let Some(row) = row
                    && row.i64(0)? == WORKUNIT_VALID
                    && row.opt_blob(1)?.as_deref() != Some(&digest[..])
                {
                    return cascade::overturn(tx, workunit_id, digest, now_ms);
                }
                tx.exec(
                    &format!("UPDATE workunits SET check_state = {CHECK_VERIFIED}, verified_digest = ?2 WHERE id = ?1"),
                    params![u64_to_db(workunit_id), digest],
                )?;
                retransition(tx, workunit_id, now_ms)
            }
            CheckOutcome::OverBudget => {
                tx.exec(
                    &format!("UPDATE workunits SET check_state = {CHECK_OVER_BUDGET} WHERE id = ?1"),
                    params![u64_to_db(workunit_id)],
                )?;
                bump_setting(tx, "checks_over_budget", 1)?;
                retransition(tx, workunit_id, now_ms)?;
                cascade::recount_if_total_missed(tx, workunit_id, now_ms)
            }
        }
    })
}

/// Records the outcome of a re-split cross-check (a workunit in `check_state` 4; `false` for
/// any other check): a recount that agrees with the canonical digest marks it done; one that
/// does not overturns the value ([`super::cascade::overturn`]): it is reopened, the workers
/// behind it fail a check, and those who had told the truth get their standing back.
fn record_resplit(
    tx: super::Tx,
    workunit_id: u64,
    outcome: &CheckOutcome,
    now_ms: i64,
) -> StoreResult<bool> {
    let Some(row) = tx.query_opt(
        "SELECT check_state, state, canonical_digest FROM workunits WHERE id = ?1",
        params![u64_to_db(workunit_id)],
    )?
    else {
        return Ok(false);
    };
    if row.i64(0)? != CHECK_RESPLIT_WANTED {
        return Ok(false);
    }
    let (state, canonical) = (row.i64(1)?, row.opt_blob(2)?);
    tx.exec(
        &format!("UPDATE workunits SET check_state = {CHECK_RESPLIT_DONE} WHERE id = ?1"),
        params![u64_to_db(workunit_id)],
    )?;
    let CheckOutcome::Verified { digest, nodes } = outcome else {
        bump_setting(tx, "checks_over_budget", 1)?;
        cascade::recount_if_total_missed(tx, workunit_id, now_ms)?;
        return Ok(true);
    };
    bump_setting(tx, "resplits_run", 1)?;
    bump_check_nodes(tx, workunit_id, *nodes)?;
    if state == WORKUNIT_VALID && canonical.as_deref() == Some(&digest[..]) {
        return Ok(true);
    }
    // Overturned: a valid value the recount contradicts. One reopened meanwhile (a quarantine
    // re-verifies it) gets the truth all the same, but no value was overturned.
    if state == WORKUNIT_VALID {
        bump_setting(tx, "resplits_overturned", 1)?;
    }
    cascade::overturn(tx, workunit_id, digest, now_ms)?;
    Ok(true)
}

/// Records the outcome of an audit (a workunit in `check_state` 6; `false` for any other
/// check): a digest that agrees with the value verifies it (its workers pass a check); one that
/// differs overturns it ([`super::cascade::overturn`]). An audit the coordinator could not
/// compute goes to one more hidden replica for another worker, or is left `unaudited`
/// ([`crate::integrity::audit::unaffordable`]).
fn record_audit(
    tx: super::Tx,
    workunit_id: u64,
    outcome: &CheckOutcome,
    now_ms: i64,
) -> StoreResult<bool> {
    let wu = u64_to_db(workunit_id);
    let Some(row) = tx.query_opt(
        "SELECT check_state, state, canonical_digest FROM workunits WHERE id = ?1",
        params![wu],
    )?
    else {
        return Ok(false);
    };
    if row.i64(0)? != CHECK_AUDIT_WANTED {
        return Ok(false);
    }
    let (state, canonical) = (row.i64(1)?, row.opt_blob(2)?);
    match outcome {
        CheckOutcome::Verified { digest, nodes } => {
            bump_setting(tx, "audits_run", 1)?;
            bump_check_nodes(tx, workunit_id, *nodes)?;
            if state == WORKUNIT_VALID && canonical.as_deref() == Some(&digest[..]) {
                tx.exec(
                    "UPDATE workunits SET check_state = ?2, verified_digest = ?3 WHERE id = ?1",
                    params![wu, CHECK_VERIFIED, digest],
                )?;
                retransition(tx, workunit_id, now_ms)?;
            } else {
                // As for a re-split: only a valid value the audit contradicts is overturned.
                if state == WORKUNIT_VALID {
                    bump_setting(tx, "audits_overturned", 1)?;
                }
                cascade::overturn(tx, workunit_id, digest, now_ms)?;
            }
        }
        CheckOutcome::OverBudget => {
            let crowd = super::at_work::someone_else_at_work(tx, workunit_id, now_ms)?;
            match audit::unaffordable(crowd) {
                AuditPath::Replica if state == WORKUNIT_VALID => {
                    bump_setting(tx, "audit_replicas", 1)?;
                    super::reopen::reopen_for_audit(tx, wu)?;
                    retransition(tx, workunit_id, now_ms)?;
                }
                _ => {
                    tx.exec(
                        "UPDATE workunits SET check_state = ?2 WHERE id = ?1",
                        params![wu, CHECK_UNAUDITED],
                    )?;
                    cascade::recount_if_total_missed(tx, workunit_id, now_ms)?;
                }
            }
        }
    }
    Ok(true)
}

pub(super) fn check_cost(s: &impl Backend) -> StoreResult<CheckCost> {
    s.with_reader(&mut |tx| {
        let get = |key: &str| -> StoreResult<u64> {
            tx.query_opt("SELECT value FROM settings WHERE key = ?1", params![key])?
                .map_or(Ok(0), |r| r.u64(0))
        };
        let waiting = tx
            .query_one(
                &format!("SELECT COUNT(*) FROM workunits WHERE check_state = {CHECK_WANTED}"),
                params![],
            )?
            .u64(0)?;
        // One state at a time, written into the statement (an integer constant), so each count
        // reads its partial index.
        let count = |state: i64| -> StoreResult<u64> {
            tx.query_one(
                &format!("SELECT COUNT(*) FROM workunits WHERE check_state = {state}"),
                params![],
            )?
            .u64(0)
        };
        let valid = tx
            .query_one(
                "SELECT CAST(COALESCE(SUM(valid), 0) AS BIGINT) FROM campaign_counts",
                params![],
            )?
            .i64(0)?;
        let returned = get("results_returned")?;
        let halves = tx.query_one(
            "SELECT CAST(COALESCE(SUM(nodes_valid_hi), 0) AS BIGINT), CAST(COALESCE(SUM(nodes_valid_lo), 0) AS BIGINT) FROM campaign_counts",
            params![],
        )?;
        let valid_nodes = (u128::from(halves.u64(0)?) << 32) + u128::from(halves.u64(1)?);
        let check_nodes = get("check_nodes")?;
        Ok(CheckCost {
            spare_replicas: get("spare_replicas")?,
            coordinator_node_share: if valid_nodes > 0 {
                check_nodes as f64 / valid_nodes as f64
            } else {
                0.0
            },
            checks_run: get("checks_run")?,
            check_nodes,
            checks_over_budget: get("checks_over_budget")?,
            checks_waiting: waiting,
            resplits_run: get("resplits_run")?,
            resplits_overturned: get("resplits_overturned")?,
            audits_run: get("audits_run")?,
            audits_overturned: get("audits_overturned")?,
            audit_replicas: get("audit_replicas")?,
            audits_waiting: count(CHECK_RESPLIT_WANTED)? + count(CHECK_AUDIT_WANTED)?,
            unaudited: count(CHECK_UNAUDITED)?,
            replicas_per_valid_workunit: if valid > 0 {
                returned as f64 / valid as f64
            } else {
                0.0
            },
        })
    })
}

pub(super) fn worker(s: &impl Backend, id: u64) -> StoreResult<Option<WorkerRecord>> {
    s.with_conn(&mut |tx| worker_in(tx, id))
}

pub(super) fn worker_summary(s: &impl Backend, now_ms: i64) -> StoreResult<WorkerSummary> {
    s.with_reader(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let r = tx.query_one(
            "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN last_seen_ms >= ?1 THEN 1 ELSE 0 END), 0) AS BIGINT) FROM workers",
            params![now_ms - 3_600_000],
        )?;
        let (registered, active) = (r.u64(0)?, r.u64(1)?);
        let marked = tx
            .query(
                &format!(
                    "SELECT {WORKER_COLS} FROM workers
                     WHERE lost_votes + refused + checks_failed > 0 OR banned != 0 OR quarantined_ms IS NOT NULL
                     ORDER BY banned DESC, quarantined_ms IS NOT NULL DESC, checks_failed + refused DESC, lost_votes DESC, id LIMIT 20"
                ),
                params![],
            )?
            .iter()
            .map(worker_row)
            .collect::<StoreResult<_>>()?;
        let trusted = tx
            .query_one(
                &format!("SELECT COUNT(*) FROM workers WHERE trusted != {TRUST_UNTRUSTED}"),
                params![],
            )?
            .u64(0)?;
        let boinc = tx.query_one(
            "SELECT COUNT(*), CAST(COALESCE(SUM(valid), 0) AS BIGINT) FROM workers WHERE boinc_account IS NOT NULL",
            params![],
        )?;
        let list = tx
            .query(
                &format!("SELECT {WORKER_COLS} FROM workers ORDER BY id LIMIT 200"),
                params![],
            )?
            .iter()
            .map(worker_row)
            .collect::<StoreResult<_>>()?;
        Ok(WorkerSummary {
            registered,
            active_last_hour: active,
            marked,
            trusted,
            boinc_hosts: boinc.u64(0)?,
            boinc_valid: boinc.u64(1)?,
            list,
        })
    })
}

pub(super) fn set_max_strikes(s: &impl Backend, max_strikes: u64) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        tx.exec(SET_SETTING, params!["max_strikes", u64_to_db(max_strikes)])?;
        Ok(())
    })
}

pub(super) fn set_banned(
    s: &impl Backend,
    worker_id: u64,
    banned: bool,
    now_ms: i64,
) -> StoreResult<WorkerRecord> {
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let changed = if banned {
            tx.exec(
                "UPDATE workers SET banned = 1 WHERE id = ?1",
                params![u64_to_db(worker_id)],
            )?
        } else {
            tx.exec(
                "UPDATE workers SET banned = 0, quarantined_ms = NULL, lost_votes = 0, refused = 0 WHERE id = ?1",
                params![u64_to_db(worker_id)],
            )?
        };
        if changed == 0 {
            return Err(StoreError::UnknownWorker(worker_id));
        }
        if banned {
            cascade::quarantine(tx, worker_id, now_ms)?;
        }
        worker_in(tx, worker_id)?.ok_or(StoreError::UnknownWorker(worker_id))
    })
}

pub(super) fn standings(
    s: &impl Backend,
    q: &crate::model::standings::StandingsQuery,
) -> StoreResult<Vec<crate::model::standings::WorkerStanding>> {
    s.with_reader(&mut |tx| super::reads::standings(tx, q))
}

pub(super) fn worker_history(
    s: &impl Backend,
    worker_id: u64,
    recent_since_ms: i64,
    limit: u64,
) -> StoreResult<Option<crate::model::standings::WorkerHistory>> {
    s.with_reader(&mut |tx| super::reads::worker_history(tx, worker_id, recent_since_ms, limit))
}

/// Per campaign: how many agreeing workers each valid value rests on, and the coordinator's own
/// nodes against the valid ones (a grouped read over every valid result: the API caches it).
pub(super) fn campaign_tallies(s: &impl Backend) -> StoreResult<Vec<CampaignTally>> {
    s.with_reader(&mut |tx| {
        let mut tallies: std::collections::BTreeMap<u64, CampaignTally> = Default::default();
        for r in tx.query(
            &format!(
                "SELECT u.campaign_id, t.n, COUNT(*) FROM workunits u
                 JOIN (SELECT workunit_id, COUNT(*) AS n FROM results
                       WHERE state = {REPLICA_RETURNED} AND outcome = {OUTCOME_VALID}
                       GROUP BY workunit_id) t ON t.workunit_id = u.id
                 WHERE u.state = {WORKUNIT_VALID}
                 GROUP BY u.campaign_id, t.n ORDER BY u.campaign_id, t.n"
            ),
            params![],
        )? {
            let campaign = r.u64(0)?;
            tallies
                .entry(campaign)
                .or_insert_with(|| CampaignTally {
                    campaign,
                    ..CampaignTally::default()
                })
                .values_by_agreeing
                .push((r.u64(1)?, r.u64(2)?));
        }
        for r in tx.query(
            "SELECT campaign_id, CAST(COALESCE(SUM(nodes_valid_hi), 0) AS BIGINT),
                    CAST(COALESCE(SUM(nodes_valid_lo), 0) AS BIGINT)
             FROM campaign_counts GROUP BY campaign_id",
            params![],
        )? {
            let campaign = r.u64(0)?;
            let valid_nodes = (u128::from(r.u64(1)?) << 32) + u128::from(r.u64(2)?);
            let check_nodes = tx
                .query_opt(
                    "SELECT value FROM settings WHERE key = ?1",
                    params![campaign_check_nodes_key(campaign)],
                )?
                .map_or(Ok(0), |r| r.u64(0))?;
            let t = tallies.entry(campaign).or_insert_with(|| CampaignTally {
                campaign,
                ..CampaignTally::default()
            });
            t.check_nodes = check_nodes;
            t.coordinator_node_share = if valid_nodes > 0 {
                check_nodes as f64 / valid_nodes as f64
            } else {
                0.0
            };
        }
        Ok(tallies.into_values().collect())
    })
}
