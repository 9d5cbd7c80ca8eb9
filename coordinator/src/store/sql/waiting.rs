//! Why a worker gets no work, read from the store and decided by [`crate::work::stall`]'s pure rules;
//! and the stalls a served coordinator records on its campaigns.

use std::collections::HashMap;

use c960_common::wait::{WaitCause, Waiting};
use c960_common::wire::Capabilities;

use super::Tx;
use super::transition::integrity_in;
use crate::integrity::trust::{self, Party};
use crate::model::{ReplicaState, Stall, StoreError, StoreResult};
use crate::store::codes::{
    OUTCOME_PENDING, OUTCOME_VALID, REPLICA_RETURNED, WORKUNIT_OPEN, accepted_kinds, db_to_u64,
    replica_state, trust_level, u64_to_db,
};
use crate::store::db::{Backend, Batch, params};
use crate::work::stall::{self, Asker, Holder, ReadyUnit};
use crate::work::transitioner;

/// The worker's standing and party keys, as the diagnosis needs them.
struct Me {
    trusted: bool,
    checks_passed: u64,
    reg_block: Option<String>,
    token: Option<u64>,
    registered_ms: i64,
}

/// A replica of a ready workunit with its worker's party keys, as read.
struct HolderRow {
    workunit: u64,
    worker: u64,
    live: bool,
    reg_block: Option<String>,
    last_block: Option<String>,
    token: Option<u64>,
    registered_ms: i64,
}

pub(super) fn waiting_for(
    s: &impl Backend,
    worker_id: u64,
    accepts: &Capabilities,
    block: Option<&str>,
    lease_cap: u64,
    now_ms: i64,
) -> StoreResult<Vec<Waiting>> {
    s.with_conn(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let integrity = integrity_in(tx)?;
        let r = tx
            .query_opt(
                "SELECT trusted, checks_passed, reg_block, enrolment_token, created_ms FROM workers WHERE id = ?1",
                params![u64_to_db(worker_id)],
            )?
            .ok_or(StoreError::UnknownWorker(worker_id))?;
        let level = trust_level(r.i64(0)?);
        let me = Me {
            trusted: level.is_trusted(),
            checks_passed: r.u64(1)?,
            reg_block: r.opt_text(2)?,
            token: r.opt_i64(3)?.map(db_to_u64),
            registered_ms: r.i64(4)?,
        };
        // The worker's own caps first: they keep it from every campaign.
        let probation = integrity.probation_on()
            && !level.is_trusted()
            && !super::probation_holdings::returned_any(tx, worker_id)?;
        let cap = trust::lease_cap_in_probation(level, me.checks_passed, lease_cap, probation, &integrity);
        let by_size = crate::work::handout::weighs_by_size(cap, lease_cap, probation);
        if cap > 0
            && super::leases::open_lease_weight_in(tx, worker_id, by_size, now_ms)?
                >= cap.saturating_mul(crate::work::handout::LEASE_WEIGHT)
        {
            return Ok(vec![Waiting { cause: WaitCause::LeaseCap, campaign: None, replicas: 0 }]);
        }
        if let Some(b) = crate::work::handout::capped_block(block, &integrity) {
            let in_block = super::leases::open_leases_of_block(tx, b, now_ms)?;
            if in_block >= integrity.block_lease_cap {
                return Ok(vec![Waiting { cause: WaitCause::BlockLeaseCap, campaign: None, replicas: 0 }]);
            }
        }
        let block_held = match (probation, block) {
            (true, Some(b)) => super::probation_holdings::probation_leases_of_block(tx, b, now_ms)?,
            _ => 0,
        };
        if probation && integrity.probation_block_cap > 0 && block_held >= integrity.probation_block_cap {
            return Ok(vec![Waiting { cause: WaitCause::Probation, campaign: None, replicas: 0 }]);
        }
        let slots = super::assign::ready_campaigns(tx)?;
        let order = transitioner::serving_order(&slots);
        if order.is_empty() {
            // Only paused campaigns have replicas to hand out (cancelled ones never again).
            let paused = slots.iter().find(|c| c.status == crate::model::CampaignStatus::Paused);
            return Ok(match paused {
                Some(c) => vec![Waiting {
                    cause: WaitCause::Paused,
                    campaign: Some(c.id),
                    replicas: queued(tx, c.id)?,
                }],
                None => Vec::new(),
            });
        }
        let accepted = accepted_kinds(accepts);
        let asker = Asker {
            id: worker_id,
            party: Party {
                reg_block: me.reg_block.as_deref(),
                last_block: block,
                token: me.token,
                registered_ms: me.registered_ms,
            },
            trusted: me.trusted,
        };
        let mut out = Vec::new();
        for campaign in order.into_iter().take(stall::DIAGNOSIS_CAMPAIGNS) {
            if probation {
                let held = super::probation_holdings::probation_hold(tx, campaign, block_held, 1, &integrity, now_ms)?;
                if trust::probation_room(&held, &integrity) == 0 {
                    out.push(Waiting { cause: WaitCause::Probation, campaign: Some(campaign), replicas: queued(tx, campaign)? });
                    continue;
                }
            }
            let units = tx.query(
                &format!(
                    "SELECT w.id, w.kind, w.trusted_only, w.needed FROM workunits w{}
                     WHERE w.campaign_id = ?1 AND w.state = {WORKUNIT_OPEN} AND w.needed > 0 ORDER BY w.id LIMIT ?2",
                    tx.dialect().ready_index()
                ),
                params![u64_to_db(campaign), stall::DIAGNOSIS_UNITS as i64],
            )?;
            let ids: Vec<u64> = units.iter().map(|r| r.u64(0)).collect::<StoreResult<_>>()?;
            let mut b = Batch::new(tx.dialect());
            let in_ids = b.in_ids(&ids);
            let holder_rows = tx.query(
                &format!(
                    "SELECT r.workunit_id, r.worker_id, r.state, o.reg_block, o.last_block, o.enrolment_token, o.created_ms
                     FROM results r JOIN workers o ON o.id = r.worker_id WHERE r.workunit_id {in_ids}"
                ),
                &b.params(),
            )?;
            let mut rows = Vec::with_capacity(holder_rows.len());
            for h in &holder_rows {
                let (wu, who) = (h.u64(0)?, h.u64(1)?);
                // The assignment's rules: the asker's own in-progress, returned or refused
                // replica keeps it away, another's in-progress or returned one.
                let live = match replica_state(h.i64(2)?) {
                    ReplicaState::InProgress | ReplicaState::Returned => true,
                    ReplicaState::Error => who == worker_id,
                    ReplicaState::Expired | ReplicaState::Abandoned => false,
                };
                rows.push(HolderRow {
                    workunit: wu,
                    worker: who,
                    live,
                    reg_block: h.opt_text(3)?,
                    last_block: h.opt_text(4)?,
                    token: h.opt_i64(5)?.map(db_to_u64),
                    registered_ms: h.i64(6)?,
                });
            }
            let mut by_unit: HashMap<u64, Vec<Holder>> = HashMap::new();
            for r in &rows {
                by_unit.entry(r.workunit).or_default().push(Holder {
                    worker_id: r.worker,
                    party: Party {
                        reg_block: r.reg_block.as_deref(),
                        last_block: r.last_block.as_deref(),
                        token: r.token,
                        registered_ms: r.registered_ms,
                    },
                    live: r.live,
                });
            }
            let mut ready = Vec::with_capacity(units.len());
            for u in &units {
                ready.push(ReadyUnit {
                    accepted: accepted.contains(&u.i64(1)?),
                    trusted_only: u.bool(2)?,
                    needed: u.u64(3)?,
                    holders: by_unit.remove(&u.u64(0)?).unwrap_or_default(),
                });
            }
            match stall::diagnose(campaign, &asker, &ready, &integrity) {
                Some(w) => out.push(w),
                // Something here it may take: the next fetch gets it, nothing waits on a rule.
                None => return Ok(Vec::new()),
            }
        }
        Ok(out)
    })
}

