//! Conformance (both backends, instantiated by `conformance!`): BOINC hosts (issue 33,
//! `store/sql/boinc_hosts.rs`). A host is found by its host id only within its own account, else by
//! its account and CPID (a reattached client), never across accounts; registering one spends
//! its account's enrolment token in the same transaction (a refused token inserts nothing),
//! marks the worker enrolled by it — so two hosts of one token never hold replicas of one
//! workunit — and records its build, while asking whether a token admits spends nothing; the credit a scheduler reply reports sums the host's and
//! the account's validated nodes; the worker summary counts the hosts and their valid results.

use std::collections::BTreeSet;

use c960_common::error_code::ErrorCode;

use super::{ALL, sub, unknown_campaign};
use crate::integrity::secrets::sha256;
use crate::integrity::trust::{AddressSeparation, Integrity};
use crate::model::{
    BoincCredit, BoincIdentity, Lease, NewWorker, StoreError, StoreResult, TrustLevel,
};
use crate::store::Store;
use crate::store::codes::{db_to_u64, u64_to_db};
use crate::store::db::{Backend, params};

/// An account: SHA-256 of its key (here a stand-in byte pattern).
pub(crate) fn account(n: u8) -> [u8; 32] {
    [n; 32]
}

/// A host of `account` with this CPID, enrolled by `token` (id, secret) if any.
pub(crate) fn host(
    name: &str,
    account: [u8; 32],
    cpid: &str,
    token: Option<(u64, &str)>,
) -> NewWorker {
    NewWorker {
        build: Some("BOINC 7.20.5".into()),
        token: token.map(|(id, secret)| (id, sha256(secret))),
        boinc: Some(BoincIdentity {
            account_hash: account,
            host_cpid: cpid.into(),
        }),
        ..NewWorker::new(name, &sha256(name), "c960-worker boinc-app")
    }
}

/// The BOINC columns of a worker row: (enrolment token, account hash, CPID).
fn boinc_columns<S: Backend>(s: &S, id: u64) -> (Option<u64>, Option<Vec<u8>>, Option<String>) {
    s.with_conn(&mut |tx| {
        let r = tx.query_one(
            "SELECT enrolment_token, boinc_account, boinc_cpid FROM workers WHERE id = ?1",
            params![u64_to_db(id)],
        )?;
        Ok((r.opt_i64(0)?.map(db_to_u64), r.opt_blob(1)?, r.opt_text(2)?))
    })
    .unwrap()
}

pub(crate) fn a_boinc_host_is_found_within_its_account_by_id_or_cpid_never_across<S: Backend>(
    s: &S,
) {
    let (ann, bob) = (account(1), account(2));
    let a = s.register(&host("a", ann, "cpid-a", None), 10).unwrap();
    // Another account's host with the same CPID (CPIDs are the client's, not ours to trust).
    let b = s.register(&host("b", bob, "cpid-a", None), 11).unwrap();
    let native = s.register_worker("native", b"k", "e", 12).unwrap();
    let find = |acct: &[u8; 32], hostid: u64, cpid: &str| s.boinc_host(acct, hostid, cpid).unwrap();

    // By host id, within the account.
    assert_eq!(find(&ann, a, ""), Some(a));
    assert_eq!(find(&bob, b, "whatever"), Some(b), "the id first");
    // Another account's host id or a native worker's id is nobody's host here: the CPID
    // decides, within the account.
    assert_eq!(find(&bob, a, ""), None, "never across accounts");
    assert_eq!(find(&ann, b, ""), None);
    assert_eq!(find(&ann, native, ""), None, "a native worker is no host");
    assert_eq!(
        find(&ann, b, "cpid-a"),
        Some(a),
        "a foreign id falls back to the CPID"
    );
    assert_eq!(find(&bob, a, "cpid-a"), Some(b));
    // A reattached client (no host id) with its CPID.
    assert_eq!(find(&ann, 0, "cpid-a"), Some(a));
    assert_eq!(find(&bob, 0, "cpid-a"), Some(b));
    // Nothing to go by, an unknown id, an unknown CPID, an unknown account.
    assert_eq!(find(&ann, 0, ""), None);
    assert_eq!(find(&ann, 999_999, ""), None);
    assert_eq!(find(&ann, 0, "cpid-z"), None);
    assert_eq!(find(&account(3), 0, "cpid-a"), None);

    // The rows say what they are; the native worker's say nothing.
    assert_eq!(
        boinc_columns(s, a),
        (None, Some(ann.to_vec()), Some("cpid-a".into()))
    );
    assert_eq!(boinc_columns(s, native), (None, None, None));
    let rec = s.worker(a).unwrap().unwrap();
    assert_eq!(
        (rec.name.as_str(), rec.build.as_deref()),
        ("a", Some("BOINC 7.20.5"))
    );
    let summary = s.worker_summary(20).unwrap();
    assert_eq!(
        (summary.registered, summary.boinc_hosts, summary.boinc_valid),
        (3, 2, 0)
    );
}

