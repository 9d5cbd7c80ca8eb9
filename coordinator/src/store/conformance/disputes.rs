//! Conformance (both backends, instantiated by `conformance!`): disputes settled by bisection
//! (issue 54). Two results of one perft workunit disagree and the coordinator's check comes
//! back over its budget: the referee ([`crate::integrity::referee::next_move`]) challenges
//! both sides down the tree, through leases handed out and answered like any other, and the
//! side proven wrong fails a check (quarantine), whichever way it loses.

use c960_common::wire::{PerftResult, WorkResult};
use c960_common::{PerftEngine, PerftOptions, Position, StartPosition, perft};

use super::{ALL, sub};
use crate::integrity::referee::next_move;
use crate::integrity::trust::Integrity;
use crate::model::disputes::challenge_of;
use crate::model::{CheckOutcome, Submission};
use crate::store::Store;
use crate::store::db::Backend;
use crate::work::campaign::NewCampaign;

/// How a side answers a challenge for the node reached by `path` at `depth`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Conduct {
    /// The true divide.
    Honest,
    /// The true divide with one more node wherever the lie's path goes.
    Liar,
    /// Nothing.
    Silent,
    /// The true divide, under a claim that was not true: contradicts itself.
    Careless,
}

/// The lie: one node more below e2e4 e7e5 g1f3 a7a6, one fewer below d2d4 d7d5 g1f3 a7a6 (the
/// start's total stays the public one: only the divide is wrong), told consistently at every
/// node on the way.
const MORE: [&str; 4] = ["e2e4", "e7e5", "g1f3", "a7a6"];
const FEWER: [&str; 4] = ["d2d4", "d7d5", "g1f3", "a7a6"];

fn divide_of(pos: &Position, depth: u32, path: &[String], conduct: Conduct) -> Vec<(String, u64)> {
    pos.legal_moves()
        .as_slice()
        .iter()
        .map(|&m| {
            let mv = m.to_string();
            let mut n = perft(&pos.play(m), depth - 1);
            if conduct == Conduct::Liar {
                let mut here: Vec<&str> = path.iter().map(String::as_str).collect();
                here.push(&mv);
                if MORE.starts_with(&here) {
                    n += 1;
                }
                if FEWER.starts_with(&here) {
                    n -= 1;
                }
            }
            (mv, n)
        })
        .collect()
}

/// The position and depth of a perft of a FEN (a challenge, a start of a family other than
/// Chess960).
fn fen_perft(kind: &c960_common::wire::WorkUnitKind) -> (Position, u32) {
    let c960_common::wire::WorkUnitKind::Perft {
        position: c960_common::wire::PositionSpec::Fen(fen),
        depth,
    } = kind
    else {
        panic!("a perft of a FEN: {kind:?}")
    };
    (Position::from_fen(fen).unwrap(), *depth)
}

fn submission(result: PerftResult, tag: u8) -> Submission {
    Submission {
        result: WorkResult::Perft(result),
        ..sub(0, tag)
    }
}

