//! Campaigns, their workunits, progress and tables.

use c960_common::family::Family;
use std::collections::HashMap;

use super::{CAMPAIGN_COLS, Tx, campaign_by_id, campaign_row};
use crate::model::{
    AnalysisRow, Campaign, CampaignChange, CampaignProgress, CampaignStatus, ResultRecord,
    RowStatus, StoreError, StoreResult, TableRow,
};
use crate::store::codes::{
    CAMPAIGN_CANCELLED, CHECK_AUDIT_REPLICA, CHECK_AUDIT_WANTED, CHECK_RESPLIT_DONE,
    CHECK_RESPLIT_WANTED, CHECK_UNAUDITED, CHECK_VERIFIED, KIND_PERFT, OUTCOME_VALID,
    REPLICA_RETURNED, WORKUNIT_OPEN, WORKUNIT_REVERIFYING, WORKUNIT_VALID, hex, kind_code,
    replica_state, result_outcome, row_status, status_code, u64_to_db,
};
use crate::store::db::{Backend, Row, params};
use crate::work::assembly::SplitUnit;
use crate::work::campaign::{ANALYSIS_HASH_MIB, NewCampaign, NewWorkunit};
use crate::work::transitioner;

pub(super) fn create_campaign(
    s: &impl Backend,
    c: &NewCampaign,
    now_ms: i64,
) -> StoreResult<Campaign> {
    let positions = c.positions_text();
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let engine = c.work.engine().map(|e| e.name().to_string());
        let games = c.work.self_play().map(|b| b.games);
        let move_nodes = c.work.self_play().map(|b| u64_to_db(b.nodes));
        let id = tx.query_one(
            "INSERT INTO campaigns (kind, depth, quorum, max_results, positions, created_ms, engine, split_ply, family, name, priority, games, move_nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING id",
            params![c.kind().as_str(), c.work.depth(), c.quorum, c.max_results, positions, now_ms, engine, c.work.split_ply(), c.family.name(), c.name, c.priority, games, move_nodes],
        )?.i64(0)?;
        let kind = kind_code(c.work);
        let hash_mib = c.work.engine().map(|_| ANALYSIS_HASH_MIB);
        let needed = c.needed();
        // All workunits go in this one transaction through prepared statements: a campaign
        // appears whole or not at all, and there is no per-unit commit. What they are is
        // `NewCampaign::workunits`'s decision; here they are only written.
        for unit in c.workunits() {
            match unit.map_err(StoreError::Db)? {
                NewWorkunit::Split { origin_sp, fen, depth, multiplicity, first_moves } => tx.exec(
                    &format!("INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, origin_sp, multiplicity, first_moves)
                     VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, {KIND_PERFT}, ?7, ?8, ?9)"),
                    params![id, fen, depth, c.quorum, c.max_results, needed, origin_sp, u64_to_db(multiplicity), first_moves],
                )?,
                NewWorkunit::Start { sp, fen, known_nodes } => tx.exec(
                    "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, known_nodes, games, move_nodes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    params![id, sp, fen, c.work.depth(), c.quorum, c.max_results, needed, kind, hash_mib, known_nodes.map(u64_to_db), games, move_nodes],
                )?,
                NewWorkunit::Family { number, fen } => tx.exec(
                    "INSERT INTO workunits (campaign_id, sp, fen, depth, quorum, max_results, needed, kind, hash_mib, family_number, games, move_nodes) VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    params![id, fen, c.work.depth(), c.quorum, c.max_results, needed, kind, hash_mib, number, games, move_nodes],
                )?,
            };
        }
        // The counters the triggers keep from now on start from the units just inserted.
        tx.exec(
            "INSERT INTO campaign_counts (campaign_id, total, queued) SELECT ?1, COUNT(*), COALESCE(SUM(needed), 0) FROM workunits WHERE campaign_id = ?1",
            params![id],
        )?;
        if let Some(sql) = tx.dialect().refresh_statistics() {
            tx.exec(sql, params![])?;
        }
        Ok(Campaign {
            id: id as u64,
            kind: c.kind(),
            engine: engine.clone(),
            split_ply: c.work.split_ply(),
            depth: c.work.depth(),
            quorum: c.quorum,
            max_results: c.max_results,
            positions: positions.clone(),
            family: c.family.name().to_string(),
            name: c.name.clone(),
            priority: c.priority,
            status: CampaignStatus::Active,
            games,
            move_nodes: c.work.self_play().map(|b| b.nodes),
            stall: None,
        })
    })
}

