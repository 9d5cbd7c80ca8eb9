//! Handing out replicas: one transaction of named steps, each either a statement here or a
//! pure decision of [`crate::work::handout`] (standing, room, same-party keys, deadlines) and
//! [`crate::work::transitioner`] (serving order, the draw, `may_receive`).

use c960_common::wire::Capabilities;
use std::collections::{BTreeMap, HashMap};

use super::Tx;
use super::cascade::{expire, retransition_known};
use super::leases::{open_lease_weight_in, open_leases_of_block, workunit_kind};
use super::probation_holdings::{probation_hold, probation_leases_of_block, returned_any};
use super::transition::{integrity_in, replicas_of};
use crate::integrity::trust::{self, Integrity};
use crate::model::{Lease, StoreError, StoreResult};
use crate::store::codes::{
    KIND_COLUMN_COUNT, KIND_COLUMNS, REPLICA_ERROR, REPLICA_IN_PROGRESS, REPLICA_RETURNED,
    WORKUNIT_OPEN, accepted_kinds, campaign_status, db_to_u64, trust_level, u64_to_db,
};
use crate::store::db::{Backend, Batch, Row, SqlType, Value, params};
use crate::work::handout::{self, Applicant, Deadlines, PartyKeys, Quota, Refusal};
use crate::work::transitioner::{self, CampaignSlot, ReplicaView};

/// The stored kinds a worker with these capabilities accepts, as an SQL list (integers only, so
/// formatting it into a statement is safe).
fn accepted_codes(c: &Capabilities) -> String {
    accepted_kinds(c)
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A refusal of [`crate::work::handout`] as the store's error.
fn refused(worker: u64, r: Refusal) -> StoreError {
    match r {
        Refusal::NotInGoodStanding { banned } => StoreError::NotInGoodStanding { worker, banned },
        Refusal::LeaseLimit { open, cap } => StoreError::LeaseLimit { worker, open, cap },
    }
}

/// Up to `max_units` leases for `worker_id`: its own open leases again first, then new
/// replicas of the accepted kinds, drawn campaign by campaign in serving order. One
/// transaction, in the steps of [`crate::work::handout`].
#[allow(clippy::too_many_arguments)]
pub(super) fn assign_from(
    s: &impl Backend,
    worker_id: u64,
    accepts: &Capabilities,
    now_ms: i64,
    lease_ms: i64,
    max_units: u32,
    lease_cap: u64,
    block: Option<&str>,
) -> StoreResult<Vec<Lease>> {
    let codes = accepted_codes(accepts);
    if codes.is_empty() || max_units == 0 {
        return Ok(Vec::new());
    }
    s.with_tx(&mut |tx| {
        super::deferring(tx, |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            expire(tx, now_ms)?;
            // 1. Standing, inside the transaction.
            let me = applicant(tx, worker_id)?;
            me.standing().map_err(|r| refused(worker_id, r))?;
            touch(tx, worker_id, block, now_ms)?;
            let integrity = integrity_in(tx)?;
            // 2. Room: its own open leases first (it asks again, so it lost them: a crash),
            // then new replicas within its caps.
            let mut leases = own_open_leases(tx, worker_id, &codes, now_ms, u64::from(max_units))?;
            // Probation (trust::in_probation): one lease per identity, a few per block, a
            // share of each campaign for all of them together.
            let probation = integrity.probation_on()
                && !me.level.is_trusted()
                && trust::in_probation(me.level, returned_any(tx, worker_id)?);
            let cap = trust::lease_cap_in_probation(
                me.level,
                me.checks_passed,
                lease_cap,
                probation,
                &integrity,
            );
            let weighed = handout::weighs_by_size(cap, lease_cap, probation);
            let quota = Quota {
                asked: u64::from(max_units),
                reissued: leases.len() as u64,
                cap,
                open: open_lease_weight_in(tx, worker_id, weighed, now_ms)?,
            };
            let mut want = quota.room().map_err(|r| refused(worker_id, r))?;
            if let Some(b) = handout::capped_block(block, &integrity) {
                want = handout::block_room(want, &integrity, open_leases_of_block(tx, b, now_ms)?);
            }
            if want == 0 {
                return Ok(leases);
            }
            // 3 and 4. The draw, filtered by the same-party keys.
            let keys = me.party_keys(block, &integrity);
            let draw = Draw {
                worker_id,
                me: &me,
                keys: &keys,
                codes: &codes,
                probation,
                block,
                integrity: &integrity,
                now_ms,
            };
            let mut found = draw.over_campaigns(tx, want)?;
            // Drawn as if each weighed the least: keep what fits the cap by weight.
            let weights = found
                .iter()
                .map(|r| {
                    Ok(if weighed {
                        handout::lease_weight(&workunit_kind(r, 1)?)
                    } else {
                        handout::LEASE_WEIGHT
                    })
                })
                .collect::<StoreResult<Vec<u64>>>()?;
            let fits = handout::fitting(&weights, quota.weight_room());
            if fits == 0 && !found.is_empty() {
                // Room for less than what it drew weighs (ordinary ones, its cap nearly full).
                return if leases.is_empty() {
                    Err(refused(worker_id, quota.limit()))
                } else {
                    Ok(leases)
                };
            }
            found.truncate(fits);
            if found.is_empty() {
                // Nothing to hand out: spare capacity re-verifies a valid value.
                if leases.is_empty() && accepts.perft {
                    let deadlines = Deadlines::at(now_ms, lease_ms, integrity.lease_renewal_ms);
                    leases.extend(super::spare::spare_replica(
                        tx, worker_id, &integrity, deadlines, now_ms,
                    )?);
                }
                return Ok(leases);
            }
            let wus: Vec<u64> = found.iter().map(|r| r.u64(0)).collect::<StoreResult<_>>()?;
            let before = replicas_of(tx, &wus)?;
            verify(tx, worker_id, &me, block, &integrity, &wus, &before)?;
            // 5. The leases, and the transitioner on their workunits.
            let deadlines = Deadlines::at(now_ms, lease_ms, integrity.lease_renewal_ms);
            let issued_ids = insert_leases(tx, worker_id, &wus, deadlines, now_ms)?;
            // The replicas read above and the leases just added are all the workunits have:
            // their rows are locked since the assignment query.
            let mut after = before;
            for r in found {
                let wu = r.u64(0)?;
                let lease_id = *issued_ids.get(&wu).ok_or_else(|| {
                    StoreError::Db(format!("no lease inserted for workunit {wu}"))
                })?;
                after
                    .entry(wu)
                    .or_default()
                    .push(handout::issued(lease_id, worker_id, me.level));
                leases.push(Lease {
                    lease_id,
                    workunit_id: wu,
                    kind: workunit_kind(&r, 1)?,
                    deadline_ms: deadlines.renew_by,
                });
            }
            retransition_known(tx, &wus, Some(after), now_ms)?;
            Ok(leases)
        })
    })
}

