//! The shuffle family's index (issue 56): `/positions?family=shuffle` and its JSON on a fresh
//! coordinator, checked against `data/perft_shuffle5040_d1-6.csv` read here. Headless Chromium
//! renders it (no CSP violation, through `pages::browser`): 504 rows a page, ten pages, sorted
//! and searched on the server as the Chess960 index is; screenshots at 1280 and 390 px go to
//! `docs/screenshots/` with `C960_UPDATE_SCREENSHOTS=1`. Without a browser: the JSON's schema
//! and order, and refusals as 4xx with a machine-readable code.

use std::path::Path;

use c960_tests::{TestServer, quick_config};
use serde_json::Value;

use super::pages::{chromium, dom, screenshot_at};

/// The shipped table: (number, arrangement, FEN, perft d1–d6) by number.
fn shuffle_table() -> Vec<(u64, String, String, [u64; 6])> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/perft_shuffle5040_d1-6.csv");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let perft = std::array::from_fn(|d| f[3 + d].parse().unwrap());
            (f[0].parse().unwrap(), f[1].into(), f[2].into(), perft)
        })
        .collect()
}

/// The starts in the order of d6, largest first, ties by number.
fn by_d6() -> Vec<u64> {
    let mut t = shuffle_table();
    t.sort_by(|a, b| b.3[5].cmp(&a.3[5]).then(a.0.cmp(&b.0)));
    t.into_iter().map(|r| r.0).collect()
}

