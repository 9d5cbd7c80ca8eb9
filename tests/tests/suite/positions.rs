//! The position explorer (issue 56) on a real coordinator on 127.0.0.1 with no campaign run:
//! the published tables shipped in the binary are its source. Headless Chromium renders the
//! page of starts 0, 518, 555 and 959, of shuffle starts 0 and 5039, and the index (no CSP violation, through
//! `pages::browser`); the SVG board's pieces read back from the DOM must be the FEN's, as
//! `data/perft_d9_all960.csv` gives it, and the ranks must be the CSV's. Screenshots at 1280
//! and 390 px go to `docs/screenshots/` with `C960_UPDATE_SCREENSHOTS=1`. The copy buttons are
//! clicked in Chromium driven over the DevTools protocol (`super::devtools`) and the clipboard
//! read back.
//!
//! Without a browser: the JSON's schema (every key, every type), refusals as 4xx with a
//! machine-readable code and never a 5xx, and a campaign's value superseding the shipped one.
//! The index's load time is a measurement (`-- --ignored`), never asserted.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use c960_tests::{TestServer, quick_config};
use serde_json::Value;

use super::devtools::Browser;
use super::pages::{chromium, dom, screenshot_at};

/// start → (Shredder-FEN, perft d9), from the shipped CSV (read here, not through the server).
fn d9_table() -> BTreeMap<u16, (String, u64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/perft_d9_all960.csv");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                (f[1].to_string(), f[2].parse().unwrap()),
            )
        })
        .collect()
}

/// The squares and pieces of a FEN's placement: `a1` → `R`.
fn fen_board(fen: &str) -> BTreeMap<String, String> {
    let mut board = BTreeMap::new();
    let placement = fen.split(' ').next().unwrap();
    for (i, row) in placement.split('/').enumerate() {
        let rank = 8 - i;
        let mut file = 0u8;
        for c in row.chars() {
            if let Some(d) = c.to_digit(10) {
                file += d as u8;
            } else {
                board.insert(format!("{}{rank}", (b'a' + file) as char), c.to_string());
                file += 1;
            }
        }
    }
    board
}

/// An attribute's value in one tag's text.
fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(tag[at..].split('"').next()?.to_string())
}

/// The pieces the rendered SVG board draws: each `<text>` with a `data-piece`.
fn svg_board(html: &str) -> BTreeMap<String, String> {
    let svg = &html[html.find("<svg class=\"board\"").expect("a board")..];
    let svg = &svg[..svg.find("</svg>").unwrap()];
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let tag = &t[..t.find('>').unwrap()];
            Some((attr(tag, "data-square")?, attr(tag, "data-piece")?))
        })
        .collect()
}

