//! Campaigns, their workunits, progress and tables.

use rusqlite::{OptionalExtension, params};

use super::{CAMPAIGN_COLS, SqliteStore, campaign_by_id, campaign_row, exec};
use crate::assembly::SplitUnit;
use crate::campaign::{ANALYSIS_HASH_MIB, NewCampaign};
use crate::scheduler::{self, CampaignStatus, QuorumPolicy, Transition};
use crate::store::codes::{
    db_to_u64, hex, kind_code, outcome_name, replica_state, status_code, u64_to_db,
};
use crate::store::{
    AnalysisRow, Campaign, CampaignChange, CampaignProgress, ResultRecord, StoreError, StoreResult,
    TableRow,
};

pub(super) fn create_campaign(
    s: &SqliteStore,
    c: &NewCampaign,
    now_ms: i64,
) -> StoreResult<Campaign> {
    let positions = c.positions_text();
    let family_units = c.family_units().map_err(StoreError::Db)?;
    s.with_tx(|tx| {
        let engine = c.analysis.map(|e| e.name().to_string());
        exec(tx,
            "INSERT INTO campaigns (kind, depth, quorum, max_results, positions, created_ms, engine, split_ply, family, name, priority) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![c.kind_name(), c.depth, c.quorum, c.max_results, positions, now_ms, engine, c.split_ply, c.family.name(), c.name, c.priority],
        )?;
        let kind = kind_code(c.analysis);
        let hash_mib = c.analysis.map(|_| ANALYSIS_HASH_MIB);
        let id = tx.last_insert_rowid();
        let needed = match scheduler::transition(QuorumPolicy { quorum: c.quorum, max_results: c.max_results }, &[]) {
            Transition::Pending { needed } => needed,
            _ => c.quorum,
        };
        let mut st = tx.prepare_cached(
            "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, known_nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        let mut split_st = tx.prepare_cached(
            "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, origin_sp, multiplicity, first_moves)
             VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9)",
        )?;
        // All workunits go in this one transaction through prepared statements: a campaign
        // appears whole or not at all, and there is no per-unit commit.
        for &sp in &c.positions {
            let start = c960_common::StartPosition::new(u32::from(sp)).map_err(|e| StoreError::Db(e.to_string()))?;
            if c.split_ply > 0 {
                let sub_depth = c.depth - c.split_ply;
                for node in c960_common::split::split(&start.position(), c.split_ply) {
                    let moves: Vec<(&String, &u64)> = node.by_first_move.iter().collect();
                    let moves = serde_json::to_string(&moves).map_err(|e| StoreError::Db(e.to_string()))?;
                    split_st.execute(params![id, node.fen, sub_depth, c.quorum, c.max_results, needed, sp, u64_to_db(node.multiplicity), moves])?;
                }
                continue;
            }
            let fen = start.position().to_fen(c960_common::CastlingNotation::Shredder);
            let known = if c.analysis.is_none() { crate::known::perft(sp, c.depth).map(u64_to_db) } else { None };
            st.execute(params![id, sp, fen, c.depth, c.quorum, c.max_results, needed, kind, hash_mib, known])?;
        }
        // Other families: the FEN is all a worker needs; the number is kept for exports.
        let mut family_st = tx.prepare_cached(
            "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, family_number) VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for (number, fen) in &family_units {
            family_st.execute(params![id, fen, c.depth, c.quorum, c.max_results, needed, kind, hash_mib, number])?;
        }
        // The counters the triggers keep from now on start from the units just inserted.
        exec(tx,
            "INSERT INTO campaign_counts (campaign_id, total, queued) SELECT ?1, COUNT(*), COALESCE(SUM(needed), 0) FROM workunits WHERE campaign_id = ?1",
            [id],
        )?;
        Ok(Campaign {
            id: db_to_u64(id),
            kind: c.kind_name().into(),
            engine,
            split_ply: c.split_ply,
            depth: c.depth,
            quorum: c.quorum,
            max_results: c.max_results,
            positions,
            family: c.family.name().to_string(),
            name: c.name.clone(),
            priority: c.priority,
            status: CampaignStatus::Active,
        })
    })
}

pub(super) fn campaign(s: &SqliteStore, campaign_id: u64) -> StoreResult<Campaign> {
    campaign_by_id(&*s.lock()?, campaign_id)
}

