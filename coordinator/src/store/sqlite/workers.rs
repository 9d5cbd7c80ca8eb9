//! Workers: registration, trust, integrity settings, the coordinator's checks, bans.

use rusqlite::{OptionalExtension, params};

use super::transition::{bump_setting, retransition};
use super::{SqliteStore, WORKER_COLS, exec, worker_in, worker_row};
use crate::store::codes::{db_to_u64, kind_of, trust_code, u64_to_db};
use crate::store::{
    CheckCost, CheckOutcome, CheckRequest, StoreError, StoreResult, WorkerRecord, WorkerSummary,
};
use crate::trust::{Integrity, TrustLevel};

pub(super) fn register_worker_from(
    s: &SqliteStore,
    name: &str,
    key_hash: &[u8],
    engine: &str,
    block: Option<&str>,
    now_ms: i64,
) -> StoreResult<u64> {
    s.with_tx(|tx| {
        exec(tx,
            "INSERT INTO workers (name, key_hash, engine, created_ms, last_seen_ms, reg_block, last_block) VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?5)",
            params![name, key_hash, engine, now_ms, block],
        )?;
        Ok(db_to_u64(tx.last_insert_rowid()))
    })
}

pub(super) fn set_trust(
    s: &SqliteStore,
    worker_id: u64,
    trusted: bool,
) -> StoreResult<WorkerRecord> {
    s.with_tx(|tx| {
        let level = if trusted {
            TrustLevel::Operator
        } else {
            TrustLevel::Untrusted
        };
        let changed = exec(
            tx,
            "UPDATE workers SET trusted = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), trust_code(level)],
        )?;
        if changed == 0 {
            return Err(StoreError::UnknownWorker(worker_id));
        }
        worker_in(tx, worker_id)?.ok_or(StoreError::UnknownWorker(worker_id))
    })
}

pub(super) fn set_integrity(s: &SqliteStore, integrity: &Integrity) -> StoreResult<()> {
    s.with_tx(|tx| {
        for (k, v) in integrity.to_settings() {
            exec(
                tx,
                "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)",
                params![k, u64_to_db(v)],
            )?;
        }
        Ok(())
    })
}