fn rank_among(table: &BTreeMap<u16, (String, u64)>, sp: u16) -> usize {
    let mine = table[&sp].1;
    1 + table.values().filter(|(_, n)| *n > mine).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_pages_draw_the_published_tables_in_a_real_browser() {
    let Some(exe) = chromium() else { return };
    let server = TestServer::start(quick_config()).await;
    let profile = tempfile::tempdir().unwrap();
    let table = d9_table();
    for sp in [0u16, 518, 555, 959] {
        let url = format!("{}/positions/chess960/{sp}", server.url);
        let html = dom(&exe, profile.path(), &url).await;
        let (fen, _) = &table[&sp];
        // The FEN the page offers to copy is the shipped one, and the board draws it.
        let field = &html[html.find("id=\"shredder-fen\"").expect("the FEN field")..];
        let field = &field[..field.find('>').unwrap()];
        assert_eq!(attr(field, "value").as_deref(), Some(fen.as_str()), "{sp}");
        let drawn = svg_board(&html);
        assert_eq!(drawn.len(), 32, "{sp}: every piece drawn");
        assert_eq!(drawn, fen_board(fen), "{sp}: the board is the FEN's");
        assert_eq!(html.matches("class=\"sq ").count(), 64, "{sp}");
        // The text alternative names the board and lists every piece.
        assert!(html.contains(&format!("<title id=\"board-title\">Chess960 start {sp}: ")));
        assert!(html.contains("White: rook ") || html.contains("White: bishop "));
        // d9 ranked against the 960 as the CSV ranks it.
        let rank = rank_among(&table, sp);
        let row = &html[html.find("data-depth=\"9\"").expect("a d9 row")..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(
            row.contains(&format!("data-rank=\"{rank}\"")),
            "{sp}: {row}"
        );
        let words = format!(
            "{} of 960",
            c960_coordinator::explorer::ordinal(rank as u16)
        );
        assert!(row.contains(&words), "{sp}: {words}");
        assert!(
            row.contains("data/perft_d9_all960.csv"),
            "{sp}: the source is named"
        );
        assert!(html.contains("id=\"x-fen\""), "{sp}: X-FEN");
        assert!(
            html.contains("data-copy=\"shredder-fen\""),
            "{sp}: a copy button"
        );
    }
    // Shuffle starts, from the shipped shuffle table: the board is its FEN's, d6 its value.
    let shuffle = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/perft_shuffle5040_d1-6.csv"),
    )
    .unwrap();
    for n in [0usize, 5039] {
        let f: Vec<&str> = shuffle.lines().nth(n + 1).unwrap().split(',').collect();
        let url = format!("{}/positions/shuffle/{n}", server.url);
        let html = dom(&exe, profile.path(), &url).await;
        assert_eq!(svg_board(&html), fen_board(f[2]), "shuffle {n}");
        let row = &html[html.find("data-depth=\"6\"").expect("a d6 row")..];
        assert!(
            row.contains(&format!("data-nodes=\"{}\"", f[8])),
            "shuffle {n}"
        );
        assert!(row.contains("data/perft_shuffle5040_d1-6.csv"));
    }
    // The worked example of Scharnagl's numbering.
    let html = dom(
        &exe,
        profile.path(),
        &format!("{}/positions/chess960/555", server.url),
    )
    .await;
    assert!(html.contains("555 = 3 + 4·2 + 16·4 + 96·5"));
    assert!(html.contains("<strong>h1</strong>") && html.contains("<strong>b1, d1</strong>"));
    assert!(
        html.contains("data-mirror=\"497\""),
        "RNKNBQRB mirrors to BRQBNKNR (497)"
    );

    // The index, sorted by d9 (largest first): all 960, the CSV's largest first.
    let html = dom(
        &exe,
        profile.path(),
        &format!("{}/positions?sort=d9", server.url),
    )
    .await;
    assert_eq!(html.matches("<tr data-sp=").count(), 960);
    let top = table.iter().max_by_key(|(_, (_, n))| *n).unwrap().0;
    let first = &html[html.find("<tr data-sp=").unwrap()..];
    assert!(
        first.starts_with(&format!("<tr data-sp=\"{top}\"")),
        "{top}"
    );
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 2);
    assert_eq!(html.matches("<circle").count(), 960);
    // A piece pattern in words: the 60 starts with bishops in the corners.
    let html = dom(
        &exe,
        profile.path(),
        &format!("{}/positions?q=bishops+on+a+and+h", server.url),
    )
    .await;
    assert_eq!(html.matches("<tr data-sp=").count(), 60);
    assert!(html.contains("data-count=\"60\""));
    assert_eq!(html.matches("class=\"pt mark\"").count(), 60);

    let keep = std::env::var_os("C960_UPDATE_SCREENSHOTS").is_some();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    let shots = tempfile::tempdir().unwrap();
    for (name, path, width, height) in [
        ("position-555", "/positions/chess960/555", 1280, 1700),
        ("position-555-390", "/positions/chess960/555", 390, 2800),
        ("positions-index", "/positions?sort=d9", 1280, 1400),
        ("positions-index-390", "/positions?sort=d9", 390, 1600),
    ] {
        let file = shots.path().join(format!("{name}.png"));
        let url = format!("{}{path}", server.url);
        screenshot_at(&exe, profile.path(), &url, &file, width, height).await;
        if keep {
            std::fs::create_dir_all(&docs).unwrap();
            std::fs::copy(&file, docs.join(format!("{name}.png"))).unwrap();
        }
    }
}