pub(crate) fn registering_a_boinc_host_spends_its_token_and_its_hosts_are_one_party<S: Backend>(
    s: &S,
) {
    s.set_integrity(&Integrity {
        // Everything from one block would be one party under separation: off, so that only the
        // token keeps hosts apart.
        address_separation: AddressSeparation::Off,
        untrusted_lease_cap: 0,
        ..Integrity::default()
    })
    .unwrap();
    unknown_campaign(s, (0..6).collect());
    let (ann, bob) = (account(1), account(2));
    let t = s
        .mint_enrolment_token("ann", 2, &sha256("t-secret"), 0)
        .unwrap();
    let u = s
        .mint_enrolment_token("bob", 0, &sha256("u-secret"), 0)
        .unwrap();
    let ann_token = Some((t.id, "t-secret"));
    // Asking whether a token admits (the Manager's account lookup) spends nothing.
    let asks = |id: u64, secret: &str| s.enrolment_token_refusal(id, &sha256(secret)).unwrap();
    for _ in 0..3 {
        assert_eq!(asks(t.id, "t-secret"), None);
    }
    assert_eq!(asks(t.id, "u-secret"), Some(ErrorCode::BadEnrolmentToken));
    assert_eq!(asks(999, "t-secret"), Some(ErrorCode::BadEnrolmentToken));
    let h1 = s.register(&host("h1", ann, "c1", ann_token), 1).unwrap();
    let h2 = s.register(&host("h2", ann, "c2", ann_token), 1).unwrap();
    let g1 = s
        .register(&host("g1", bob, "c3", Some((u.id, "u-secret"))), 1)
        .unwrap();
    let used = |id: u64| {
        s.enrolment_tokens()
            .unwrap()
            .into_iter()
            .find(|x| x.id == id)
            .unwrap()
            .used
    };
    assert_eq!((used(t.id), used(u.id)), (2, 1));
    assert_eq!(boinc_columns(s, h1).0, Some(t.id), "enrolled by its token");
    assert_eq!(boinc_columns(s, g1).0, Some(u.id));

    // Refused tokens insert nothing and spend nothing.
    let before = s.worker_summary(2).unwrap();
    let refused = |r: StoreResult<u64>| match r {
        Err(StoreError::Enrolment(code)) => code,
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(
        refused(s.register(&host("h3", ann, "c4", ann_token), 2)),
        ErrorCode::EnrolmentTokenExhausted
    );
    assert_eq!(
        refused(s.register(&host("x", ann, "c5", Some((t.id, "u-secret"))), 2)),
        ErrorCode::BadEnrolmentToken
    );
    assert_eq!(
        refused(s.register(&host("x", ann, "c5", Some((999, "t-secret"))), 2)),
        ErrorCode::BadEnrolmentToken
    );
    s.revoke_enrolment_token(u.id, 2).unwrap();
    assert_eq!(
        refused(s.register(&host("g2", bob, "c6", Some((u.id, "u-secret"))), 3)),
        ErrorCode::EnrolmentTokenRevoked
    );
    assert_eq!(
        asks(t.id, "t-secret"),
        Some(ErrorCode::EnrolmentTokenExhausted)
    );
    assert_eq!(
        asks(u.id, "u-secret"),
        Some(ErrorCode::EnrolmentTokenRevoked)
    );
    let after = s.worker_summary(3).unwrap();
    assert_eq!(
        (after.registered, after.boinc_hosts),
        (before.registered, before.boinc_hosts)
    );
    assert_eq!((after.registered, after.boinc_hosts), (3, 3));
    assert_eq!((used(t.id), used(u.id)), (2, 1));
    for cpid in ["c4", "c5", "c6"] {
        assert_eq!(s.boinc_host(&ann, 0, cpid).unwrap(), None);
        assert_eq!(s.boinc_host(&bob, 0, cpid).unwrap(), None);
    }
    // A host already registered is found without its token (the scheduler asks first), so
    // an exhausted or revoked token does not lock its hosts out.
    assert_eq!(s.boinc_host(&bob, g1, "c3").unwrap(), Some(g1));

    // One token, one party: its two hosts never hold replicas of one workunit, however they
    // ask; a host of another token pairs with either.
    let block = Some("10.0.0.0/24");
    let fetch = |w| -> BTreeSet<u64> {
        s.assign_from(w, &ALL, 4, 1000, 3, 0, block)
            .unwrap()
            .iter()
            .map(|l: &Lease| l.workunit_id)
            .collect()
    };
    let l1 = fetch(h1);
    let l2 = fetch(h2);
    assert_eq!((l1.len(), l2.len()), (3, 3));
    assert!(l1.is_disjoint(&l2), "one token, one party: {l1:?} {l2:?}");
    assert_eq!(fetch(g1), l1, "another volunteer's host pairs with them");
}

pub(crate) fn boinc_credit_sums_the_hosts_and_the_accounts_validated_nodes<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        untrusted_lease_cap: 0,
        ..Integrity::default()
    })
    .unwrap();
    // No public answer; the trusted native worker anchors each value.
    unknown_campaign(s, vec![0, 1, 2]);
    let (ann, bob) = (account(1), account(2));
    let t = s.mint_enrolment_token("ann", 0, &sha256("t"), 0).unwrap();
    let ann_token = Some((t.id, "t"));
    let h1 = s.register(&host("h1", ann, "c1", ann_token), 100).unwrap();
    let h2 = s.register(&host("h2", ann, "c2", ann_token), 200).unwrap();
    let g = s.register(&host("g", bob, "c3", None), 300).unwrap();
    let n = s.register_worker("native", b"k", "e", 0).unwrap();
    s.set_trust(n, true).unwrap();
    let nothing = s.boinc_credit(h1, &ann).unwrap();
    assert_eq!(
        nothing,
        BoincCredit {
            host_nodes: 0,
            host_created_ms: 100,
            account_nodes: 0,
            account_created_ms: 100,
        }
    );

    // Node counts past 2^32 exercise the kept halves; every workunit's value is its own.
    let nodes = |wu: u64| (1u64 << 40) + wu;
    let answer = |w: u64, leases: &[Lease]| {
        for l in leases {
            s.submit(
                w,
                l.lease_id,
                &sub(nodes(l.workunit_id), l.workunit_id as u8),
                2,
            )
            .unwrap();
        }
    };
    let take = |w: u64, k: u32| s.assign_from(w, &ALL, 1, 1000, k, 0, None).unwrap();
    let (l1, l2) = (take(h1, 1), take(h2, 1));
    assert_eq!((l1.len(), l2.len()), (1, 1));
    assert_ne!(l1[0].workunit_id, l2[0].workunit_id, "one party");
    let ln = take(n, 3);
    answer(h1, &l1);
    answer(h2, &l2);
    answer(n, &ln);
    // Bob's host answers the third workunit wrongly: it loses the vote, and earns nothing.
    let lg = take(g, 3);
    assert_eq!(lg.len(), 1, "the one replica still wanted: {lg:?}");
    let third = lg[0].workunit_id;
    s.submit(g, lg[0].lease_id, &sub(7, 99), 3).unwrap();
    let w1 = u128::from(nodes(l1[0].workunit_id));
    let w2 = u128::from(nodes(l2[0].workunit_id));
    assert_eq!(
        s.boinc_credit(h1, &ann).unwrap(),
        BoincCredit {
            host_nodes: w1,
            host_created_ms: 100,
            account_nodes: w1 + w2,
            account_created_ms: 100,
        }
    );
    let c2 = s.boinc_credit(h2, &ann).unwrap();
    assert_eq!(
        (
            c2.host_nodes,
            c2.host_created_ms,
            c2.account_nodes,
            c2.account_created_ms
        ),
        (w2, 200, w1 + w2, 100)
    );
    let cg = s.boinc_credit(g, &bob).unwrap();
    assert_eq!((cg.host_nodes, cg.account_nodes), (0, 0));
    // The operator's view: three hosts, two valid results among them (not the native's).
    let summary = s.worker_summary(4).unwrap();
    assert_eq!((summary.boinc_hosts, summary.boinc_valid), (3, 2));
    // The disagreement wants a third replica, which Ann's first host takes: its agreeing
    // answer validates the workunit, and both of its figures count it.
    let again = take(g, 3);
    assert_eq!(again.len(), 0, "it answered that workunit already");
    let l3 = take(h1, 3);
    assert_eq!(l3.len(), 1);
    assert_eq!(l3[0].workunit_id, third);
    answer(h1, &l3);
    let c1 = s.boinc_credit(h1, &ann).unwrap();
    let w3 = u128::from(nodes(third));
    assert_eq!((c1.host_nodes, c1.account_nodes), (w1 + w3, w1 + w2 + w3));
    assert_eq!(s.worker_summary(5).unwrap().boinc_valid, 3);
}