/// The worker's row, locked on PostgreSQL: a quarantine committed a moment ago is seen here,
/// so no lease goes to a worker that is being quarantined, and two coordinators serving one
/// worker take turns, so its lease cap holds across them.
fn applicant(tx: Tx, worker_id: u64) -> StoreResult<Applicant> {
    let r = tx
        .query_opt(
            &format!(
                "SELECT banned != 0, quarantined_ms IS NOT NULL, trusted, checks_passed, reg_block, enrolment_token, created_ms FROM workers WHERE id = ?1{}",
                tx.dialect().for_update()
            ),
            params![u64_to_db(worker_id)],
        )?
        .ok_or(StoreError::UnknownWorker(worker_id))?;
    Ok(Applicant {
        banned: r.bool(0)?,
        quarantined: r.bool(1)?,
        level: trust_level(r.i64(2)?),
        checks_passed: r.u64(3)?,
        reg_block: r.opt_text(4)?,
        token: r.opt_i64(5)?.map(db_to_u64),
        registered_ms: r.i64(6)?,
    })
}

/// Records the fetch: when, and from which address block.
fn touch(tx: Tx, worker_id: u64, block: Option<&str>, now_ms: i64) -> StoreResult<()> {
    tx.exec(
        "UPDATE workers SET last_seen_ms = ?2, last_block = COALESCE(?3, last_block) WHERE id = ?1",
        params![u64_to_db(worker_id), now_ms, block],
    )?;
    Ok(())
}

/// The campaigns with a ready workunit (one probe of the per-campaign partial index each), as
/// the serving order sees them.
pub(super) fn ready_campaigns(tx: Tx) -> StoreResult<Vec<CampaignSlot>> {
    tx.query(
        &format!(
            "SELECT c.id, c.priority, c.status FROM campaigns c WHERE EXISTS (
                SELECT 1 FROM workunits w{} WHERE w.campaign_id = c.id AND w.state = {WORKUNIT_OPEN} AND w.needed > 0)",
            tx.dialect().ready_index()
        ),
        params![],
    )?
    .iter()
    .map(|r| {
        Ok(CampaignSlot {
            id: r.u64(0)?,
            priority: r.i64(1)?,
            status: campaign_status(r.i64(2)?),
        })
    })
    .collect()
}