/// The copy buttons, clicked as a person clicks them in headless Chromium driven over the
/// DevTools protocol ([`super::devtools`]), under the page's own Content-Security-Policy: each
/// puts its own field's FEN on the clipboard (read back through the page's clipboard API, the
/// permission granted), says "Copied", and no CSP violation is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_buttons_copy_the_fen_under_the_csp_in_a_real_browser() {
    let Some(exe) = chromium() else { return };
    let server = TestServer::start(quick_config()).await;
    let table = d9_table();
    let origin = server.url.clone();
    tokio::task::spawn_blocking(move || {
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser::start(&exe, profile.path(), 1280, 900);
        b.browser(
            "Browser.grantPermissions",
            serde_json::json!({
                "origin": origin,
                "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
            }),
        );
        for (path, field) in [
            ("/positions/chess960/555", "shredder-fen"),
            ("/positions/chess960/518", "x-fen"),
            ("/positions/shuffle/4000", "shredder-fen"),
        ] {
            b.navigate(&format!("{origin}{path}"));
            let value = b
                .eval(&format!("document.getElementById('{field}').value"))
                .unwrap();
            let value = value.as_str().unwrap().to_string();
            if path.ends_with("/555") {
                assert_eq!(value, table[&555].0, "the shipped FEN");
            }
            // Something else on the clipboard first, so a button that copies nothing fails.
            b.eval("navigator.clipboard.writeText('before the click')")
                .unwrap();
            let button = format!("button[data-copy=\"{field}\"]");
            assert_eq!(
                b.eval(&format!("document.querySelector('{button}').textContent")),
                Ok(Value::from("Copy"))
            );
            b.click(&button);
            let said = format!("document.querySelector('{button}').textContent === 'Copied'");
            assert!(
                b.wait_for(&said, Duration::from_secs(5)),
                "{path}: the button never said Copied: {}",
                b.console()
            );
            assert_eq!(
                b.eval("navigator.clipboard.readText()"),
                Ok(Value::from(value.clone())),
                "{path}: the clipboard holds the {field} field"
            );
            assert_eq!(
                b.eval(&format!(
                    "document.querySelector('{button}').classList.contains('done')"
                )),
                Ok(Value::Bool(true))
            );
            let violations = b.csp_violations();
            assert!(violations.is_empty(), "{path}: {violations:#?}");
        }
    })
    .await
    .unwrap();
}

