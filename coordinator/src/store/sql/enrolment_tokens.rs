//! Enrolment tokens in the database: minted, revoked, listed, and spent by a registration in
//! the same transaction that inserts the worker. The rule that admits or refuses a token is
//! [`crate::integrity::enrolment::refusal`]; only SHA-256 of a token's secret is stored.

use c960_common::error_code::ErrorCode;

use crate::integrity::enrolment::{EnrolmentToken, refusal};
use crate::integrity::secrets::same_hash;
use crate::model::{StoreError, StoreResult};
use crate::store::codes::u64_to_db;
use crate::store::db::{Conn, Row, params};

const COLS: &str = "id, name, cap, used, revoked_ms IS NOT NULL, created_ms, hash";

fn row(r: &Row) -> StoreResult<EnrolmentToken> {
    Ok(EnrolmentToken {
        id: r.u64(0)?,
        name: r.text(1)?,
        cap: r.u64(2)?,
        used: r.u64(3)?,
        revoked: r.bool(4)?,
        created_ms: r.i64(5)?,
    })
}

fn get(tx: &dyn Conn, id: u64) -> StoreResult<Option<(EnrolmentToken, Vec<u8>)>> {
    tx.query_opt(
        &format!("SELECT {COLS} FROM enrolment_tokens WHERE id = ?1"),
        params![u64_to_db(id)],
    )?
    .map(|r| Ok((row(&r)?, r.blob(6)?)))
    .transpose()
}

/// Mints a token with this secret hash; returns it (its id completes the token's text).
pub(crate) fn mint(
    tx: &dyn Conn,
    name: &str,
    cap: u64,
    secret_hash: &[u8],
    now_ms: i64,
) -> StoreResult<EnrolmentToken> {
    if let Err(fault) = crate::integrity::label::check_label(name) {
        return Err(StoreError::Bad(format!("the token name {fault}")));
    }
    let now_ms = tx.now_ms(now_ms)?;
    let id = tx
        .query_one(
            "INSERT INTO enrolment_tokens (name, hash, cap, created_ms) VALUES (?1, ?2, ?3, ?4) RETURNING id",
            params![name, secret_hash, u64_to_db(cap), now_ms],
        )?
        .u64(0)?;
    Ok(get(tx, id)?
        .ok_or_else(|| StoreError::Db("minted token vanished".into()))?
        .0)
}

/// Revokes a token (idempotent).
pub(crate) fn revoke(tx: &dyn Conn, id: u64, now_ms: i64) -> StoreResult<EnrolmentToken> {
    let now_ms = tx.now_ms(now_ms)?;
    tx.exec(
        "UPDATE enrolment_tokens SET revoked_ms = COALESCE(revoked_ms, ?2) WHERE id = ?1",
        params![u64_to_db(id), now_ms],
    )?;
    Ok(get(tx, id)?
        .ok_or_else(|| StoreError::Bad(format!("no enrolment token {id}")))?
        .0)
}

/// Every token, oldest first.
pub(crate) fn list(tx: &dyn Conn) -> StoreResult<Vec<EnrolmentToken>> {
    tx.query(
        &format!("SELECT {COLS} FROM enrolment_tokens ORDER BY id"),
        params![],
    )?
    .iter()
    .map(row)
    .collect()
}

/// Spends one registration of token `id` if `secret_hash` is its secret and it admits
/// ([`refusal`]); the caller inserts the worker and records the token with
/// [`mark_enrolled`] in the same transaction.
pub(crate) fn spend(tx: &dyn Conn, id: u64, secret_hash: &[u8]) -> StoreResult<()> {
    if let Some(code) = refusal_of(tx, id, secret_hash)? {
        return Err(StoreError::Enrolment(code));
    }
    tx.exec(
        "UPDATE enrolment_tokens SET used = used + 1 WHERE id = ?1",
        params![u64_to_db(id)],
    )?;
    Ok(())
}