/// Up to `limit` open leases `worker_id` holds on workunits of the accepted kinds, as leases
/// again (same ids and deadlines).
fn own_open_leases(
    tx: Tx,
    worker_id: u64,
    codes: &str,
    now_ms: i64,
    limit: u64,
) -> StoreResult<Vec<Lease>> {
    // `codes` holds integers from accepted_codes only.
    tx.query(
        &format!(
            "SELECT r.id, w.id, {KIND_COLUMNS}, r.deadline_ms
             FROM results r JOIN workunits w ON w.id = r.workunit_id
             WHERE r.worker_id = ?1 AND r.state = {REPLICA_IN_PROGRESS} AND r.deadline_ms >= ?2 AND w.kind IN ({codes})
             ORDER BY r.id LIMIT ?3"
        ),
        params![u64_to_db(worker_id), now_ms, limit as i64],
    )?
    .iter()
    .map(|r| {
        Ok(Lease {
            lease_id: r.u64(0)?,
            workunit_id: r.u64(1)?,
            kind: workunit_kind(r, 2)?,
            deadline_ms: r.i64(2 + KIND_COLUMN_COUNT)?,
        })
    })
    .collect()
}

/// Step 4, the draw: what it filters on.
struct Draw<'a> {
    worker_id: u64,
    me: &'a Applicant,
    keys: &'a PartyKeys,
    /// The accepted kinds ([`accepted_codes`]).
    codes: &'a str,
    /// Whether the worker is in probation ([`crate::integrity::trust::in_probation`]).
    probation: bool,
    /// The address block of the fetch.
    block: Option<&'a str>,
    integrity: &'a Integrity,
    now_ms: i64,
}

impl Draw<'_> {
    /// The assignment query: a pool of one campaign's ready workunits (`?4`, at most `?2`)
    /// the worker may receive.
    fn query(&self, tx: Tx) -> String {
        // The NOT EXISTS mirror transitioner::may_receive so the index does the filtering;
        // may_receive is checked again on the loaded replicas ([`verify`]). Each workunit
        // appears once, so a batch never holds two replicas of one workunit. Replicas reserved
        // for trusted workers are skipped by untrusted ones; and so are workunits a worker of
        // the same party holds or answered (trust::same_party over handout::PartyKeys).
        // The same-party clause only when one of its keys is set: left in with every key NULL,
        // a connection's custom plans (which drop it) stay cheaper than the generic plan (which
        // keeps it), so PostgreSQL planned the statement again on every execution (twice the
        // CPU of running it).
        let party_clause = if self.keys.any() {
            format!(
                "AND NOT EXISTS (
                SELECT 1 FROM results r JOIN workers o ON o.id = r.worker_id
                WHERE r.workunit_id = w.id AND r.state IN ({REPLICA_IN_PROGRESS}, {REPLICA_RETURNED}) AND o.id != ?1
                  AND (o.reg_block IN (?5, ?6) OR o.last_block IN (?5, ?6) OR o.enrolment_token = ?7
                       OR (o.reg_block = ?8 AND ABS(o.created_ms - ?9) <= ?10)))"
            )
        } else {
            String::new()
        };
        // `codes` holds integers from accepted_codes only, so formatting it in is safe. On
        // PostgreSQL the workunits picked are locked and those another coordinator is handing
        // out at this moment are skipped (SKIP LOCKED), so coordinators never wait on each
        // other here and never hand out one replica twice.
        format!(
            "SELECT w.id, {KIND_COLUMNS} FROM workunits w{}
             WHERE w.campaign_id = ?4 AND w.state = {WORKUNIT_OPEN} AND w.needed > 0 AND w.kind IN ({}) AND (w.trusted_only = 0 OR ?3)
             AND NOT EXISTS (
                SELECT 1 FROM results r WHERE r.workunit_id = w.id AND r.worker_id = ?1 AND r.state IN ({REPLICA_IN_PROGRESS}, {REPLICA_RETURNED}, {REPLICA_ERROR}))
             {party_clause}
             ORDER BY w.id LIMIT ?2{}",
            tx.dialect().ready_index(),
            self.codes,
            tx.dialect().skip_locked("w")
        )
    }

    /// Up to `want` ready workunits (rows of `w.id` and the [`KIND_COLUMNS`]): campaigns in
    /// serving order (priority, pause: transitioner::serving_order), each walked on the
    /// per-campaign partial index of its ready workunits until the batch is full. Campaigns
    /// with no ready workunit at all are left out, with one probe of that index each: a worker
    /// polling while every replica is out (the end of a campaign) then costs one statement,
    /// not the assignment query once per campaign.
    fn over_campaigns(&self, tx: Tx, want: u64) -> StoreResult<Vec<Row>> {
        let slots = ready_campaigns(tx)?;
        let sql = self.query(tx);
        let mut found = Vec::new();
        let mut rng = rand::rng();
        let block_held = match (self.probation, self.block) {
            (true, Some(b)) => probation_leases_of_block(tx, b, self.now_ms)?,
            _ => 0,
        };
        for campaign in transitioner::serving_order(&slots) {
            let mut left = want - found.len() as u64;
            if left == 0 {
                break;
            }
            if self.probation {
                let block_held = block_held + found.len() as u64;
                let held =
                    probation_hold(tx, campaign, block_held, left, self.integrity, self.now_ms)?;
                left = left.min(trust::probation_room(&held, self.integrity));
                if left == 0 {
                    continue;
                }
            }
            // A pool of the campaign's ready workunits, the batch drawn from it at random.
            let pool_size = transitioner::draw_pool(left, self.integrity.draw_pool) as i64;
            let pool = self.pool(tx, &sql, campaign, pool_size)?;
            let drawn = transitioner::draw_replicas(pool.len(), left as usize, &mut rng);
            let mut pool: Vec<Option<Row>> = pool.into_iter().map(Some).collect();
            found.extend(drawn.into_iter().filter_map(|i| pool[i].take()));
        }
        Ok(found)
    }

    /// The assignment query on one campaign.
    fn pool(&self, tx: Tx, sql: &str, campaign: u64, pool_size: i64) -> StoreResult<Vec<Row>> {
        let (me, trusted, campaign) = (
            u64_to_db(self.worker_id),
            self.me.level.is_trusted(),
            u64_to_db(campaign),
        );
        if !self.keys.any() {
            return tx.query(sql, params![me, pool_size, trusted, campaign]);
        }
        let [b1, b2] = &self.keys.blocks;
        tx.query(
            sql,
            params![
                me,
                pool_size,
                trusted,
                campaign,
                b1.as_deref(),
                b2.as_deref(),
                self.keys.token.map(u64_to_db),
                self.keys.burst_block.as_deref(),
                self.me.registered_ms,
                u64_to_db(self.integrity.registration_burst_ms)
            ],
        )
    }
}