pub(super) fn update_campaign(
    s: &SqliteStore,
    campaign_id: u64,
    change: &CampaignChange,
) -> StoreResult<Campaign> {
    s.with_tx(|tx| {
        let c = campaign_by_id(tx, campaign_id)?;
        let id = u64_to_db(campaign_id);
        match change {
            CampaignChange::Name(name) => exec(
                tx,
                "UPDATE campaigns SET name = ?2 WHERE id = ?1",
                params![id, name],
            )?,
            CampaignChange::Priority(p) => exec(
                tx,
                "UPDATE campaigns SET priority = ?2 WHERE id = ?1",
                params![id, p],
            )?,
            CampaignChange::Status(action) => {
                let status = scheduler::apply_action(c.status, *action)
                    .map_err(|why| StoreError::CampaignCancelled(campaign_id, why))?;
                exec(
                    tx,
                    "UPDATE campaigns SET status = ?2 WHERE id = ?1",
                    params![id, status_code(status)],
                )?
            }
        };
        campaign_by_id(tx, campaign_id)
    })
}

pub(super) fn find_campaign(s: &SqliteStore, c: &NewCampaign) -> StoreResult<Option<Campaign>> {
    let conn = s.lock()?;
    Ok(conn
        .query_row(
            &format!(
                "SELECT {CAMPAIGN_COLS} FROM campaigns WHERE kind = ?5 AND depth = ?1 AND quorum = ?2
                 AND max_results = ?3 AND positions = ?4 AND engine IS ?6 AND split_ply = ?7 AND family = ?8 AND status != 2 ORDER BY id LIMIT 1"
            ),
            params![
                c.depth,
                c.quorum,
                c.max_results,
                c.positions_text(),
                c.kind_name(),
                c.analysis.map(|e| e.name()),
                c.split_ply,
                c.family.name()
            ],
            campaign_row,
        )
        .optional()?)
}

pub(super) fn campaigns(s: &SqliteStore) -> StoreResult<Vec<Campaign>> {
    let conn = s.read()?;
    let mut st = conn.prepare(&format!(
        "SELECT {CAMPAIGN_COLS} FROM campaigns ORDER BY id"
    ))?;
    Ok(st.query_map([], campaign_row)?.collect::<Result<_, _>>()?)
}

