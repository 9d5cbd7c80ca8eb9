//! Campaign management, over the admin HTTP API (a real server on 127.0.0.1 port 0) and on the
//! command line (the real binary): create every kind and family, list, show, name, priority,
//! pause, resume, cancel; a warning on an identical campaign; every refusal; and scheduling that
//! serves higher priorities first and paused or cancelled campaigns never.

use std::path::Path;
use std::process::{Command, Output};

use c960_common::wire::{Capabilities, FetchResponse, PositionSpec, WorkUnitKind};
use c960_coordinator::integrity::secrets::sha256;
use c960_coordinator::net::api::Config;
use c960_coordinator::store::{SqliteStore, Store};
use c960_tests::{TestServer, bins, quick_config, raw_post};
use c960_worker::client::Client;
use serde_json::{Value, json};

const ADMIN: &str = "admin-token-for-campaign-tests-42";

async fn admin_server() -> TestServer {
    TestServer::start(Config {
        admin_token_hash: Some(sha256(ADMIN)),
        ..quick_config()
    })
    .await
}

/// An admin POST with a JSON body: status and the body as JSON.
async fn post(s: &TestServer, path: &str, body: Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/admin/campaigns{path}", s.url))
        .bearer_auth(ADMIN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_str(&resp.text().await.unwrap()).unwrap(),
    )
}

