//! The public pages' read-only queries; the types and what they cost are in [`crate::reads`].

use rusqlite::{Connection, OptionalExtension, params};

use crate::assembly::SplitUnit;
use crate::reads::{StandingsQuery, WorkerHistory, WorkerResult, WorkerStanding};
use crate::store::StoreResult;
use crate::store::codes::{db_to_u64, outcome_name, replica_state, u64_to_db};

/// Valid results, their nodes (hi/lo halves, exact past 2^63) and recent nodes of one worker.
const CREDIT: &str = "SELECT COUNT(*) FILTER (WHERE outcome = 1),
        COALESCE(SUM(nodes >> 32) FILTER (WHERE outcome = 1), 0),
        COALESCE(SUM(nodes & 4294967295) FILTER (WHERE outcome = 1), 0),
        COALESCE(SUM(nodes >> 32) FILTER (WHERE returned_ms >= ?2), 0),
        COALESCE(SUM(nodes & 4294967295) FILTER (WHERE returned_ms >= ?2), 0)
     FROM results WHERE worker_id = ?1";

const STANDING_COLS: &str = "id, name, engine, created_ms, last_seen_ms, lost_votes, refused, banned, quarantined_ms IS NOT NULL";

fn halves(hi: i64, lo: i64) -> u128 {
    (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128
}

fn standing_row(r: &rusqlite::Row) -> rusqlite::Result<WorkerStanding> {
    Ok(WorkerStanding {
        id: db_to_u64(r.get(0)?),
        name: r.get(1)?,
        engine: r.get(2)?,
        created_ms: r.get(3)?,
        last_seen_ms: r.get(4)?,
        valid_results: 0,
        valid_nodes: 0,
        recent_nodes: 0,
        lost_votes: db_to_u64(r.get(5)?),
        refused: db_to_u64(r.get(6)?),
        banned: r.get::<_, i64>(7)? != 0,
        quarantined: r.get::<_, i64>(8)? != 0,
    })
}

fn add_credit(conn: &Connection, w: &mut WorkerStanding, recent_since_ms: i64) -> StoreResult<()> {
    let mut st = conn.prepare_cached(CREDIT)?;
    let (n, vh, vl, rh, rl): (i64, i64, i64, i64, i64) = st
        .query_row(params![u64_to_db(w.id), recent_since_ms], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    w.valid_results = n as u64;
    w.valid_nodes = halves(vh, vl);
    w.recent_nodes = halves(rh, rl);
    Ok(())
}

/// The leaderboard rows `q` asks for.
pub(crate) fn standings(conn: &Connection, q: &StandingsQuery) -> StoreResult<Vec<WorkerStanding>> {
    let mut out = {
        let (filter, order) = match q.seen_since_ms {
            Some(_) => ("WHERE last_seen_ms >= ?3", "last_seen_ms DESC, id"),
            None => ("WHERE ?3 IS NULL", "valid DESC, id"),
        };
        let mut st = conn.prepare_cached(&format!(
            "SELECT {STANDING_COLS} FROM workers {filter} ORDER BY {order} LIMIT ?1 OFFSET ?2"
        ))?;
        st.query_map(
            params![
                u64_to_db(q.limit.min(i64::MAX as u64)),
                u64_to_db(q.offset.min(i64::MAX as u64)),
                q.seen_since_ms
            ],
            standing_row,
        )?
        .collect::<Result<Vec<_>, _>>()?
    };
    for w in &mut out {
        add_credit(conn, w, q.recent_since_ms)?;
    }
    Ok(out)
}

/// One worker's standing and its `limit` latest results.
pub(crate) fn worker_history(
    conn: &Connection,
    worker_id: u64,
    recent_since_ms: i64,
    limit: u64,
) -> StoreResult<Option<WorkerHistory>> {
    let standing = conn
        .query_row(
            &format!("SELECT {STANDING_COLS} FROM workers WHERE id = ?1"),
            [u64_to_db(worker_id)],
            standing_row,
        )
        .optional()?;
    let Some(mut standing) = standing else {
        return Ok(None);
    };
    add_credit(conn, &mut standing, recent_since_ms)?;
    let mut st = conn.prepare_cached(
        "SELECT r.id, r.workunit_id, w.campaign_id, COALESCE(w.sp, w.origin_sp), r.state, r.outcome,
                r.nodes, r.issued_ms, r.returned_ms, r.elapsed_ms
         FROM results r JOIN workunits w ON w.id = r.workunit_id
         WHERE r.worker_id = ?1 ORDER BY r.id DESC LIMIT ?2",
    )?;
    let results = st
        .query_map(
            params![u64_to_db(worker_id), u64_to_db(limit.min(i64::MAX as u64))],
            |r| {
                Ok(WorkerResult {
                    id: db_to_u64(r.get(0)?),
                    workunit_id: db_to_u64(r.get(1)?),
                    campaign_id: db_to_u64(r.get(2)?),
                    sp: r.get::<_, Option<i64>>(3)?.map(|n| n as u16),
                    state: replica_state(r.get(4)?).name().into(),
                    outcome: outcome_name(r.get(5)?).into(),
                    nodes: r.get::<_, Option<i64>>(6)?.map(db_to_u64),
                    issued_ms: r.get(7)?,
                    returned_ms: r.get(8)?,
                    elapsed_ms: r.get::<_, Option<i64>>(9)?.map(db_to_u64),
                })
            },
        )?
        .collect::<Result<_, _>>()?;
    Ok(Some(WorkerHistory { standing, results }))
}

/// Streams the split workunits of start positions `first_sp..=last_sp` of a campaign (through
/// the `workunits(campaign_id, origin_sp)` index); `0..=u16::MAX` streams them all.
pub(crate) fn visit_split_units_of(
    conn: &Connection,
    campaign_id: u64,
    first_sp: u16,
    last_sp: u16,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<()> {
    let mut st = conn.prepare_cached(
        "SELECT origin_sp, state, nodes, multiplicity, first_moves FROM workunits
         WHERE campaign_id = ?1 AND origin_sp BETWEEN ?2 AND ?3",
    )?;
    let mut rows = st.query(params![u64_to_db(campaign_id), first_sp, last_sp])?;
    while let Some(r) = rows.next()? {
        let state: i64 = r.get(1)?;
        let moves: String = r.get(4)?;
        visit(SplitUnit {
            origin_sp: r.get::<_, i64>(0)? as u16,
            state,
            nodes: if state == 1 {
                r.get::<_, Option<i64>>(2)?.map(db_to_u64)
            } else {
                None
            },
            multiplicity: db_to_u64(r.get(3)?),
            first_moves: serde_json::from_str(&moves)
                .map_err(|e| crate::store::StoreError::Db(e.to_string()))?,
        });
    }
    Ok(())
}