/// What the query found, checked against the pure rules: `transitioner::may_receive` on the
/// replicas loaded (`before`), and in debug builds `trust::same_party` against every other
/// worker holding or having answered a replica.
fn verify(
    tx: Tx,
    worker_id: u64,
    me: &Applicant,
    block: Option<&str>,
    integrity: &Integrity,
    wus: &[u64],
    before: &BTreeMap<u64, Vec<ReplicaView>>,
) -> StoreResult<()> {
    for &wu in wus {
        if !transitioner::may_receive(worker_id, before.get(&wu).map_or(&[], Vec::as_slice)) {
            return Err(StoreError::Db("scheduler and query disagree".into()));
        }
        if cfg!(debug_assertions) {
            let me = me.party(block);
            for h in tx.query(
                &format!("SELECT o.reg_block, o.last_block, o.enrolment_token, o.created_ms FROM results r JOIN workers o ON o.id = r.worker_id
                 WHERE r.workunit_id = ?1 AND r.state IN ({REPLICA_IN_PROGRESS}, {REPLICA_RETURNED}) AND o.id != ?2"),
                params![u64_to_db(wu), u64_to_db(worker_id)],
            )? {
                let (rb, lb) = (h.opt_text(0)?, h.opt_text(1)?);
                let other = trust::Party {
                    reg_block: rb.as_deref(),
                    last_block: lb.as_deref(),
                    token: h.opt_i64(2)?.map(db_to_u64),
                    registered_ms: h.i64(3)?,
                };
                if trust::same_party(&me, &other, integrity) {
                    return Err(StoreError::Db(
                        "trust::same_party and the assign query disagree".into(),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// One statement for the batch's leases, in the order found: workunit → lease id.
fn insert_leases(
    tx: Tx,
    worker_id: u64,
    wus: &[u64],
    deadlines: Deadlines,
    now_ms: i64,
) -> StoreResult<HashMap<u64, u64>> {
    let mut b = Batch::new(tx.dialect());
    let (w, issued, until, whole) = (
        b.param(u64_to_db(worker_id)),
        b.param(now_ms),
        b.param(deadlines.renew_by),
        b.param(deadlines.hard),
    );
    let values = b.rows(
        &[SqlType::BigInt, SqlType::BigInt],
        wus.iter()
            .enumerate()
            .map(|(i, &wu)| vec![Value::I64(u64_to_db(wu)), Value::I64(i as i64)])
            .collect(),
    );
    tx.query(
        &format!(
            "WITH v(workunit_id, ord) AS ({values})
             INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms, hard_deadline_ms)
             SELECT workunit_id, {w}, {REPLICA_IN_PROGRESS}, {issued}, {until}, {whole} FROM v WHERE workunit_id IS NOT NULL ORDER BY ord
             RETURNING workunit_id, id"
        ),
        &b.params(),
    )?
    .iter()
    .map(|r| Ok((r.u64(0)?, r.u64(1)?)))
    .collect()
}
