//! BOINC hosts in the database (issue 33): which worker a host of an account is, and the credit
//! a scheduler reply reports (a host registers as any worker does: `roster.rs`). The protocol and its rules are in [`crate::net::boinc`].

use super::Tx;
use crate::model::{BoincCredit, StoreResult};
use crate::store::codes::u64_to_db;
use crate::store::db::params;

/// The worker that is this account's host: by its host id when the client sent one that is
/// the account's, else by its CPID (a detached and reattached client).
pub(super) fn find(
    tx: Tx,
    account_hash: &[u8],
    hostid: u64,
    host_cpid: &str,
) -> StoreResult<Option<u64>> {
    if hostid > 0
        && let Some(r) = tx.query_opt(
            "SELECT id FROM workers WHERE id = ?1 AND boinc_account = ?2",
            params![u64_to_db(hostid), account_hash],
        )?
    {
        return Ok(Some(r.u64(0)?));
    }
    if host_cpid.is_empty() {
        return Ok(None);
    }
    tx.query_opt(
        "SELECT id FROM workers WHERE boinc_account = ?1 AND boinc_cpid = ?2 ORDER BY id LIMIT 1",
        params![account_hash, host_cpid],
    )?
    .map(|r| r.u64(0))
    .transpose()
}

/// The valid nodes credited to a host and to all hosts of its account, and when each began.
pub(super) fn credit(tx: Tx, worker_id: u64, account_hash: &[u8]) -> StoreResult<BoincCredit> {
    let halves = |hi: i64, lo: i64| (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128;
    let host = tx.query_one(
        "SELECT credit_nodes_hi, credit_nodes_lo, created_ms FROM workers WHERE id = ?1",
        params![u64_to_db(worker_id)],
    )?;
    let account = tx.query_one(
        "SELECT CAST(COALESCE(SUM(credit_nodes_hi), 0) AS BIGINT), CAST(COALESCE(SUM(credit_nodes_lo), 0) AS BIGINT),
                CAST(COALESCE(MIN(created_ms), 0) AS BIGINT)
         FROM workers WHERE boinc_account = ?1",
        params![account_hash],
    )?;
    Ok(BoincCredit {
        host_nodes: halves(host.i64(0)?, host.i64(1)?),
        host_created_ms: host.i64(2)?,
        account_nodes: halves(account.i64(0)?, account.i64(1)?),
        account_created_ms: account.i64(2)?,
    })
}
