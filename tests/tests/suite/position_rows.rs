//! The explorer's links to the rows behind its values (issue 56): every perft, balance and
//! self-play value of a start's page and JSON names a `row_url`, which a plain GET on a fresh
//! coordinator answers with 200, CSV, the table's header and that start's row, holding the
//! value the page shows. A campaign's value links to its row of the campaign's CSV export.
//! Refusals are 4xx with a machine-readable code.

use std::collections::BTreeMap;

use c960_tests::{TestServer, quick_config};
use serde_json::Value;

/// GETs a row link: 200, CSV, the header and one row of `start`, as column → cell.
async fn row(server: &str, url: &str, start: u64) -> BTreeMap<String, String> {
    let resp = reqwest::get(format!("{server}{url}")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200, "{url}");
    let kind = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("text/csv"), "{url}: {kind}");
    let text = resp.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{url}: the header and one row: {text}");
    let row: BTreeMap<String, String> = lines[0]
        .split(',')
        .map(str::to_string)
        .zip(lines[1].split(',').map(str::to_string))
        .collect();
    let first = lines[0].split(',').next().unwrap();
    assert_eq!(row[first], start.to_string(), "{url}: the start's row");
    row
}

async fn json(url: &str) -> Value {
    serde_json::from_str(&page(url).await).unwrap()
}

async fn page(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

/// The `href`s of the page's row links (`<a class="row-link" href=…>`), unescaped.
fn row_links(html: &str) -> Vec<String> {
    html.split("<a class=\"row-link\" href=\"")
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
        .collect()
}

fn cell(row: &BTreeMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column}: {row:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_value_links_to_its_row_and_the_row_holds_the_value() {
    let server = TestServer::start(quick_config()).await;
    let base = server.url.clone();
    for sp in [0u64, 13, 555, 959] {
        let d = json(&format!("{base}/api/v1/positions/chess960/{sp}")).await;
        let mut urls = Vec::new();
        for p in d["perft"].as_array().unwrap() {
            let url = p["source"]["row_url"].as_str().unwrap();
            let r = row(&base, url, sp).await;
            let column = format!("d{}", p["depth"]);
            assert_eq!(r[&column], p["nodes"].to_string(), "{sp} {column}");
            urls.push(url.to_string());
        }
        for b in d["balance"].as_array().unwrap() {
            let url = b["row_url"].as_str().unwrap();
            let r = row(&base, url, sp).await;
            let cp = b["cp"].as_f64().unwrap();
            let shown = match b["table"].as_str().unwrap() {
                "record" => cell(&r, "estimate_cp"),
                "sf18_d25" => 100.0 * cell(&r, "eval_pawns"),
                _ if !b["mate"].is_null() => cp,
                _ => cell(&r, "score_cp"),
            };
            assert!((shown - cp).abs() < 1e-9, "{sp} {b}: {r:?}");
            urls.push(url.to_string());
        }
        for s in d["self_play"].as_array().unwrap() {
            let url = s["row_url"].as_str().unwrap();
            let r = row(&base, url, sp).await;
            assert_eq!(cell(&r, "score"), s["score"].as_f64().unwrap(), "{sp}");
            assert_eq!(cell(&r, "games"), s["games"].as_f64().unwrap(), "{sp}");
            urls.push(url.to_string());
        }
        assert_eq!(urls.len(), 9 + 5 + d["self_play"].as_array().unwrap().len());
        // The page links the same rows, each where it shows the value.
        let html = page(&format!("{base}/positions/chess960/{sp}")).await;
        assert_eq!(row_links(&html), urls, "{sp}");
        let d9 = &html[html.find("data-depth=\"9\"").unwrap()..];
        let d9 = &d9[..d9.find("</tr>").unwrap()];
        assert!(d9.contains(&format!(
            "href=\"/api/v1/positions/tables/perft_d9_all960.csv?start={sp}\""
        )));
    }
    // A shuffle start's perft links to its row of the shuffle table.
    let d = json(&format!("{base}/api/v1/positions/shuffle/4000")).await;
    for p in d["perft"].as_array().unwrap() {
        let r = row(&base, p["source"]["row_url"].as_str().unwrap(), 4000).await;
        assert_eq!(r[&format!("d{}", p["depth"])], p["nodes"].to_string());
        assert_eq!(r["arrangement"], d["arrangement"].as_str().unwrap());
    }
    // The list of the shipped tables, and each whole table as shipped.
    let list = json(&format!("{base}/api/v1/positions/tables")).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 12);
    let d9 = list
        .iter()
        .find(|t| t["name"] == "perft_d9_all960.csv")
        .unwrap();
    assert_eq!(
        (d9["file"].as_str(), d9["rows"].as_u64()),
        (Some("data/perft_d9_all960.csv"), Some(960))
    );
    let whole = page(&format!("{base}{}", d9["url"].as_str().unwrap())).await;
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/perft_d9_all960.csv"),
    )
    .unwrap();
    assert_eq!(whole, shipped, "served byte for byte");

    for (path, status, code) in [
        ("/api/v1/positions/tables/nope.csv", 404, "not_found"),
        ("/api/v1/positions/tables/..%2FCargo.toml", 404, "not_found"),
        (
            "/api/v1/positions/tables/perft_d9_all960.csv?start=x",
            400,
            "bad_query",
        ),
        (
            "/api/v1/positions/tables/perft_d9_all960.csv?start=960",
            404,
            "not_found",
        ),
        (
            "/api/v1/positions/tables/selfplay_sf15_n1000.csv?start=0",
            404,
            "not_found",
        ),
        (
            "/api/v1/positions/tables/perft_d9_all960.csv?start=%FF",
            400,
            "bad_query",
        ),
    ] {
        let resp = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{path}");
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], code, "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_value_links_to_its_row_of_the_campaign_export() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "518");
    server.finish_with_honest_workers(c.id, 2).await;
    let base = server.url.clone();
    let d = json(&format!("{base}/api/v1/positions/chess960/518")).await;
    let source = &d["perft"][1]["source"];
    assert_eq!(source["kind"], "campaign", "{source}");
    let url = source["row_url"].as_str().unwrap();
    assert_eq!(
        url,
        format!("/api/v1/campaigns/{}/table?format=csv&start=518", c.id)
    );
    let r = row(&base, url, 518).await;
    assert_eq!((r["depth"].as_str(), r["nodes"].as_str()), ("2", "400"));
    assert_eq!(r["status"], "valid");
    let html = page(&format!("{base}/positions/chess960/518")).await;
    assert!(row_links(&html).contains(&url.to_string()));
    for (query, status, code) in [
        ("format=csv&start=517", 404, "not_found"),
        ("format=csv&start=x", 400, "bad_query"),
        ("format=json&start=518", 400, "bad_query"),
    ] {
        let resp = reqwest::get(format!("{base}/api/v1/campaigns/{}/table?{query}", c.id))
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), status, "{query}");
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["code"], code, "{query}: {body}");
    }
}