pub(super) fn checks_wanted(s: &SqliteStore, limit: usize) -> StoreResult<Vec<CheckRequest>> {
    let conn = s.lock()?;
    let mut st = conn.prepare_cached(
        "SELECT w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib
         FROM workunits w WHERE w.check_state = 1 ORDER BY w.id LIMIT ?1",
    )?;
    let rows = st.query_map([limit as i64], |r| {
        Ok(CheckRequest {
            workunit_id: db_to_u64(r.get(0)?),
            kind: kind_of(r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn record_check(
    s: &SqliteStore,
    workunit_id: u64,
    outcome: &CheckOutcome,
    now_ms: i64,
) -> StoreResult<()> {
    s.with_tx(|tx| {
        match outcome {
            CheckOutcome::Verified { digest, nodes } => {
                exec(
                    tx,
                    "UPDATE workunits SET check_state = 2, verified_digest = ?2 WHERE id = ?1",
                    params![u64_to_db(workunit_id), digest.to_vec()],
                )?;
                bump_setting(tx, "checks_run", 1)?;
                bump_setting(tx, "check_nodes", *nodes)?;
            }
            CheckOutcome::OverBudget => {
                exec(
                    tx,
                    "UPDATE workunits SET check_state = 3 WHERE id = ?1",
                    [u64_to_db(workunit_id)],
                )?;
                bump_setting(tx, "checks_over_budget", 1)?;
            }
        }
        retransition(tx, workunit_id, now_ms)
    })
}

pub(super) fn check_cost(s: &SqliteStore) -> StoreResult<CheckCost> {
    let conn = s.lock()?;
    let get = |key: &str| -> StoreResult<u64> {
        Ok(conn
            .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
            .query_row([key], |r| r.get::<_, i64>(0))
            .optional()?
            .map_or(0, db_to_u64))
    };
    let waiting: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM workunits WHERE check_state = 1")?
        .query_row([], |r| r.get(0))?;
    let valid: i64 = conn
        .prepare_cached("SELECT COALESCE(SUM(valid), 0) FROM campaign_counts")?
        .query_row([], |r| r.get(0))?;
    let returned = get("results_returned")?;
    Ok(CheckCost {
        checks_run: get("checks_run")?,
        check_nodes: get("check_nodes")?,
        checks_over_budget: get("checks_over_budget")?,
        checks_waiting: db_to_u64(waiting),
        replicas_per_valid_workunit: if valid > 0 {
            returned as f64 / valid as f64
        } else {
            0.0
        },
    })
}

pub(super) fn worker(s: &SqliteStore, id: u64) -> StoreResult<Option<WorkerRecord>> {
    let conn = s.lock()?;
    worker_in(&conn, id)
}

pub(super) fn worker_summary(s: &SqliteStore, now_ms: i64) -> StoreResult<WorkerSummary> {
    let conn = s.lock()?;
    let (registered, active): (i64, i64) = conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(last_seen_ms >= ?1), 0) FROM workers",
        [now_ms - 3_600_000],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut st = conn.prepare(&format!(
        "SELECT {WORKER_COLS} FROM workers
         WHERE lost_votes + refused + checks_failed > 0 OR banned != 0 OR quarantined_ms IS NOT NULL
         ORDER BY banned DESC, quarantined_ms IS NOT NULL DESC, checks_failed + refused DESC, lost_votes DESC, id LIMIT 20"
    ))?;
    let marked = st.query_map([], worker_row)?.collect::<Result<_, _>>()?;
    let trusted: i64 =
        conn.query_row("SELECT COUNT(*) FROM workers WHERE trusted != 0", [], |r| {
            r.get(0)
        })?;
    let mut st = conn.prepare(&format!(
        "SELECT {WORKER_COLS} FROM workers ORDER BY id LIMIT 200"
    ))?;
    let list = st.query_map([], worker_row)?.collect::<Result<_, _>>()?;
    Ok(WorkerSummary {
        registered: registered as u64,
        active_last_hour: active as u64,
        marked,
        trusted: trusted as u64,
        list,
    })
}

pub(super) fn set_max_strikes(s: &SqliteStore, max_strikes: u64) -> StoreResult<()> {
    s.with_tx(|tx| {
        tx.execute(
            "INSERT OR REPLACE INTO settings (key, value) VALUES ('max_strikes', ?1)",
            [u64_to_db(max_strikes)],
        )?;
        Ok(())
    })
}

pub(super) fn set_banned(
    s: &SqliteStore,
    worker_id: u64,
    banned: bool,
    now_ms: i64,
) -> StoreResult<WorkerRecord> {
    s.with_tx(|tx| {
        let changed = if banned {
            tx.execute(
                "UPDATE workers SET banned = 1 WHERE id = ?1",
                [u64_to_db(worker_id)],
            )?
        } else {
            tx.execute(
                "UPDATE workers SET banned = 0, quarantined_ms = NULL, lost_votes = 0, refused = 0 WHERE id = ?1",
                [u64_to_db(worker_id)],
            )?
        };
        if changed == 0 {
            return Err(StoreError::UnknownWorker(worker_id));
        }
        if banned {
            super::quarantine::quarantine(tx, worker_id, now_ms)?;
        }
        Ok(tx.query_row(
            &format!("SELECT {WORKER_COLS} FROM workers WHERE id = ?1"),
            [u64_to_db(worker_id)],
            worker_row,
        )?)
    })
}

pub(super) fn standings(
    s: &SqliteStore,
    q: &crate::reads::StandingsQuery,
) -> StoreResult<Vec<crate::reads::WorkerStanding>> {
    super::reads::standings(&*s.lock()?, q)
}

pub(super) fn worker_history(
    s: &SqliteStore,
    worker_id: u64,
    recent_since_ms: i64,
    limit: u64,
) -> StoreResult<Option<crate::reads::WorkerHistory>> {
    super::reads::worker_history(&*s.lock()?, worker_id, recent_since_ms, limit)
}