/// One dispute played out at depth 5 with a budget of 100 nodes: returns the honest worker,
/// the other side, and the challenges issued.
fn play<S: Backend>(s: &S, other: Conduct) -> (u64, u64, u64) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        challenge_ms: 1_000,
        ..Integrity::default()
    })
    .unwrap();
    let c = s
        .create_campaign(&NewCampaign::new(5, 2, None, vec![518]).unwrap(), 0)
        .unwrap();
    let _ = c;
    let root = StartPosition::new(518).unwrap().position();
    let honest = s.register_worker("honest", b"h", "e", 0).unwrap();
    let rival = s.register_worker("rival", b"r", "e", 0).unwrap();
    let lh = s.assign(honest, &ALL, 1, 100_000).unwrap().unwrap();
    let lr = s.assign(rival, &ALL, 1, 100_000).unwrap().unwrap();
    let truth = PerftResult {
        nodes: perft(&root, 5),
        divide: divide_of(&root, 5, &[], Conduct::Honest),
    };
    let lie = PerftResult {
        nodes: truth.nodes,
        divide: divide_of(&root, 5, &[], Conduct::Liar),
    };
    s.submit(honest, lh.lease_id, &submission(truth, 1), 2)
        .unwrap();
    s.submit(rival, lr.lease_id, &submission(lie, 2), 3)
        .unwrap();
    // Contested: the coordinator's check is wanted, and comes back over its budget.
    s.record_check(lh.workunit_id, &CheckOutcome::OverBudget, 4)
        .unwrap();
    let engine = PerftEngine::new(PerftOptions {
        hash_mib: 0,
        ..PerftOptions::default()
    });
    let mut now = 10;
    let mut challenges = 0;
    for _round in 0..10 {
        now += 10;
        let due = s.disputes_due(8, now).unwrap();
        for d in &due {
            let advance = next_move(&engine, d, 100).expect("due disputes move");
            s.advance_dispute(d.id, &advance, now).unwrap();
        }
        let mut answered = false;
        for (w, conduct) in [(honest, Conduct::Honest), (rival, other)] {
            for l in s.challenge_leases(w, now).unwrap() {
                challenges += 1;
                assert!(challenge_of(l.lease_id).is_some());
                let (pos, depth) = fen_perft(&l.kind);
                let path = s.disputes_path(l.lease_id);
                let answer = match conduct {
                    Conduct::Silent => continue,
                    Conduct::Careless | Conduct::Honest => {
                        divide_of(&pos, depth, &path, Conduct::Honest)
                    }
                    Conduct::Liar => divide_of(&pos, depth, &path, Conduct::Liar),
                };
                let nodes = answer.iter().map(|(_, n)| n).sum();
                let r = PerftResult {
                    nodes,
                    divide: answer,
                };
                s.submit(w, l.lease_id, &submission(r, 3), now).unwrap();
                answered = true;
            }
        }
        if due.is_empty() && !answered {
            // Past every deadline: silence is missed.
            now += 2_000;
            if s.disputes_due(8, now).unwrap().is_empty() {
                break;
            }
        }
    }
    (honest, rival, challenges)
}

trait PathOf {
    fn disputes_path(&self, lease_id: u64) -> Vec<String>;
}

impl<S: Backend> PathOf for S {
    /// The moves from the workunit to a challenge's node (what a liar keeps track of).
    fn disputes_path(&self, lease_id: u64) -> Vec<String> {
        let id = challenge_of(lease_id).unwrap() as i64;
        let mut path = String::new();
        self.with_conn(&mut |tx| {
            path = tx
                .query_one(
                    "SELECT d.path FROM disputes d JOIN challenges c ON c.dispute_id = d.id WHERE c.id = ?1",
                    crate::store::db::params![id],
                )?
                .text(0)?;
            Ok(())
        })
        .unwrap();
        path.split_whitespace().map(str::to_string).collect()
    }
}

fn standing<S: Store>(s: &S, w: u64) -> bool {
    s.worker(w).unwrap().unwrap().quarantined
}

/// A wrong count four plies down (the liar answers every challenge consistently with its lie):
/// found there, only the liar convicted.
pub(crate) fn a_dispute_finds_a_wrong_count_plies_down_and_convicts_only_the_liar<S: Backend>(
    s: &S,
) {
    let (honest, liar, challenges) = play(s, Conduct::Liar);
    assert!(standing(s, liar), "the liar is quarantined");
    assert!(!standing(s, honest), "the honest side is not");
    let cost = s.dispute_cost().unwrap();
    assert_eq!((cost.opened, cost.decided, cost.convicted), (1, 1, 1));
    // Three plies down by either path (depth 4, 3, 2): three rounds of two challenges; the
    // fourth node (depth 1) is counted.
    assert_eq!((cost.challenges, challenges), (6, 6));
    assert!(cost.leaf_nodes > 0);
}

/// Silence past the deadline loses.
pub(crate) fn a_dispute_is_lost_by_silence<S: Backend>(s: &S) {
    let (honest, silent, _) = play(s, Conduct::Silent);
    assert!(standing(s, silent));
    assert!(!standing(s, honest));
    assert_eq!(s.dispute_cost().unwrap().convicted, 1);
}

/// An answer whose children do not sum to the side's own earlier claim loses.
pub(crate) fn a_dispute_is_lost_by_contradicting_ones_own_claim<S: Backend>(s: &S) {
    let (honest, careless, challenges) = play(s, Conduct::Careless);
    assert!(standing(s, careless));
    assert!(!standing(s, honest));
    assert_eq!(challenges, 2, "lost at its first answer");
}