pub(super) fn update_campaign(
    s: &impl Backend,
    campaign_id: u64,
    change: &CampaignChange,
) -> StoreResult<Campaign> {
    s.with_tx(&mut |tx| {
        let c = campaign_by_id(tx, campaign_id)?;
        let id = u64_to_db(campaign_id);
        match change {
            CampaignChange::Name(name) => tx.exec(
                "UPDATE campaigns SET name = ?2 WHERE id = ?1",
                params![id, name],
            )?,
            CampaignChange::Priority(p) => tx.exec(
                "UPDATE campaigns SET priority = ?2 WHERE id = ?1",
                params![id, p],
            )?,
            CampaignChange::Status(action) => {
                let status = transitioner::apply_action(c.status, *action)
                    .map_err(|why| StoreError::CampaignCancelled(campaign_id, why))?;
                tx.exec(
                    "UPDATE campaigns SET status = ?2 WHERE id = ?1",
                    params![id, status_code(status)],
                )?
            }
        };
        campaign_by_id(tx, campaign_id)
    })
}

pub(super) fn find_campaign(s: &impl Backend, c: &NewCampaign) -> StoreResult<Option<Campaign>> {
    s.with_conn(&mut |tx| {
        tx.query_opt(
            &format!(
                "SELECT {CAMPAIGN_COLS} FROM campaigns WHERE kind = ?5 AND depth = ?1 AND quorum = ?2
                 AND max_results = ?3 AND positions = ?4 AND engine IS NOT DISTINCT FROM CAST(?6 AS TEXT) AND split_ply = ?7
                 AND family = ?8 AND games IS NOT DISTINCT FROM CAST(?9 AS BIGINT)
                 AND move_nodes IS NOT DISTINCT FROM CAST(?10 AS BIGINT) AND status != {CAMPAIGN_CANCELLED} ORDER BY id LIMIT 1"
            ),
            params![
                c.work.depth(),
                c.quorum,
                c.max_results,
                c.positions_text(),
                c.kind().as_str(),
                c.work.engine().map(|e| e.name()),
                c.work.split_ply(),
                c.family.name(),
                c.work.self_play().map(|b| i64::from(b.games)),
                c.work.self_play().map(|b| u64_to_db(b.nodes))
            ],
        )?
        .as_ref()
        .map(campaign_row)
        .transpose()
    })
}

fn campaigns_in(tx: Tx) -> StoreResult<Vec<Campaign>> {
    tx.query(
        &format!("SELECT {CAMPAIGN_COLS} FROM campaigns ORDER BY id"),
        params![],
    )?
    .iter()
    .map(campaign_row)
    .collect()
}

pub(super) fn campaigns(s: &impl Backend) -> StoreResult<Vec<Campaign>> {
    s.with_reader(&mut campaigns_in)
}

pub(super) fn workunit_exists(s: &impl Backend, workunit_id: u64) -> StoreResult<bool> {
    s.with_conn(&mut |tx| {
        Ok(tx
            .query_opt(
                "SELECT 1 FROM workunits WHERE id = ?1",
                params![u64_to_db(workunit_id)],
            )?
            .is_some())
    })
}