pub(super) fn workunit_exists(s: &SqliteStore, workunit_id: u64) -> StoreResult<bool> {
    let conn = s.lock()?;
    Ok(conn
        .query_row(
            "SELECT 1 FROM workunits WHERE id = ?1",
            [u64_to_db(workunit_id)],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub(super) fn progress(s: &SqliteStore) -> StoreResult<Vec<CampaignProgress>> {
    let campaigns = campaigns(s)?;
    let conn = s.lock()?;
    let mut st = conn.prepare_cached(
        "SELECT total, valid, failed, queued, in_flight, nodes_valid_hi, nodes_valid_lo, nodes_computed_hi, nodes_computed_lo
         FROM campaign_counts WHERE campaign_id = ?1",
    )?;
    let split = |hi: i64, lo: i64| (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128;
    let mut out = Vec::with_capacity(campaigns.len());
    for c in campaigns {
        let p = st
            .query_row([u64_to_db(c.id)], |r| {
                Ok(CampaignProgress {
                    campaign: c.clone(),
                    total: r.get::<_, i64>(0)? as u64,
                    valid: r.get::<_, i64>(1)? as u64,
                    failed: r.get::<_, i64>(2)? as u64,
                    queued_replicas: r.get::<_, i64>(3)? as u64,
                    in_flight: r.get::<_, i64>(4)? as u64,
                    nodes_valid: split(r.get(5)?, r.get(6)?),
                    nodes_computed: split(r.get(7)?, r.get(8)?),
                })
            })
            .optional()?
            .ok_or_else(|| StoreError::Db(format!("campaign {} has no counters", c.id)))?;
        out.push(p);
    }
    Ok(out)
}

pub(super) fn table(s: &SqliteStore, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)> {
    let conn = s.read()?;
    let campaign = campaign_by_id(&conn, campaign_id)?;
    let mut st = conn.prepare(
        "SELECT w.id, w.sp, w.fen, w.depth, w.nodes,
                CASE WHEN w.state = 0 AND w.reverify != 0 THEN 3 ELSE w.state END, w.canonical_digest,
                (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = 1),
                w.family_number
         FROM workunits w WHERE w.campaign_id = ?1 ORDER BY w.sp, w.family_number, w.id",
    )?;
    let rows = st
        .query_map([u64_to_db(campaign_id)], |r| {
            let state: i64 = r.get(5)?;
            let digest: Option<Vec<u8>> = r.get(6)?;
            Ok(TableRow {
                workunit_id: db_to_u64(r.get(0)?),
                sp: r.get::<_, Option<i64>>(1)?.map(|n| n as u16),
                family_number: r.get::<_, Option<i64>>(8)?.map(|n| n as u32),
                fen: r.get(2)?,
                depth: r.get::<_, i64>(3)? as u32,
                nodes: if state == 1 {
                    r.get::<_, Option<i64>>(4)?.map(db_to_u64)
                } else {
                    None
                },
                status: match state {
                    0 => "open",
                    1 => "valid",
                    // Reopened because a worker that helped validate it was caught lying.
                    3 => "reverifying",
                    _ => "failed",
                }
                .into(),
                agreeing_results: r.get::<_, i64>(7)? as u32,
                digest: digest.map(|d| hex(&d)),
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok((campaign, rows))
}

pub(super) fn visit_split_units(
    s: &SqliteStore,
    campaign_id: u64,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<Campaign> {
    let conn = s.read()?;
    let campaign = campaign_by_id(&conn, campaign_id)?;
    super::reads::visit_split_units_of(&conn, campaign_id, 0, u16::MAX, visit)?;
    Ok(campaign)
}

pub(super) fn analysis_table(
    s: &SqliteStore,
    campaign_id: u64,
) -> StoreResult<(Campaign, Vec<AnalysisRow>)> {
    let conn = s.read()?;
    let campaign = campaign_by_id(&conn, campaign_id)?;
    let mut st = conn.prepare(
        "SELECT w.id, w.sp, w.fen, w.depth, w.state,
                (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = 1),
                (SELECT payload FROM results r WHERE r.id = w.canonical_result_id),
                w.family_number
         FROM workunits w WHERE w.campaign_id = ?1 ORDER BY w.sp, w.family_number, w.id",
    )?;
    let rows = st
        .query_map([u64_to_db(campaign_id)], |r| {
            let state: i64 = r.get(4)?;
            let payload: Option<String> = r.get(6)?;
            Ok((
                AnalysisRow {
                    workunit_id: db_to_u64(r.get(0)?),
                    sp: r.get::<_, Option<i64>>(1)?.map(|n| n as u16),
                    family_number: r.get::<_, Option<i64>>(7)?.map(|n| n as u32),
                    fen: r.get(2)?,
                    depth: r.get::<_, i64>(3)? as u32,
                    status: match state {
                        0 => "open",
                        1 => "valid",
                        _ => "failed",
                    }
                    .into(),
                    agreeing_results: r.get::<_, i64>(5)? as u32,
                    result: None,
                },
                if state == 1 { payload } else { None },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let rows = rows
        .into_iter()
        .map(|(mut row, payload)| {
            if let Some(p) = payload {
                row.result =
                    Some(serde_json::from_str(&p).map_err(|e| StoreError::Db(e.to_string()))?);
            }
            Ok(row)
        })
        .collect::<StoreResult<_>>()?;
    Ok((campaign, rows))
}

pub(super) fn results(s: &SqliteStore, workunit_id: u64) -> StoreResult<Vec<ResultRecord>> {
    let conn = s.lock()?;
    let mut st = conn.prepare(
        "SELECT id, workunit_id, worker_id, state, outcome, nodes, digest FROM results WHERE workunit_id = ?1 ORDER BY id",
    )?;
    Ok(st
        .query_map([u64_to_db(workunit_id)], |r| {
            let digest: Option<Vec<u8>> = r.get(6)?;
            Ok(ResultRecord {
                id: db_to_u64(r.get(0)?),
                workunit_id: db_to_u64(r.get(1)?),
                worker_id: db_to_u64(r.get(2)?),
                state: replica_state(r.get(3)?).name().into(),
                outcome: outcome_name(r.get(4)?).into(),
                nodes: r.get::<_, Option<i64>>(5)?.map(db_to_u64),
                digest: digest.map(|d| hex(&d)),
            })
        })?
        .collect::<Result<_, _>>()?)
}

pub(super) fn visit_split_units_of(
    s: &SqliteStore,
    campaign_id: u64,
    first_sp: u16,
    last_sp: u16,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<()> {
    super::reads::visit_split_units_of(&*s.lock()?, campaign_id, first_sp, last_sp, visit)
}