/// Two honest results that differ only in the order of their divides: nobody is convicted.
/// At the cap (here the quorum), with nothing left to decide it, the workunit fails.
pub(crate) fn two_honest_sides_of_a_dispute_are_both_cleared<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        ..Integrity::default()
    })
    .unwrap();
    let c = s
        .create_campaign(&NewCampaign::new(3, 2, Some(2), vec![518]).unwrap(), 0)
        .unwrap();
    let root = StartPosition::new(518).unwrap().position();
    let a = s.register_worker("a", b"a", "e", 0).unwrap();
    let b = s.register_worker("b", b"b", "e", 0).unwrap();
    // Trusted: their disagreement at the cap would fail the workunit but for the dispute.
    s.set_trust(a, true).unwrap();
    s.set_trust(b, true).unwrap();
    let la = s.assign(a, &ALL, 1, 100_000).unwrap().unwrap();
    let lb = s.assign(b, &ALL, 1, 100_000).unwrap().unwrap();
    let divide = divide_of(&root, 3, &[], Conduct::Honest);
    let mut reversed = divide.clone();
    reversed.reverse();
    let nodes = perft(&root, 3);
    s.submit(
        a,
        la.lease_id,
        &submission(PerftResult { nodes, divide }, 1),
        2,
    )
    .unwrap();
    let r = PerftResult {
        nodes,
        divide: reversed,
    };
    s.submit(b, lb.lease_id, &submission(r, 2), 3).unwrap();
    s.record_check(la.workunit_id, &CheckOutcome::OverBudget, 4)
        .unwrap();
    let due = s.disputes_due(8, 5).unwrap();
    assert_eq!(due.len(), 1);
    let engine = PerftEngine::new(PerftOptions::default());
    let advance = next_move(&engine, &due[0], 500_000_000).unwrap();
    s.advance_dispute(due[0].id, &advance, 6).unwrap();
    assert!(!standing(s, a) && !standing(s, b));
    let cost = s.dispute_cost().unwrap();
    assert_eq!((cost.decided, cost.convicted), (1, 0));
    // The same pair is not disputed again.
    assert!(s.disputes_due(8, 7).unwrap().is_empty());
    assert_eq!(s.progress().unwrap()[0].failed, 1, "{:?}", s.table(c.id));
}

/// A dispute left with its first challenges open (for the copy test: every table has rows).
pub(crate) fn a_challenged_dispute<S: Store>(s: &S) {
    let c = s
        .create_campaign(&NewCampaign::new(4, 2, None, vec![518]).unwrap(), 20)
        .unwrap();
    // Served first, before whatever else the store holds.
    s.update_campaign(c.id, &crate::model::CampaignChange::Priority(100))
        .unwrap();
    let mine = c960_common::wire::WorkUnitKind::Perft {
        position: c960_common::wire::PositionSpec::StartPosition(518),
        depth: 4,
    };
    let root = StartPosition::new(518).unwrap().position();
    let a = s.register_worker("side a", b"sa", "e", 20).unwrap();
    let b = s.register_worker("side b", b"sb", "e", 20).unwrap();
    for (w, conduct, tag) in [(a, Conduct::Honest, 7), (b, Conduct::Liar, 8)] {
        let l = s
            .assign_batch(w, &ALL, 21, 100_000, 16, 0)
            .unwrap()
            .into_iter()
            .find(|l| l.kind == mine)
            .unwrap();
        let r = PerftResult {
            nodes: perft(&root, 4),
            divide: divide_of(&root, 4, &[], conduct),
        };
        s.submit(w, l.lease_id, &submission(r, tag), 22).unwrap();
        s.record_check(l.workunit_id, &CheckOutcome::OverBudget, 23)
            .ok();
    }
    let engine = PerftEngine::new(PerftOptions {
        hash_mib: 0,
        ..PerftOptions::default()
    });
    for d in s.disputes_due(8, 24).unwrap() {
        let advance = next_move(&engine, &d, 10).unwrap();
        s.advance_dispute(d.id, &advance, 24).unwrap();
    }
    assert!(!s.challenge_leases(a, 25).unwrap().is_empty());
}