/// Why token `id` with this secret would register nobody now ([`refusal`]; `None`: it would
/// register one), spending nothing.
pub(crate) fn refusal_of(
    tx: &dyn Conn,
    id: u64,
    secret_hash: &[u8],
) -> StoreResult<Option<ErrorCode>> {
    let found = get(tx, id)?;
    let matches = found
        .as_ref()
        .is_some_and(|(_, h)| same_hash(h, secret_hash));
    Ok(refusal(found.as_ref().map(|(t, _)| t), matches))
}

/// Records which token enrolled a worker.
pub(crate) fn mark_enrolled(tx: &dyn Conn, worker_id: u64, token_id: u64) -> StoreResult<()> {
    tx.exec(
        "UPDATE workers SET enrolment_token = ?2 WHERE id = ?1",
        params![u64_to_db(worker_id), u64_to_db(token_id)],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use c960_common::error_code::ErrorCode;
    use std::collections::BTreeSet;

    use c960_common::wire::Capabilities;

    use crate::integrity::secrets::sha256;
    use crate::integrity::trust::Integrity;
    use crate::model::{StoreError, StoreResult};
    use crate::store::{SqliteStore, Store};
    use crate::work::campaign::NewCampaign;

    /// Tokens admit up to their cap and not after a revocation, and two workers of one token
    /// never hold replicas of one workunit, even with address blocks not separating (all from
    /// one block here, as behind a proxy).
    #[test]
    fn tokens_cap_registrations_and_separate_replicas() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        s.set_integrity(&Integrity {
            address_separation: crate::integrity::trust::AddressSeparation::Off,
            untrusted_lease_cap: 0,
            ..Integrity::default()
        })
        .unwrap();
        s.create_campaign(&NewCampaign::new(9, 2, None, (0..6).collect()).unwrap(), 0)
            .unwrap();
        let t = s
            .mint_enrolment_token("ann", 2, &sha256("t-secret"), 0)
            .unwrap();
        let u = s
            .mint_enrolment_token("bob", 1, &sha256("u-secret"), 0)
            .unwrap();
        let block = Some("10.0.0.0/24");
        let reg = |n: &str, id: u64, secret: &str| {
            s.register(
                &crate::model::NewWorker {
                    block: block.map(str::to_string),
                    token: Some((id, sha256(secret))),
                    ..crate::model::NewWorker::new(n, b"k", "e")
                },
                1,
            )
        };
        let refused = |r: StoreResult<u64>| match r {
            Err(StoreError::Enrolment(code)) => code,
            other => panic!("not refused: {other:?}"),
        };
        let a1 = reg("a1", t.id, "t-secret").unwrap();
        assert_eq!(
            refused(reg("x", t.id, "u-secret")),
            ErrorCode::BadEnrolmentToken
        );
        assert_eq!(
            refused(reg("x", 99, "t-secret")),
            ErrorCode::BadEnrolmentToken
        );
        let a2 = reg("a2", t.id, "t-secret").unwrap();
        assert_eq!(
            refused(reg("a3", t.id, "t-secret")),
            ErrorCode::EnrolmentTokenExhausted
        );
        let b1 = reg("b1", u.id, "u-secret").unwrap();
        let revoked = s.revoke_enrolment_token(u.id, 2).unwrap();
        assert!(revoked.revoked && revoked.used == 1);
        let listed = s.enrolment_tokens().unwrap();
        assert_eq!(
            listed.iter().map(|t| (t.used, t.cap)).collect::<Vec<_>>(),
            [(2, 2), (1, 1)]
        );

        let caps = Capabilities::builtin();
        let fetch = |w| s.assign_from(w, &caps, 3, 1000, 3, 0, block).unwrap();
        let ids = |ls: &[crate::model::Lease]| -> BTreeSet<u64> {
            ls.iter().map(|l| l.workunit_id).collect()
        };
        let la1 = ids(&fetch(a1));
        assert_eq!(la1.len(), 3);
        let la2 = ids(&fetch(a2));
        assert_eq!(la2.len(), 3);
        assert!(
            la1.is_disjoint(&la2),
            "one token, one volunteer: never a quorum"
        );
        let lb1 = ids(&fetch(b1));
        assert_eq!(lb1, la1, "another volunteer's worker pairs with them");
    }
}