/// Replicas of a campaign still to hand out (its trigger-kept counter).
fn queued(tx: Tx, campaign: u64) -> StoreResult<u64> {
    tx.query_one(
        "SELECT CAST(COALESCE(SUM(queued), 0) AS BIGINT) FROM campaign_counts WHERE campaign_id = ?1",
        params![u64_to_db(campaign)],
    )?
    .u64(0)
}

pub(super) fn set_stall(
    s: &impl Backend,
    campaign_id: u64,
    stall: Option<Stall>,
) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        tx.exec(
            "UPDATE campaigns SET stall_cause = ?2, stall_replicas = ?3, stall_ms = ?4 WHERE id = ?1",
            params![
                u64_to_db(campaign_id),
                stall.map(|s| s.cause.code()),
                stall.map(|s| s.replicas.min(i64::MAX as u64) as i64),
                stall.map(|s| s.since_ms)
            ],
        )?;
        Ok(())
    })
}

pub(super) fn clear_stalls(s: &impl Backend) -> StoreResult<()> {
    s.with_tx(&mut |tx| {
        tx.exec(
            "UPDATE campaigns SET stall_cause = NULL, stall_replicas = NULL, stall_ms = NULL WHERE stall_cause IS NOT NULL",
            params![],
        )?;
        Ok(())
    })
}

pub(super) fn worker_tally(
    s: &impl Backend,
    worker_id: u64,
) -> StoreResult<c960_common::wire::StandingResponse> {
    s.with_conn(&mut |tx| {
        // Returned results by outcome: valid, not yet decided.
        let r = tx.query_one(
            &format!("SELECT COUNT(*), COALESCE(SUM(CASE WHEN outcome = {OUTCOME_VALID} THEN 1 ELSE 0 END), 0),
                    COALESCE(SUM(CASE WHEN outcome = {OUTCOME_PENDING} THEN 1 ELSE 0 END), 0)
             FROM results WHERE worker_id = ?1 AND state = {REPLICA_RETURNED}"),
            params![u64_to_db(worker_id)],
        )?;
        Ok(c960_common::wire::StandingResponse {
            returned: r.u64(0)?,
            validated: r.u64(1)?,
            awaiting: r.u64(2)?,
        })
    })
}