/// Spare capacity re-verifies: a worker with nothing else to do gets a hidden replica of the
/// valid value with the fewest agreeing workers (the value stays valid); its disagreement with
/// a pair that agreed on a wrong divide (the right total, which anchored it) is a dispute that
/// convicts the first liar; the value reopens for re-verification, and the coordinator's check
/// of it (contested, within the budget) catches the second.
pub(crate) fn spare_capacity_reverifies_and_a_disagreement_convicts_the_pair<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        idle_reverify_upto: 3,
        ..Integrity::default()
    })
    .unwrap();
    let c = s
        .create_campaign(&NewCampaign::new(4, 2, None, vec![518]).unwrap(), 0)
        .unwrap();
    let root = StartPosition::new(518).unwrap().position();
    let liars = [
        s.register_worker("liar a", b"la", "e", 0).unwrap(),
        s.register_worker("liar b", b"lb", "e", 0).unwrap(),
    ];
    let lie = PerftResult {
        nodes: perft(&root, 4),
        divide: divide_of(&root, 4, &[], Conduct::Liar),
    };
    for &w in &liars {
        let l = s.assign(w, &ALL, 1, 100_000).unwrap().unwrap();
        s.submit(w, l.lease_id, &submission(lie.clone(), 9), 2)
            .unwrap();
    }
    // The public total anchors the pair's value.
    assert_eq!(s.campaign_progress(c.id).unwrap().valid, 1);
    let honest = s.register_worker("honest", b"h", "e", 3).unwrap();
    let l = s
        .assign(honest, &ALL, 4, 100_000)
        .unwrap()
        .expect("a spare replica");
    assert_eq!(
        s.campaign_progress(c.id).unwrap().valid,
        1,
        "the value stays valid meanwhile"
    );
    assert!(s.assign(liars[0], &ALL, 4, 100_000).unwrap().is_none());
    let truth = PerftResult {
        nodes: perft(&root, 4),
        divide: divide_of(&root, 4, &[], Conduct::Honest),
    };
    s.submit(honest, l.lease_id, &submission(truth, 8), 5)
        .unwrap();
    let engine = PerftEngine::new(PerftOptions {
        hash_mib: 0,
        ..PerftOptions::default()
    });
    for t in 6..12 {
        for d in s.disputes_due(8, t).unwrap() {
            let advance = next_move(&engine, &d, 500_000_000).unwrap();
            s.advance_dispute(d.id, &advance, t).unwrap();
        }
        // Once the first liar is convicted the value reopens, contested within the budget:
        // the coordinator's check (here: its digest, the honest result's) settles the rest.
        for check in s.checks_wanted(8).unwrap() {
            let verified = CheckOutcome::Verified {
                digest: [8; 32],
                nodes: 1,
            };
            s.record_check(check.workunit_id, &verified, t).unwrap();
        }
    }
    assert!(
        standing(s, liars[0]) && standing(s, liars[1]),
        "both liars quarantined"
    );
    assert!(!standing(s, honest));
    assert_eq!(
        s.dispute_cost().unwrap().convicted,
        1,
        "the first by the dispute"
    );
    // Re-verification without them: the value waits for a quorum of honest workers.
    assert_eq!(s.campaign_progress(c.id).unwrap().valid, 0);
}