/// The `data-n` of each row of a rendered index, in order.
fn row_numbers(html: &str) -> Vec<u64> {
    html.split("<tr data-n=\"")
        .skip(1)
        .map(|r| r[..r.find('"').unwrap()].parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shuffle_index_draws_the_shipped_table_in_a_real_browser() {
    let Some(exe) = chromium() else { return };
    let server = TestServer::start(quick_config()).await;
    let profile = tempfile::tempdir().unwrap();
    let table = shuffle_table();
    let load = |path: &str| {
        let url = format!("{}{path}", server.url);
        let (exe, profile) = (exe.clone(), profile.path().to_path_buf());
        async move { dom(&exe, &profile, &url).await }
    };

    // By number: the first 504 of the 5040, ten pages, every cell the CSV's.
    let html = load("/positions?family=shuffle").await;
    assert_eq!(row_numbers(&html), (0..504).collect::<Vec<_>>());
    assert!(html.contains("data-count=\"5040\""));
    assert!(html.contains("page 1 of 10"));
    assert_eq!(
        html.matches("<nav class=\"pager\"").count(),
        2,
        "above and below"
    );
    assert!(html.contains(
        "href=\"/positions?family=shuffle&amp;sort=sp&amp;order=asc&amp;q=&amp;page=10\""
    ));
    for n in [0usize, 1, 503] {
        let row = &html[html.find(&format!("<tr data-n=\"{n}\"")).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(&format!(">{}<", table[n].1)), "{n}: {row}");
        assert!(row.contains(&format!("href=\"/positions/shuffle/{n}\"")));
        for (d, value) in table[n].3.iter().enumerate() {
            let cell = format!("data-depth=\"{}\">{}<", d + 1, grouped(*value));
            assert!(row.contains(&cell), "{n}: {cell} in {row}");
        }
    }
    assert_eq!(
        html.matches("<svg class=\"chart\"").count(),
        1,
        "a histogram"
    );
    assert_eq!(html.matches("<circle").count(), 0, "no scatter: no balance");

    // By d6, largest first: the CSV's order, page after page; rank 1 first.
    let order = by_d6();
    let html = load("/positions?family=shuffle&sort=d6").await;
    assert_eq!(row_numbers(&html), order[..504]);
    assert!(html.contains("<td class=\"num\">1</td>"));
    // The sorted depth is the column a narrow screen keeps.
    assert!(html.contains("<th class=\"num depth-col key\"><a href=\"/positions?family=shuffle&amp;sort=d6&amp;order=asc"));
    assert_eq!(
        html.matches("class=\"num depth-col key\" data-depth=\"6\"")
            .count(),
        504
    );
    let html = load("/positions?family=shuffle&sort=d6&page=10").await;
    assert_eq!(row_numbers(&html), order[4536..]);
    assert!(html.contains("page 10 of 10"));
    let html = load("/positions?family=shuffle&sort=d6&order=asc&page=2").await;
    let mut up = order.clone();
    up.reverse();
    // Ascending reverses the values; ties still go by number.
    let d6 = |n: u64| table[n as usize].3[5];
    let got = row_numbers(&html);
    assert_eq!(got.len(), 504);
    assert!(
        got.windows(2)
            .all(|w| d6(w[0]) < d6(w[1]) || d6(w[0]) == d6(w[1]) && w[0] < w[1])
    );
    assert_eq!(d6(got[0]), d6(up[504]));

    // Searches: words, a FEN, a number.
    let html = load("/positions?family=shuffle&q=bishops+on+a+and+h").await;
    assert_eq!(row_numbers(&html).len(), 180);
    assert!(html.contains("data-count=\"180\"") && !html.contains("class=\"pager\""));
    let fen = table[4000].2.replace(' ', "+").replace('/', "%2F");
    let html = load(&format!("/positions?family=shuffle&q={fen}")).await;
    assert_eq!(row_numbers(&html), [4000]);
    let html = load("/positions?family=shuffle&q=5039&sort=d3").await;
    assert_eq!(row_numbers(&html), [5039]);

    // The two indexes link each other.
    let html = load("/positions").await;
    assert!(html.contains("href=\"/positions?family=shuffle\""));

    let keep = std::env::var_os("C960_UPDATE_SCREENSHOTS").is_some();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    let shots = tempfile::tempdir().unwrap();
    for (name, width, height) in [
        ("positions-shuffle", 1280, 1400),
        ("positions-shuffle-390", 390, 1600),
    ] {
        let file = shots.path().join(format!("{name}.png"));
        let url = format!("{}/positions?family=shuffle&sort=d6", server.url);
        screenshot_at(&exe, profile.path(), &url, &file, width, height).await;
        if keep {
            std::fs::create_dir_all(&docs).unwrap();
            std::fs::copy(&file, docs.join(format!("{name}.png"))).unwrap();
        }
    }
}

fn grouped(n: u64) -> String {
    c960_coordinator::net::api::pages::format::grouped(n.into())
}

async fn get(url: &str) -> (u16, Value) {
    let resp = reqwest::get(url).await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shuffle_index_json_has_its_schema_and_refusals_are_4xx_with_a_code() {
    let server = TestServer::start(quick_config()).await;
    let table = shuffle_table();
    let (status, ix) = get(&format!(
        "{}/api/v1/positions?family=shuffle&sort=d6&page=2",
        server.url
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        keys(&ix),
        [
            "count", "family", "order", "page", "pages", "per_page", "q", "rows", "sort"
        ]
    );
    assert_eq!(
        (&ix["family"], &ix["sort"], &ix["order"]),
        (
            &Value::from("shuffle"),
            &Value::from("d6"),
            &Value::from("desc")
        )
    );
    assert_eq!(
        (&ix["count"], &ix["page"], &ix["pages"], &ix["per_page"]),
        (
            &Value::from(5040),
            &Value::from(2),
            &Value::from(10),
            &Value::from(504)
        )
    );
    let rows = ix["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 504);
    assert_eq!(
        keys(&rows[0]),
        ["arrangement", "number", "perft", "rank", "shredder_fen"]
    );
    let order = by_d6();
    for (i, r) in rows.iter().enumerate() {
        let n = r["number"].as_u64().unwrap();
        assert_eq!(n, order[504 + i]);
        let (_, arr, fen, perft) = &table[n as usize];
        assert_eq!(
            (r["arrangement"].as_str(), r["shredder_fen"].as_str()),
            (Some(arr.as_str()), Some(fen.as_str()))
        );
        assert_eq!(
            r["perft"],
            serde_json::json!(perft),
            "every count a JSON integer"
        );
    }
    assert!(
        rows[0]["rank"].as_u64().unwrap() >= 400,
        "ranked among all 5040"
    );

    // The Chess960 index says its paging too: one page of 960.
    let (_, c) = get(&format!("{}/api/v1/positions", server.url)).await;
    assert_eq!(
        (&c["page"], &c["pages"], &c["per_page"]),
        (&Value::from(1), &Value::from(1), &Value::from(960))
    );

    for (path, status, code) in [
        ("?family=shuffle&sort=record", 400, "bad_query"),
        ("?family=shuffle&sort=d7", 400, "bad_query"),
        ("?family=shuffle&q=5040", 400, "bad_query"),
        ("?family=shuffle&q=dragons", 400, "bad_query"),
        ("?family=shuffle&page=0", 400, "bad_query"),
        ("?family=shuffle&page=x", 400, "bad_query"),
        ("?family=shuffle&page=11", 404, "not_found"),
        ("?family=shuffle&q=7&page=2", 404, "not_found"),
        ("?family=atomic", 400, "bad_query"),
        ("?family=%3Cb%3E", 400, "bad_query"),
        ("?page=2", 404, "not_found"),
    ] {
        let (got, body) = get(&format!("{}/api/v1/positions{path}", server.url)).await;
        assert_eq!(
            (got, body["code"].as_str()),
            (status, Some(code)),
            "{path}: {body}"
        );
    }
    // The page refuses with the same statuses, in words, over its family's first page.
    for (path, status, family_shown) in [
        ("?family=shuffle&sort=record", 400, true),
        ("?family=shuffle&page=11", 404, true),
        ("?family=%3Cb%3E", 400, false),
    ] {
        let resp = reqwest::get(format!("{}/positions{path}", server.url))
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), status, "{path}");
        let html = resp.text().await.unwrap();
        assert!(html.contains("role=\"alert\""), "{path}");
        assert!(!html.contains("<b>"), "{path}: escaped");
        assert_eq!(
            html.contains("The 5040 shuffle starts"),
            family_shown,
            "{path}"
        );
    }
}