async fn get(url: &str) -> (u16, Value) {
    let resp = reqwest::get(url).await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_has_its_documented_schema_and_refusals_are_4xx_with_a_code() {
    let server = TestServer::start(quick_config()).await;
    let (status, d) = get(&format!("{}/api/v1/positions/chess960/13", server.url)).await;
    assert_eq!(status, 200);
    assert_eq!(
        keys(&d),
        [
            "arrangement",
            "balance",
            "family",
            "mirror",
            "number",
            "of",
            "perft",
            "scharnagl",
            "self_play",
            "shredder_fen",
            "x_fen"
        ]
    );
    assert_eq!(
        (d["family"].as_str(), d["number"].as_u64()),
        (Some("chess960"), Some(13))
    );
    assert_eq!(d["of"], 960);
    assert_eq!(
        keys(&d["scharnagl"]),
        [
            "dark_bishop",
            "knight_pair",
            "knights",
            "light_bishop",
            "queen",
            "squares"
        ]
    );
    assert_eq!(
        keys(&d["scharnagl"]["squares"]),
        [
            "dark_bishop",
            "knights",
            "light_bishop",
            "queen",
            "rook_king_rook"
        ]
    );
    assert_eq!(keys(&d["mirror"]), ["arrangement", "number"]);
    let perft = d["perft"].as_array().unwrap();
    assert_eq!(perft.len(), 9);
    for (i, p) in perft.iter().enumerate() {
        assert_eq!(
            keys(p),
            ["depth", "nodes", "published_differs", "rank", "source"]
        );
        assert_eq!(p["depth"], i + 1);
        assert!(p["nodes"].is_u64(), "a node count is a JSON integer: {p}");
        assert!(p["published_differs"].is_null());
        assert_eq!(keys(&p["source"]), ["file", "kind", "row_url"]);
        let kind = if i < 6 { "reference" } else { "published" };
        assert_eq!(p["source"]["kind"], kind);
    }
    assert_eq!(perft[8]["nodes"].as_u64(), Some(d9_table()[&13].1));
    let balance = d["balance"].as_array().unwrap();
    let tables: Vec<&str> = balance
        .iter()
        .map(|b| b["table"].as_str().unwrap())
        .collect();
    assert_eq!(
        tables,
        ["record", "sf18_d20", "sf19_d16", "sf15_d16", "sf18_d25"]
    );
    for b in balance {
        assert_eq!(
            keys(b),
            [
                "best_move",
                "c960",
                "cp",
                "file",
                "mate",
                "rank",
                "row_url",
                "table"
            ]
        );
        assert!(b["cp"].is_number() && b["rank"].is_u64() && b["c960"].is_boolean());
    }
    let played = d["self_play"].as_array().unwrap();
    assert_eq!(played.len(), 2, "start 13 is in both self-play tables");
    assert_eq!(
        keys(&played[0]),
        [
            "agreeing_results",
            "file",
            "games",
            "row_url",
            "score",
            "score_hi",
            "score_lo",
            "table",
            "wdl"
        ]
    );
    assert_eq!(played[0]["wdl"], serde_json::json!([17, 5, 10]));

    // A shuffle start: the same shape, no Scharnagl digits, perft d1–d6 among the 5040.
    let (status, sh) = get(&format!("{}/api/v1/positions/shuffle/0", server.url)).await;
    assert_eq!(status, 200);
    assert_eq!(keys(&sh), keys(&d));
    assert_eq!(
        (sh["family"].as_str(), sh["of"].as_u64()),
        (Some("shuffle"), Some(5040))
    );
    assert!(sh["scharnagl"].is_null());
    assert_eq!(sh["arrangement"], "BBKNNQRR");
    assert_eq!(sh["perft"].as_array().unwrap().len(), 6);
    assert_eq!(sh["perft"][5]["nodes"], 123_414_611u64);
    assert_eq!(
        sh["perft"][5]["source"]["file"],
        "data/perft_shuffle5040_d1-6.csv"
    );

    // The index: sorted as asked, every row with every column.
    let (status, ix) = get(&format!(
        "{}/api/v1/positions?sort=record&order=asc",
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
        (ix["sort"].as_str(), ix["order"].as_str()),
        (Some("record"), Some("asc"))
    );
    let rows = ix["rows"].as_array().unwrap();
    assert_eq!((rows.len(), ix["count"].as_u64()), (960, Some(960)));
    assert_eq!(
        keys(&rows[0]),
        [
            "arrangement",
            "balance",
            "d9",
            "number",
            "rank",
            "shredder_fen",
            "sorted_perft"
        ]
    );
    assert_eq!(
        keys(&rows[0]["balance"]),
        ["record", "sf15_d16", "sf18_d20", "sf18_d25", "sf19_d16"]
    );
    let record: Vec<f64> = rows
        .iter()
        .map(|r| r["balance"]["record"].as_f64().unwrap())
        .collect();
    assert!(record.windows(2).all(|w| w[0] <= w[1]), "ascending");
    assert_eq!(
        rows[959]["rank"], 1,
        "the last ascending is the best for White"
    );
    let (_, by_fen) = get(&format!(
        "{}/api/v1/positions?q=rnbqkbnr%2Fpppppppp%2F8%2F8%2F8%2F8%2FPPPPPPPP%2FRNBQKBNR+w+KQkq+-+0+1",
        server.url
    ))
    .await;
    assert_eq!(by_fen["rows"][0]["number"], 518);
    assert_eq!(by_fen["count"], 1);

    // Refusals: 4xx with a machine-readable code, never a 5xx.
    for (path, status, code) in [
        ("/api/v1/positions/chess960/960", 404, "not_found"),
        ("/api/v1/positions/chess960/-1", 400, "bad_query"),
        ("/api/v1/positions/chess960/x", 400, "bad_query"),
        (
            "/api/v1/positions/chess960/99999999999999999999",
            400,
            "bad_query",
        ),
        ("/api/v1/positions/shuffle/5040", 404, "not_found"),
        ("/api/v1/positions/bishops/5", 404, "not_found"),
        ("/api/v1/positions/atomic/5", 404, "not_found"),
        ("/api/v1/positions?sort=zz", 400, "bad_query"),
        ("/api/v1/positions?order=up", 400, "bad_query"),
        ("/api/v1/positions?q=dragons", 400, "bad_query"),
        ("/api/v1/positions?q=%FF%FE", 400, "bad_query"),
        ("/api/v1/positions?q=1/2/3", 400, "bad_query"),
    ] {
        let (got, body) = get(&format!("{}{path}", server.url)).await;
        assert_eq!(
            (got, body["code"].as_str()),
            (status, Some(code)),
            "{path}: {body}"
        );
        assert!(body["message"].is_string(), "{path}");
    }
    // The pages refuse with the same statuses, in words.
    for (path, status) in [
        ("/positions/chess960/960", 404),
        ("/positions/chess960/%3Cscript%3E", 400),
        ("/positions?q=dragons", 400),
        ("/positions?sort=%3Cb%3E", 400),
    ] {
        let resp = reqwest::get(format!("{}{path}", server.url)).await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{path}");
        let html = resp.text().await.unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<b>"),
            "{path}: escaped"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_value_supersedes_the_shipped_one_and_the_page_says_so() {
    let server = TestServer::start(quick_config()).await;
    let c = server.campaign(2, "518");
    server.finish_with_honest_workers(c.id, 2).await;
    let (_, d) = get(&format!("{}/api/v1/positions/chess960/518", server.url)).await;
    let d2 = &d["perft"][1];
    assert_eq!(d2["nodes"], 400);
    assert_eq!(d2["source"]["kind"], "campaign", "{d2}");
    assert_eq!(d2["source"]["campaign"], c.id);
    assert!(
        d2["source"]["agreeing_results"].as_u64().unwrap() >= 2,
        "{d2}"
    );
    assert!(d2["source"]["audit"].is_string());
    assert_eq!(
        d["perft"][2]["source"]["kind"], "reference",
        "d3 is still shipped"
    );
    let html = reqwest::get(format!("{}/positions/chess960/518", server.url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let row = &html[html.find("data-depth=\"2\"").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains(&format!("campaign {}", c.id)), "{row}");
}

/// The index page with all 960 rows: wall time per request over 30 requests on a fresh
/// coordinator (a measurement for BENCHMARKS.md, never asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored"]
async fn index_page_load_figures() {
    let server = TestServer::start(quick_config()).await;
    let client = reqwest::Client::new();
    for (name, path) in [
        ("index html, 960 rows", "/positions?sort=d9"),
        ("index json, 960 rows", "/api/v1/positions?sort=d9"),
        ("one start's page", "/positions/chess960/555"),
    ] {
        let url = format!("{}{path}", server.url);
        let mut bytes = 0;
        for _ in 0..3 {
            bytes = client
                .get(&url)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .len();
        }
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..30 {
            let t = Instant::now();
            let body = client
                .get(&url)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            times.push(t.elapsed());
            assert_eq!(body.len(), bytes);
        }
        times.sort();
        eprintln!(
            "{name}: median {:.1} ms, p90 {:.1} ms, min {:.1} ms, {} KiB",
            times[15].as_secs_f64() * 1e3,
            times[27].as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
            bytes / 1024
        );
    }
}