/// A campaign's counters summed over their shards (migration 14), in the columns' order.
pub(crate) const SUMMED_COUNTS: &str = "CAST(SUM(total) AS BIGINT), CAST(SUM(valid) AS BIGINT), CAST(SUM(failed) AS BIGINT), \
     CAST(SUM(queued) AS BIGINT), CAST(SUM(in_flight) AS BIGINT), CAST(SUM(nodes_valid_hi) AS BIGINT), \
     CAST(SUM(nodes_valid_lo) AS BIGINT), CAST(SUM(nodes_computed_hi) AS BIGINT), CAST(SUM(nodes_computed_lo) AS BIGINT)";

/// The number of columns in [`SUMMED_COUNTS`].
const SUMMED_COUNT_COLUMNS: usize = 9;

/// A campaign's progress from its summed counters (a row of [`SUMMED_COUNTS`]).
fn progress_of(campaign: Campaign, r: &Row) -> StoreResult<CampaignProgress> {
    let split = |hi: i64, lo: i64| (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128;
    Ok(CampaignProgress {
        campaign,
        total: r.u64(0)?,
        valid: r.u64(1)?,
        failed: r.u64(2)?,
        queued_replicas: r.u64(3)?,
        in_flight: r.u64(4)?,
        nodes_valid: split(r.i64(5)?, r.i64(6)?),
        nodes_computed: split(r.i64(7)?, r.i64(8)?),
    })
}

pub(super) fn progress(s: &impl Backend) -> StoreResult<Vec<CampaignProgress>> {
    let campaigns = campaigns(s)?;
    s.with_reader(&mut |tx| {
        // Every campaign's counters in one statement (the dashboard and the metrics read them
        // often, with any number of campaigns).
        let mut counts: HashMap<u64, Row> = HashMap::new();
        for r in tx.query(
            &format!(
                "SELECT {SUMMED_COUNTS}, campaign_id FROM campaign_counts GROUP BY campaign_id"
            ),
            params![],
        )? {
            counts.insert(r.u64(SUMMED_COUNT_COLUMNS)?, r);
        }
        let mut out = Vec::with_capacity(campaigns.len());
        for c in &campaigns {
            let r = counts
                .get(&c.id)
                .ok_or_else(|| StoreError::Db(format!("campaign {} has no counters", c.id)))?;
            out.push(progress_of(c.clone(), r)?);
        }
        Ok(out)
    })
}

/// One campaign's progress, from its own counters only.
pub(super) fn campaign_progress(tx: Tx, campaign_id: u64) -> StoreResult<CampaignProgress> {
    let campaign = campaign_by_id(tx, campaign_id)?;
    let r = tx
        .query_opt(
            &format!("SELECT {SUMMED_COUNTS} FROM campaign_counts WHERE campaign_id = ?1"),
            params![u64_to_db(campaign_id)],
        )?
        .ok_or_else(|| StoreError::Db(format!("campaign {campaign_id} has no counters")))?;
    progress_of(campaign, &r)
}

pub(super) fn table(s: &impl Backend, campaign_id: u64) -> StoreResult<(Campaign, Vec<TableRow>)> {
    let mut rows = Vec::new();
    let campaign = visit_table(s, campaign_id, &mut |r| {
        rows.push(r);
        true
    })?;
    Ok((campaign, rows))
}

/// Streams the table of a campaign row by row from one read snapshot; `visit` returns false to
/// stop (the client went away). Returns the campaign.
pub(super) fn visit_table(
    s: &impl Backend,
    campaign_id: u64,
    visit: &mut dyn FnMut(TableRow) -> bool,
) -> StoreResult<Campaign> {
    s.with_reader(&mut |tx| {
        let campaign = campaign_by_id(tx, campaign_id)?;
        visit_rows(tx, campaign_id, None, visit)?;
        Ok(campaign)
    })
}

/// The rows of a campaign's table whose start numbers (in its family) are in `numbers`, in
/// table order: one page of a campaign of any size (the index `workunits_numbers` finds them;
/// migration 27).
pub(super) fn table_range(
    s: &impl Backend,
    campaign_id: u64,
    numbers: std::ops::RangeInclusive<u32>,
) -> StoreResult<Vec<TableRow>> {
    s.with_reader(&mut |tx| {
        let chess960 = campaign_by_id(tx, campaign_id)?.family == Family::Chess960.name();
        let mut rows = Vec::new();
        visit_rows(
            tx,
            campaign_id,
            Some((chess960, numbers.clone())),
            &mut |r| {
                rows.push(r);
                true
            },
        )?;
        Ok(rows)
    })
}

/// Walks the table rows of a campaign (those numbered in `numbers`, if given: Chess960 starts
/// are numbered by `sp`, other families' by `family_number`, one condition or the other so that
/// the index serves it as a range).
fn visit_rows(
    tx: Tx,
    campaign_id: u64,
    numbers: Option<(bool, std::ops::RangeInclusive<u32>)>,
    visit: &mut dyn FnMut(TableRow) -> bool,
) -> StoreResult<()> {
    let (chess960, lo, hi) = numbers.map_or((true, -1, i64::MAX), |(c, r)| {
        (c, i64::from(*r.start()), i64::from(*r.end()))
    });
    let range = match (lo < 0, chess960) {
        (true, _) => "",
        (false, true) => " AND w.sp BETWEEN ?2 AND ?3",
        (false, false) => " AND w.sp IS NULL AND w.family_number BETWEEN ?2 AND ?3",
    };
    let id = u64_to_db(campaign_id);
    let (whole, ranged) = (params![id], params![id, lo, hi]);
    {
        let mut stopped = false;
        let walked = tx.each(
            &format!("SELECT w.id, w.sp, w.fen, w.depth, w.nodes,
                    CASE WHEN w.state = {WORKUNIT_OPEN} AND w.reverify != 0 THEN {WORKUNIT_REVERIFYING} ELSE w.state END, w.canonical_digest,
                    (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = {OUTCOME_VALID}),
                    w.family_number,
                    (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.state = {REPLICA_RETURNED}),
                    w.check_state
             FROM workunits w WHERE w.campaign_id = ?1{range}
             ORDER BY w.sp NULLS FIRST, w.family_number NULLS FIRST, w.id"),
            if range.is_empty() { whole } else { ranged },
            &mut |r| {
                let state = r.i64(5)?;
                let row = TableRow {
                    workunit_id: r.u64(0)?,
                    sp: r.opt_i64(1)?.map(|n| n as u16),
                    family_number: r.opt_i64(8)?.map(|n| n as u32),
                    fen: r.text(2)?,
                    depth: r.i64(3)? as u32,
                    nodes: if state == WORKUNIT_VALID {
                        r.opt_i64(4)?.map(|n| n as u64)
                    } else {
                        None
                    },
                    status: row_status(state),
                    agreeing_results: r.i64(7)? as u32,
                    returned: r.i64(9)? as u32,
                    digest: r.opt_blob(6)?.map(|d| hex(&d)),
                    audit: if state == WORKUNIT_VALID { audit_name(r.i64(10)?) } else { "" }.into(),
                };
                if visit(row) {
                    Ok(())
                } else {
                    stopped = true;
                    Err(StoreError::Bad("export stopped".into()))
                }
            },
        );
        match walked {
            Err(_) if stopped => {}
            other => other?,
        }
        Ok(())
    }
}

/// The export's name of a valid value's audit, from its `check_state` ([`TableRow::audit`]).
pub(super) fn audit_name(check_state: i64) -> &'static str {
    match check_state {
        CHECK_VERIFIED | CHECK_RESPLIT_DONE => "coordinator",
        CHECK_AUDIT_REPLICA => "replica",
        CHECK_AUDIT_WANTED | CHECK_RESPLIT_WANTED => "pending",
        CHECK_UNAUDITED => "unaudited",
        _ => "none",
    }
}

pub(super) fn visit_split_units(
    s: &impl Backend,
    campaign_id: u64,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<Campaign> {
    s.with_reader(&mut |tx| {
        let campaign = campaign_by_id(tx, campaign_id)?;
        super::reads::visit_split_units_of(tx, campaign_id, 0, u16::MAX, visit)?;
        Ok(campaign)
    })
}

/// The table of an analysis or self-play campaign: each workunit with its canonical payload
/// (`results.payload`, JSON of `R`) once valid.
pub(super) fn payload_table<R: serde::de::DeserializeOwned>(
    s: &impl Backend,
    campaign_id: u64,
) -> StoreResult<(Campaign, Vec<AnalysisRow<R>>)> {
    s.with_reader(&mut |tx| {
        let campaign = campaign_by_id(tx, campaign_id)?;
        let rows = tx
            .query(
                &format!("SELECT w.id, w.sp, w.fen, w.depth, w.state,
                        (SELECT COUNT(*) FROM results r WHERE r.workunit_id = w.id AND r.outcome = {OUTCOME_VALID}),
                        (SELECT payload FROM results r WHERE r.id = w.canonical_result_id),
                        w.family_number
                 FROM workunits w WHERE w.campaign_id = ?1
                 ORDER BY w.sp NULLS FIRST, w.family_number NULLS FIRST, w.id"),
                params![u64_to_db(campaign_id)],
            )?
            .iter()
            .map(|r| {
                let state = r.i64(4)?;
                let payload = r.opt_text(6)?.filter(|_| state == WORKUNIT_VALID);
                Ok(AnalysisRow {
                    workunit_id: r.u64(0)?,
                    sp: r.opt_i64(1)?.map(|n| n as u16),
                    family_number: r.opt_i64(7)?.map(|n| n as u32),
                    fen: r.text(2)?,
                    depth: r.i64(3)? as u32,
                    // An analysis row reverifying reads as failed, as it always has.
                    status: match row_status(state) {
                        RowStatus::Reverifying => RowStatus::Failed,
                        s => s,
                    },
                    agreeing_results: r.i64(5)? as u32,
                    result: payload
                        .map(|p| serde_json::from_str(&p))
                        .transpose()
                        .map_err(|e| StoreError::Db(e.to_string()))?,
                })
            })
            .collect::<StoreResult<_>>()?;
        Ok((campaign, rows))
    })
}

pub(super) fn results(s: &impl Backend, workunit_id: u64) -> StoreResult<Vec<ResultRecord>> {
    s.with_conn(&mut |tx| {
        tx.query(
            "SELECT id, workunit_id, worker_id, state, outcome, nodes, digest, engine, issued_ms, returned_ms, elapsed_ms
             FROM results WHERE workunit_id = ?1 ORDER BY id",
            params![u64_to_db(workunit_id)],
        )?
        .iter()
        .map(|r| {
            Ok(ResultRecord {
                id: r.u64(0)?,
                workunit_id: r.u64(1)?,
                worker_id: r.u64(2)?,
                state: replica_state(r.i64(3)?),
                outcome: result_outcome(r.i64(4)?),
                nodes: r.opt_i64(5)?.map(|n| n as u64),
                digest: r.opt_blob(6)?.map(|d| hex(&d)),
                engine: r.opt_text(7)?,
                issued_ms: r.i64(8)?,
                returned_ms: r.opt_i64(9)?,
                elapsed_ms: r.opt_i64(10)?.map(|n| n as u64),
            })
        })
        .collect()
    })
}

pub(super) fn visit_split_units_of(
    s: &impl Backend,
    campaign_id: u64,
    first_sp: u16,
    last_sp: u16,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<()> {
    s.with_conn(&mut |tx| {
        super::reads::visit_split_units_of(tx, campaign_id, first_sp, last_sp, visit)
    })
}
