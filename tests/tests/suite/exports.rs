//! The public exports over a real server: an ETag on a completed table (and 304 for a matching
//! `If-None-Match`), none on a table still filling, and node counts encoded one way in every
//! JSON the coordinator sends (JSON integers with every digit; docs/protocol.md).

use std::time::Duration;

use c960_tests::{TestServer, quick_config};
use serde_json::Value;

async fn get(url: &str, if_none_match: Option<&str>) -> (u16, Option<String>, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(tag) = if_none_match {
        req = req.header("if-none-match", tag);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let etag = resp
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_string());
    (status, etag, resp.text().await.unwrap())
}

/// Every value under a key that names a node count (`nodes`, `*_nodes`, `nodes_*` but the
/// rates `nodes_per_s` and labels) and every count of a divide, with where it is.
fn node_counts<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let count = (k == "nodes" || k.ends_with("_nodes") || k.starts_with("nodes_"))
                    && k != "nodes_per_s"
                    && k != "nodes_label";
                if count {
                    out.push((format!("{path}.{k}"), x));
                }
                if k == "divide" {
                    for (i, pair) in x.as_array().into_iter().flatten().enumerate() {
                        out.push((format!("{path}.divide[{i}]"), &pair[1]));
                    }
                }
                node_counts(x, format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                node_counts(x, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn assert_counts_are_integers(what: &str, text: &str) -> usize {
    let v: Value = serde_json::from_str(text).unwrap();
    let mut counts = Vec::new();
    node_counts(&v, String::new(), &mut counts);
    for (path, x) in &counts {
        assert!(
            x.is_u64() || x.is_null(),
            "{what}{path} is {x}, not a JSON integer"
        );
    }
    counts.iter().filter(|(_, x)| x.is_u64()).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_completed_table_has_an_etag_and_every_json_node_count_is_an_integer() {
    let server = TestServer::start(quick_config()).await;
    let done = server.campaign(2, "0-3");
    server.finish_with_honest_workers(done.id, 2).await;
    server.wait_finished(done.id, Duration::from_secs(60)).await;
    let filling = server.campaign(2, "4-5");
    let table = |id: u64, format: &str| {
        format!("{}/api/v1/campaigns/{id}/table?format={format}", server.url)
    };

    let (status, etag, csv) = get(&table(done.id, "csv"), None).await;
    assert_eq!(status, 200);
    let etag = etag.expect("a completed table has an ETag");
    let (_, json_etag, json) = get(&table(done.id, "json"), None).await;
    assert_ne!(
        json_etag.as_deref(),
        Some(etag.as_str()),
        "one ETag per representation"
    );
    // Revalidation: the same tag is 304 without a body; another tag, or none, the table again.
    let (status, again, body) = get(&table(done.id, "csv"), Some(&etag)).await;
    assert_eq!(
        (status, again.as_deref(), body.as_str()),
        (304, Some(etag.as_str()), "")
    );
    let (status, _, body) = get(&table(done.id, "csv"), Some("\"stale\", W/\"x\"")).await;
    assert_eq!((status, body), (200, csv));
    let (status, _, _) = get(
        &table(done.id, "csv"),
        Some(&format!("\"stale\", W/{etag}")),
    )
    .await;
    assert_eq!(status, 304);
    // A table still filling has no ETag, and If-None-Match does not apply to it.
    let (status, tag, _) = get(&table(filling.id, "csv"), Some("*")).await;
    assert_eq!((status, tag), (200, None));

    // Node counts: JSON integers in the table, the status, the live JSON of the pages.
    assert!(assert_counts_are_integers("table", &json) >= 5);
    let (_, _, status_json) = get(&format!("{}/api/v1/status", server.url), None).await;
    assert!(assert_counts_are_integers("status", &status_json) >= 2);
    let (_, _, live) = get(&format!("{}/api/v1/live", server.url), None).await;
    assert!(assert_counts_are_integers("live", &live) >= 1);
}

/// `export --format replicas`: every value of a perft table counted twice, by two workers
/// whose perft tables had different Zobrist seeds (named in the engine of every result), so a
/// hash collision in one table cannot have passed a quorum (issue 35 item 3).
#[tokio::test]
async fn the_replicas_export_shows_two_seeds_per_value() {
    let s = TestServer::start(quick_config()).await;
    let c = s.campaign(3, "0-4");
    s.finish_with_honest_workers(c.id, 2).await;
    let text = c960_coordinator::export::render(
        &*s.store,
        c.id,
        c960_coordinator::export::Format::Replicas,
    )
    .unwrap()
    .unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(c960_coordinator::export::replicas::HEADER)
    );
    let mut seeds = std::collections::BTreeMap::<String, Vec<String>>::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 15, "{l}");
        assert!(f[6].starts_with("0.2"), "the worker's build: {l}");
        assert!(f[7].starts_with("c960"), "the engine: {l}");
        assert_eq!(f[8].len(), 16, "a seed: {l}");
        assert!(f[12].ends_with('Z'), "a time: {l}");
        assert!(
            f[13].ends_with('Z') && f[13] <= f[12],
            "issued before returned: {l}"
        );
        assert!(f[14].parse::<u64>().is_ok(), "the worker's wall time: {l}");
        if f[9] == "valid" {
            seeds
                .entry(f[0].to_string())
                .or_default()
                .push(f[8].to_string());
        }
    }
    assert_eq!(seeds.len(), 5);
    for (sp, s) in &seeds {
        assert!(s.len() >= 2 && s[0] != s[1], "start {sp}: {s:?}");
    }
}