/// The stall of CI at 27d236d: three truths outvoted two lies (the quorum raised by an audit
/// replica), and the first truth-teller was then quarantined for a lie of its own elsewhere.
/// The value reopened two against two at the cap while its only dispute waited on the
/// quarantined worker's answer; it failed, and nothing opened another. A contested perft value
/// is decided by proof, never failed while a dispute can settle it: the next disputes convict
/// both liars, and the value completes with the truth.
pub(crate) fn a_value_reopened_two_against_two_at_the_cap_is_decided_by_disputes<S: Backend>(
    s: &S,
) {
    use c960_common::family::Family;
    let integrity = Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        audit_rate_ppm: 1_000_000,
        audit_sample_ppm: 0,
        idle_reverify_upto: 0,
        challenge_ms: 1_000,
        ..Integrity::default()
    };
    s.set_integrity(&integrity).unwrap();
    let campaign = NewCampaign::in_family(Family::Shuffle, 3, 2, None, vec![0]).unwrap();
    let c = s.create_campaign(&campaign, 0).unwrap();
    let names = ["liar a", "liar b", "first", "second", "third", "partner"];
    let w: Vec<u64> = names
        .iter()
        .map(|n| s.register_worker(n, n.as_bytes(), "e", 0).unwrap())
        .collect();
    let earned = crate::store::codes::trust_code(crate::model::TrustLevel::Earned);
    s.raw_tx(&mut |c| {
        c.exec(&format!("UPDATE workers SET trusted = {earned}"), &[])
            .map(|_| ())
    })
    .unwrap();
    let (liars, first, honest) = ([w[0], w[1]], w[2], [w[3], w[4]]);
    // The lie: one node more below the first move, at every node on its path.
    let divide = |pos: &Position, depth: u32, lie: bool| -> Vec<(String, u64)> {
        let mut d = divide_of(pos, depth, &[], Conduct::Honest);
        if lie {
            d[0].1 += 1;
        }
        d
    };
    let result = |pos: &Position, depth: u32, lie: bool| {
        let divide = divide(pos, depth, lie);
        PerftResult {
            nodes: divide.iter().map(|(_, n)| n).sum(),
            divide,
        }
    };
    let answer = |worker: u64, lie: bool, tag: u8, now: i64| {
        let l = s
            .assign(worker, &ALL, now, 100_000)
            .unwrap()
            .expect("a replica");
        let (pos, depth) = fen_perft(&l.kind);
        s.submit(
            worker,
            l.lease_id,
            &submission(result(&pos, depth, lie), tag),
            now,
        )
        .unwrap();
        l.workunit_id
    };
    // Two lies validate; the audit replica reopens the value (quorum 3, cap 5), the first truth
    // opens a dispute, two more outvote the liars.
    let wu = answer(liars[0], true, 2, 1);
    answer(liars[1], true, 2, 2);
    answer(first, false, 1, 3);
    answer(honest[0], false, 1, 4);
    assert_eq!(
        s.campaign_progress(c.id).unwrap().valid,
        0,
        "the audit is on"
    );
    answer(honest[1], false, 1, 5);
    assert_eq!(s.campaign_progress(c.id).unwrap().valid, 1);
    assert_eq!(s.dispute_cost().unwrap().opened, 1);
    // The first truth-teller lied elsewhere with its partner, and the coordinator's count
    // proves it: quarantined, its vote withdrawn, the value reopens two against two.
    s.set_integrity(&Integrity {
        audit_rate_ppm: 0,
        ..integrity
    })
    .unwrap();
    s.create_campaign(&NewCampaign::new(2, 2, None, vec![518]).unwrap(), 6)
        .unwrap();
    let root = StartPosition::new(518).unwrap().position();
    let mut other = 0;
    for worker in [first, w[5]] {
        let l = s.assign(worker, &ALL, 7, 100_000).unwrap().unwrap();
        assert_ne!(l.workunit_id, wu);
        other = l.workunit_id;
        s.submit(
            worker,
            l.lease_id,
            &submission(result(&root, 2, false), 5),
            7,
        )
        .unwrap();
    }
    let truth = CheckOutcome::Verified {
        digest: [6; 32],
        nodes: 1,
    };
    s.record_check(other, &truth, 8).unwrap();
    assert!(standing(s, first), "the first truth-teller is quarantined");
    assert_eq!(s.campaign_progress(c.id).unwrap().valid, 0, "reopened");
    // The coordinator's count of it comes back over the budget; the referee plays.
    for check in s.checks_wanted(8).unwrap() {
        s.record_check(check.workunit_id, &CheckOutcome::OverBudget, 9)
            .unwrap();
    }
    let engine = PerftEngine::new(PerftOptions {
        hash_mib: 0,
        ..PerftOptions::default()
    });
    let mut now = 10;
    for _ in 0..40 {
        now += 10;
        for d in s.disputes_due(8, now).unwrap() {
            if let Some(advance) = next_move(&engine, &d, 100) {
                s.advance_dispute(d.id, &advance, now).unwrap();
            }
        }
        for (worker, lie) in [
            (liars[0], true),
            (liars[1], true),
            (honest[0], false),
            (honest[1], false),
        ] {
            for l in s.challenge_leases(worker, now).unwrap() {
                let (pos, depth) = fen_perft(&l.kind);
                let r = result(&pos, depth, lie);
                s.submit(worker, l.lease_id, &submission(r, 3), now)
                    .unwrap();
            }
        }
        for check in s.checks_wanted(8).unwrap() {
            s.record_check(check.workunit_id, &CheckOutcome::OverBudget, now)
                .unwrap();
        }
    }
    assert!(
        standing(s, liars[0]) && standing(s, liars[1]),
        "both liars are convicted"
    );
    assert!(!standing(s, honest[0]) && !standing(s, honest[1]));
    let progress = s.campaign_progress(c.id).unwrap();
    assert_eq!((progress.valid, progress.total), (1, 1), "{progress:?}");
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(
        rows[0].nodes,
        Some(result(&Position::from_fen(&rows[0].fen).unwrap(), 3, false).nodes)
    );
}
