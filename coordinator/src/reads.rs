//! The read-only queries of the public pages (leaderboard, one worker's history, a page of a
//! split campaign's table) for the SQLite store, and the types they return. The `Store` trait
//! methods of the same names call these with the store's connection.
//!
//! Cost: each query reads only what the page shows. Credit is summed per listed worker through
//! the `results(worker_id)` index (so a leaderboard page reads the results of its listed
//! workers, never the whole results table) and is therefore always exact: a result voided by
//! quarantine stops counting at once. The order of the leaderboard is the trigger-free
//! `workers.valid` counter, which the store keeps in the same transactions as the outcomes.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::assembly::SplitUnit;
use crate::store::{StoreResult, db_to_u64, u64_to_db};

/// One worker on the leaderboard. Nothing secret: no key hash, no address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerStanding {
    /// Id.
    pub id: u64,
    /// Self-chosen name (untrusted text: escape it).
    pub name: String,
    /// `name version` of the engine it registered with (untrusted text).
    pub engine: String,
    /// Registered at (ms since the epoch).
    pub created_ms: i64,
    /// Last request (ms since the epoch).
    pub last_seen_ms: i64,
    /// Credit: results that agreed with a canonical result (passed the quorum).
    pub valid_results: u64,
    /// Credit: nodes of those results (a string in JSON).
    #[serde(serialize_with = "u128_str")]
    pub valid_nodes: u128,
    /// Nodes of all results it returned in the throughput window.
    #[serde(serialize_with = "u128_str")]
    pub recent_nodes: u128,
    /// Results that lost a vote.
    pub lost_votes: u64,
    /// Results refused on receipt.
    pub refused: u64,
    /// Banned by the operator.
    pub banned: bool,
    /// Quarantined.
    pub quarantined: bool,
}

fn u128_str<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// Which workers a leaderboard query lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingsQuery {
    /// Only workers seen since then (the "connected" list), most recently seen first; `None`:
    /// every worker, most validated results first.
    pub seen_since_ms: Option<i64>,
    /// `recent_nodes` counts results returned since then.
    pub recent_since_ms: i64,
    /// Rows to skip.
    pub offset: u64,
    /// Rows to return.
    pub limit: u64,
}

/// One result (replica) of a worker, for its history page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerResult {
    /// Result id.
    pub id: u64,
    /// Workunit.
    pub workunit_id: u64,
    /// Its campaign.
    pub campaign_id: u64,
    /// Start position (or the origin of a split workunit).
    pub sp: Option<u16>,
    /// Replica state name.
    pub state: String,
    /// `pending`, `valid` or `invalid`.
    pub outcome: String,
    /// Nodes when returned.
    pub nodes: Option<u64>,
    /// Issued at.
    pub issued_ms: i64,
    /// Returned at.
    pub returned_ms: Option<i64>,
    /// Wall time the worker reported.
    pub elapsed_ms: Option<u64>,
}

/// One worker and its latest results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkerHistory {
    /// The standing.
    pub standing: WorkerStanding,
    /// Latest results first.
    pub results: Vec<WorkerResult>,
}

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
                    state: crate::scheduler::ReplicaState::from_db(r.get(4)?)
                        .name()
                        .into(),
                    outcome: match r.get::<_, i64>(5)? {
                        1 => "valid",
                        2 => "invalid",
                        _ => "pending",
                    }
                    .into(),
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