/// A registration is written whole in one transaction: the trust its rules decided, its build
/// and address block, a native worker's missing BOINC identity; a refused token writes nothing
/// (the operator's own worker was once made in one transaction and trusted in a second).
pub(crate) fn a_registration_writes_its_trust_and_build_with_the_worker<S: Backend>(s: &S) {
    let own = NewWorker {
        trust: TrustLevel::Operator,
        build: Some("c960-worker 0.2.0".into()),
        block: Some("127.0.0.0/24".into()),
        ..NewWorker::new("own", b"k", "c960 0.2.0")
    };
    let id = s.register(&own, 5).unwrap();
    let w = s.worker(id).unwrap().unwrap();
    assert_eq!(
        (w.trust, w.build.as_deref()),
        (TrustLevel::Operator, Some("c960-worker 0.2.0"))
    );
    assert_eq!(boinc_columns(s, id), (None, None, None));
    let plain = s.register_worker("plain", b"k", "e", 6).unwrap();
    let p = s.worker(plain).unwrap().unwrap();
    assert_eq!((p.trust, p.build), (TrustLevel::Untrusted, None));
    let before = s.worker_summary(7).unwrap();
    let refused = NewWorker {
        trust: TrustLevel::Operator,
        token: Some((999, sha256("nothing"))),
        ..NewWorker::new("refused", b"k", "e")
    };
    assert!(matches!(
        s.register(&refused, 7),
        Err(StoreError::Enrolment(ErrorCode::BadEnrolmentToken))
    ));
    assert_eq!(s.worker_summary(7).unwrap(), before, "nothing written");
}