/// An admin GET: status and the body as JSON.
async fn get(s: &TestServer, path: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .get(format!("{}/api/v1/admin/campaigns{path}", s.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_str(&resp.text().await.unwrap()).unwrap(),
    )
}

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

const FAMILIES: [&str; 8] = [
    "chess960",
    "shuffle",
    "bishops",
    "chess960-nc",
    "shuffle-nc",
    "bishops-nc",
    "transcendental",
    "dfrc",
];

#[tokio::test]
async fn every_kind_and_family_is_created_over_http_and_an_identical_one_warns() {
    let s = admin_server().await;
    let (st, first) = post(
        &s,
        "",
        json!({"depth": 1, "positions": "0-1", "name": "first"}),
    )
    .await;
    assert_eq!(st, 201, "{first}");
    assert_eq!(first["warnings"], json!([]));
    assert_eq!(
        (&first["name"], &first["status"], &first["priority"]),
        (&json!("first"), &json!("active"), &json!(0))
    );
    let first_id = first["id"].as_u64().unwrap();
    // The same parameters again (another name): created, with a warning naming the first.
    let (st, again) = post(&s, "", json!({"depth": 1, "positions": "0-1", "name": "x"})).await;
    assert_eq!(st, 201);
    assert_eq!(again["warnings"][0]["code"], "identical_campaign");
    assert_eq!(again["warnings"][0]["campaign"], first_id);
    assert_ne!(again["id"], first["id"]);

    let (st, split) = post(
        &s,
        "",
        json!({"depth": 3, "positions": "518", "split_ply": 1}),
    )
    .await;
    assert_eq!((st, &split["split_ply"]), (201, &json!(1)));
    // The answer says what was made and what it costs.
    assert_eq!(split["workunits"], 20, "{split}");
    assert_eq!(split["estimate"]["split_ply"], 1, "{split}");
    assert_eq!(split["estimate"]["starts"], 1, "{split}");
    assert!(
        split["estimate"]["core_secs"].as_f64().unwrap() > 0.0,
        "{split}"
    );
    let (st, analysis) = post(
        &s,
        "",
        json!({"depth": 1, "kind": "analysis", "engine": "builtin", "positions": "0", "priority": 4}),
    )
    .await;
    assert_eq!(st, 201, "{analysis}");
    assert_eq!(
        (
            &analysis["kind"],
            &analysis["engine"],
            &analysis["priority"]
        ),
        (&json!("analysis"), &json!("builtin"), &json!(4))
    );
    for family in FAMILIES {
        let (st, c) = post(
            &s,
            "",
            json!({"depth": 1, "family": family, "positions": "0-1"}),
        )
        .await;
        assert_eq!((st, c["family"].as_str()), (201, Some(family)), "{c}");
    }
    let (st, sampled) = post(
        &s,
        "",
        json!({"depth": 1, "family": "dfrc", "sample": 3, "seed": 9}),
    )
    .await;
    assert_eq!(st, 201, "{sampled}");

    // The store has them all, with their workunits: 20 for the split of 518 at ply 1.
    let progress = s.store.progress().unwrap();
    assert_eq!(progress.len(), 4 + FAMILIES.len() + 1);
    let split_units = progress
        .iter()
        .find(|p| p.campaign.id == split["id"].as_u64().unwrap())
        .unwrap()
        .total;
    assert_eq!(split_units, 20);

    // Refusals: one machine-readable code each, nothing created.
    for (body, want_status, want) in [
        (json!({"depth": 0}), 400, "bad_field"),
        (json!({"depth": 1, "kind": "mystery"}), 400, "bad_field"),
        (
            json!({"depth": 1, "engine": "uci", "positions": "0"}),
            400,
            "bad_field",
        ),
        (json!({"depth": 1, "family": "checkers"}), 400, "bad_field"),
        (
            json!({"depth": 1, "positions": "0", "split_ply": "deep"}),
            400,
            "bad_field",
        ),
        (
            json!({"depth": 1, "positions": "0", "sample": 2}),
            400,
            "bad_field",
        ),
        (
            json!({"depth": 1, "positions": "0", "name": " "}),
            400,
            "bad_field",
        ),
        (json!({"depth": 1, "colour": "white"}), 422, "bad_body"),
        (json!({"positions": "0"}), 400, "bad_field"),
        (json!({"depth": -1, "positions": "0"}), 422, "bad_body"),
        // Past the bound: refused from the estimate, before any split is enumerated.
        (
            json!({"depth": 20, "positions": "0"}),
            400,
            "workunit_too_long",
        ),
        (json!({"depth": 12}), 400, "too_many_workunits"),
        (
            json!({"depth": 12, "positions": "0", "split_ply": 0}),
            400,
            "workunit_too_long",
        ),
    ] {
        let (st, v) = post(&s, "", body.clone()).await;
        assert_eq!((st, code(&v)), (want_status, want), "{body}");
    }
    assert_eq!(s.store.progress().unwrap().len(), progress.len());
    // `force` creates it all the same.
    let (st, forced) = post(
        &s,
        "",
        json!({"depth": 12, "positions": "0", "split_ply": 0, "force": true}),
    )
    .await;
    assert_eq!((st, &forced["workunits"]), (201, &json!(1)), "{forced}");
}

#[tokio::test]
async fn campaigns_are_listed_shown_named_prioritised_paused_resumed_and_cancelled_over_http() {
    let s = admin_server().await;
    let (_, c) = post(&s, "", json!({"depth": 1, "positions": "0-3"})).await;
    let id = c["id"].as_u64().unwrap();
    let path = |action: &str| format!("/{id}/{action}");

    let (st, list) = get(&s, "").await;
    assert_eq!((st, list.as_array().unwrap().len()), (200, 1));
    assert_eq!(list[0]["campaign"]["id"], id);
    assert_eq!(list[0]["total"], 4);
    let (st, one) = get(&s, &format!("/{id}")).await;
    assert_eq!((st, &one["campaign"]["status"]), (200, &json!("active")));

    let (st, v) = post(&s, &path("name"), json!({"name": "  d1 sweep "})).await;
    assert_eq!((st, &v["name"]), (200, &json!("d1 sweep")));
    let (st, v) = post(&s, &path("name"), json!({"name": null})).await;
    assert_eq!((st, &v["name"]), (200, &Value::Null));
    let (st, v) = post(&s, &path("priority"), json!({"priority": -7})).await;
    assert_eq!((st, &v["priority"]), (200, &json!(-7)));
    let (st, v) = post(&s, &path("pause"), Value::Null).await;
    assert_eq!((st, &v["status"]), (200, &json!("paused")));
    let (st, v) = post(&s, &path("pause"), Value::Null).await;
    assert_eq!(
        (st, &v["status"]),
        (200, &json!("paused")),
        "pausing twice is harmless"
    );
    let (st, v) = post(&s, &path("resume"), Value::Null).await;
    assert_eq!((st, &v["status"]), (200, &json!("active")));
    let (st, v) = post(&s, &path("cancel"), Value::Null).await;
    assert_eq!((st, &v["status"]), (200, &json!("cancelled")));
    assert_eq!(s.store.campaign(id).unwrap().priority, -7);

    // Refusals.
    for action in ["resume", "pause"] {
        let (st, v) = post(&s, &path(action), Value::Null).await;
        assert_eq!((st, code(&v)), (409, "campaign_cancelled"), "{action}");
    }
    let (st, v) = post(&s, &path("name"), json!({"name": ""})).await;
    assert_eq!((st, code(&v)), (400, "bad_field"));
    let (st, v) = post(&s, &path("name"), json!({"name": "x".repeat(101)})).await;
    assert_eq!((st, code(&v)), (400, "bad_field"));
    let (st, v) = post(&s, &path("priority"), json!({"priority": "high"})).await;
    assert_eq!((st, code(&v)), (422, "bad_body"));
    for action in ["name", "priority", "pause", "resume", "cancel"] {
        let body = json!({"name": "n", "priority": 1});
        let body = match action {
            "name" => json!({"name": "n"}),
            "priority" => json!({"priority": 1}),
            _ => body,
        };
        let (st, v) = post(&s, &format!("/999/{action}"), body).await;
        assert_eq!((st, code(&v)), (404, "unknown_campaign"), "{action}");
    }
    let (st, v) = get(&s, "/999").await;
    assert_eq!((st, code(&v)), (404, "unknown_campaign"));
    let (st, v) = get(&s, "/first").await;
    assert_eq!((st, code(&v)), (400, "bad_query"));
    // An unknown worker in an admin call is 404 too.
    let (st, c, _) = raw_post(
        &s.url,
        "/api/v1/admin/workers/999/ban",
        Some(ADMIN),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((st, c.as_str()), (404, "unknown_worker"));
    // Without the admin token nothing changes.
    let (st, c, _) = raw_post(
        &s.url,
        &format!("/api/v1/admin/campaigns/{id}/resume"),
        None,
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!((st, c.as_str()), (401, "missing_token"));
}

/// The start position of a perft assignment.
async fn next_start(client: &Client, auth: &c960_common::wire::WorkerAuth) -> Option<u16> {
    match client.fetch(auth, &Capabilities::builtin()).await.unwrap() {
        FetchResponse::Assigned(a) => match a.kind {
            WorkUnitKind::Perft {
                position: PositionSpec::StartPosition(sp),
                ..
            } => Some(sp),
            other => panic!("{other:?}"),
        },
        FetchResponse::NoWork { .. } => None,
    }
}

#[tokio::test]
async fn workers_get_higher_priorities_first_and_nothing_of_a_paused_or_cancelled_campaign() {
    let s = admin_server().await;
    post(&s, "", json!({"depth": 1, "positions": "10", "quorum": 1})).await;
    post(
        &s,
        "",
        json!({"depth": 1, "positions": "20", "quorum": 1, "priority": 3}),
    )
    .await;
    let (_, paused) = post(
        &s,
        "",
        json!({"depth": 1, "positions": "30", "quorum": 1, "priority": 9}),
    )
    .await;
    let paused = paused["id"].as_u64().unwrap();
    post(&s, &format!("/{paused}/pause"), Value::Null).await;
    let client = Client::new(&s.url).unwrap();
    let mut starts = Vec::new();
    for i in 0..4 {
        let auth = client.register(&format!("w{i}"), 1, 0).await.unwrap();
        starts.push(next_start(&client, &auth).await);
    }
    // Quorum 1: one replica each. The high priority first, then the low; the paused never.
    assert_eq!(starts, [Some(20), Some(10), None, None]);
    let (_, v) = post(&s, &format!("/{paused}/resume"), Value::Null).await;
    assert_eq!(v["status"], "active");
    let auth = client.register("late", 1, 0).await.unwrap();
    assert_eq!(next_start(&client, &auth).await, Some(30));

    // A cancelled campaign is never served again.
    let (_, c) = post(&s, "", json!({"depth": 1, "positions": "40", "quorum": 1})).await;
    post(&s, &format!("/{}/cancel", c["id"]), Value::Null).await;
    let auth = client.register("after-cancel", 1, 0).await.unwrap();
    assert_eq!(next_start(&client, &auth).await, None);
}

fn coordinator(args: &[&str], db: &Path) -> Output {
    Command::new(&bins().0)
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

/// Stdout of a command that must succeed.
fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The one stderr line of a command that must fail.
fn refused(o: Output) -> String {
    assert!(
        !o.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

#[test]
fn campaigns_are_managed_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    drop(SqliteStore::open(&db).unwrap());
    let run = |args: &[&str]| coordinator(args, &db);

    let id = ok(run(&[
        "campaign",
        "add",
        "--depth",
        "1",
        "--positions",
        "0-1",
        "--name",
        "a",
    ]));
    assert_eq!(id.trim(), "1");
    let again = run(&["campaign", "add", "--depth", "1", "--positions", "0-1"]);
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("warning: campaign 1 has the same parameters")
    );
    assert_eq!(ok(again).trim(), "2");
    for family in FAMILIES {
        ok(run(&[
            "campaign",
            "add",
            "--depth",
            "1",
            "--family",
            family,
            "--positions",
            "0-1",
        ]));
    }
    ok(run(&[
        "campaign",
        "add",
        "--depth",
        "1",
        "--analyse",
        "--positions",
        "0",
        "--priority",
        "-2",
    ]));
    ok(run(&[
        "campaign",
        "add",
        "--depth",
        "3",
        "--positions",
        "518",
        "--split-ply",
        "1",
    ]));

    let list = ok(run(&["campaign", "list"]));
    assert_eq!(list.lines().count(), 2 + FAMILIES.len() + 2, "{list}");
    assert!(
        list.lines()
            .next()
            .unwrap()
            .starts_with("1\ta\twaiting\tpriority 0\tperft depth 1"),
        "{list}"
    );
    assert!(
        list.contains("analysis/builtin") && list.contains("priority -2"),
        "{list}"
    );

    ok(run(&["campaign", "name", "1", "renamed"]));
    ok(run(&["campaign", "priority", "1", "-5"]));
    ok(run(&["campaign", "pause", "1"]));
    let show = ok(run(&["campaign", "show", "1"]));
    for line in [
        "name         renamed",
        "state        paused",
        "operator     paused",
        "priority     -5",
        "positions    0-1",
    ] {
        assert!(show.contains(line), "{line}: {show}");
    }
    ok(run(&["campaign", "resume", "1"]));
    ok(run(&["campaign", "name", "1"]));
    let show = ok(run(&["campaign", "show", "1"]));
    assert!(
        show.contains("name         -")
            && show.contains("state        waiting")
            && show.contains("operator     active"),
        "{show}"
    );
    ok(run(&["campaign", "cancel", "1"]));
    let store = SqliteStore::open(&db).unwrap();
    assert_eq!(store.campaign(1).unwrap().status.name(), "cancelled");
    drop(store);

    // Refusals: one line on stderr, a non-zero exit.
    assert!(refused(run(&["campaign", "resume", "1"])).contains("cancelled"));
    assert!(refused(run(&["campaign", "pause", "1"])).contains("cancelled"));
    for action in ["show", "pause", "resume", "cancel"] {
        assert!(
            refused(run(&["campaign", action, "99"])).contains("unknown campaign 99"),
            "{action}"
        );
    }
    assert!(refused(run(&["campaign", "priority", "99", "1"])).contains("unknown campaign 99"));
    assert!(refused(run(&["campaign", "name", "99", "x"])).contains("unknown campaign 99"));
    assert!(refused(run(&["campaign", "name", "2", " "])).contains("empty"));
    assert!(
        refused(run(&[
            "campaign",
            "add",
            "--depth",
            "0",
            "--positions",
            "0"
        ]))
        .contains("depth")
    );
    assert!(
        refused(run(&[
            "campaign", "add", "--depth", "1", "--family", "checkers"
        ]))
        .contains("checkers")
    );
    let missing = dir.path().join("missing.db");
    for args in [
        &["campaign", "pause", "1"][..],
        &["campaign", "show", "1"],
        &["campaign", "list"],
    ] {
        assert!(refused(coordinator(args, &missing)).contains("no database"));
    }
    assert!(!missing.exists());
}

#[test]
fn campaign_add_says_what_it_made_and_refuses_what_is_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    drop(SqliteStore::open(&db).unwrap());
    let run = |args: &[&str]| coordinator(args, &db);

    // What was made: the workunits (the store's count), the split ply, nodes and CPU time.
    let made = run(&[
        "campaign",
        "add",
        "--depth",
        "3",
        "--positions",
        "518",
        "--split-ply",
        "1",
    ]);
    let err = String::from_utf8_lossy(&made.stderr).to_string();
    assert_eq!(ok(made).trim(), "1");
    assert!(
        err.contains("20 workunits at split ply 1; about 8,600 nodes, under a second of CPU time for quorum 2"),
        "{err}"
    );
    let made = run(&["campaign", "add", "--depth", "9", "--positions", "0-1"]);
    let err = String::from_utf8_lossy(&made.stderr).to_string();
    assert_eq!(ok(made).trim(), "2");
    // Depth 9 splits at ply 1 by default: sp 0 has 21 root moves, sp 1 has 19.
    assert!(err.contains("40 workunits at split ply 1; about "), "{err}");
    assert!(err.contains("a workunit on one core"), "{err}");
    let made = run(&[
        "campaign",
        "add",
        "--depth",
        "4",
        "--analyse",
        "--positions",
        "0-2",
    ]);
    let err = String::from_utf8_lossy(&made.stderr).to_string();
    ok(made);
    assert!(err.contains("3 workunits at split ply 0\n"), "{err}");

    // Past the bound: one line naming the bound and --force, nothing created.
    let huge = refused(run(&[
        "campaign",
        "add",
        "--depth",
        "20",
        "--positions",
        "0",
    ]));
    assert!(
        huge.contains("no split ply") && huge.contains("--force"),
        "{huge}"
    );
    let many = refused(run(&["campaign", "add", "--depth", "12"]));
    assert!(many.contains("more than 1,000,000 workunits"), "{many}");
    let long = refused(run(&[
        "campaign",
        "add",
        "--depth",
        "12",
        "--positions",
        "0",
        "--split-ply",
        "0",
    ]));
    assert!(long.contains("more than a day"), "{long}");
    for (depth, says) in [("-1", "--depth -1"), ("0", "depth 0")] {
        let err = refused(run(&[
            "campaign",
            "add",
            "--depth",
            depth,
            "--positions",
            "0",
        ]));
        assert!(err.starts_with("error: ") && err.contains(says), "{err}");
    }
    assert_eq!(
        ok(run(&["campaign", "list"])).lines().count(),
        3,
        "refusals create nothing"
    );
    // --force creates it all the same.
    let forced = run(&[
        "campaign",
        "add",
        "--depth",
        "12",
        "--positions",
        "0",
        "--split-ply",
        "0",
        "--force",
    ]);
    let err = String::from_utf8_lossy(&forced.stderr).to_string();
    assert_eq!(ok(forced).trim(), "4");
    assert!(err.contains("1 workunit at split ply 0; about "), "{err}");
}
