//! The web pages in a real browser: a real coordinator on 127.0.0.1 runs small perft, split
//! and analysis campaigns with real workers (one with a hostile name), then headless Chromium
//! loads every page; the rendered DOM (`--dump-dom`, after the live script has polled) must
//! show the store's numbers, and a screenshot of each page is taken (written to
//! `docs/screenshots/` when `C960_UPDATE_SCREENSHOTS=1`).
//!
//! Without Chromium the test says so loudly and passes, except under CI (`CI` set), where a
//! missing browser fails it: `.ci/run` installs Debian's `chromium`. The browser's console must
//! report no Content-Security-Policy violation on any page (the pages run no inline script or
//! style), and the live script must still poll under that policy.
//!
//! Without a browser: every page, asset and API answer carries the security headers, pages
//! hold no inline script or style, and a name stored with a bidirectional override shows inert.

use c960_coordinator::model::{
    Campaign, CampaignAction, CampaignChange, CampaignProgress, ResultOutcome,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use c960_common::wire::AnalysisEngine;
use c960_coordinator::net::api::pages::campaign_state;
use c960_coordinator::net::api::pages::format::grouped;
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::{NewCampaign, parse_positions};
use c960_tests::{TestServer, progress_of, quick_config};

const HOSTILE: &str = "<script>alert(1)</script> & \"co\"";
/// A name that a right-to-left override would show as `evil-exe.png`.
const TURNED: &str = "evil-\u{202E}gnp.exe";

pub(crate) fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join(name))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing under CI: .ci/run must install it (apt-get install chromium)"
        );
        eprintln!(
            "\n\n*** SKIPPED: no chromium on PATH; the web pages were NOT tested in a browser. \
             Install it: apt-get install chromium ***\n"
        );
    }
    found
}

/// Runs headless Chromium with these arguments and returns its stdout. A browser that dies
/// (it can, on a loaded machine) is run once more before the test fails with its stderr. Fails
/// when the page's console reports a Content-Security-Policy violation (blocked inline script
/// or style).
pub(crate) async fn browser(exe: &Path, profile: &Path, args: Vec<String>) -> String {
    let mut last = String::new();
    for _ in 0..2 {
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1280,900",
            // Console messages, CSP violations among them, go to stderr.
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(&args)
        .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .expect("chromium finished within 2 minutes")
            .expect("chromium runs");
        if out.status.success() {
            let console = String::from_utf8_lossy(&out.stderr);
            let violations: Vec<&str> = console
                .lines()
                .filter(|l| l.contains("Content Security Policy"))
                .collect();
            assert!(
                violations.is_empty(),
                "{args:?}: the page broke its Content-Security-Policy:\n{}",
                violations.join("\n")
            );
            return String::from_utf8(out.stdout).expect("utf-8 DOM");
        }
        last = format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    panic!("chromium failed twice: {last}")
}

/// The DOM after the page's script had 6 s (virtual time) to poll the live endpoint.
pub(crate) async fn dom(exe: &Path, profile: &Path, url: &str) -> String {
    browser(
        exe,
        profile,
        vec![
            "--virtual-time-budget=6000".into(),
            "--dump-dom".into(),
            url.into(),
        ],
    )
    .await
}

async fn screenshot(exe: &Path, profile: &Path, url: &str, file: &Path, height: u32) {
    screenshot_at(exe, profile, url, file, 1280, height).await
}

/// A screenshot of `url` in a window `width` × `height`, checked to be a real PNG.
pub(crate) async fn screenshot_at(
    exe: &Path,
    profile: &Path,
    url: &str,
    file: &Path,
    width: u32,
    height: u32,
) {
    browser(
        exe,
        profile,
        vec![
            // The last --window-size wins: a page taller than the default shows all it has.
            format!("--window-size={width},{height}"),
            "--virtual-time-budget=6000".into(),
            format!("--screenshot={}", file.display()),
            url.into(),
        ],
    )
    .await;
    let png = std::fs::read(file).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{file:?} is not a real PNG"
    );
}

/// The value of `name` in the tag that holds `marker`.
fn attribute(html: &str, marker: &str, name: &str) -> String {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} not in the page"));
    let open = html[..at].rfind('<').unwrap();
    let tag = &html[open..open + html[open..].find('>').unwrap()];
    let key = format!(" {name}=\"");
    let start = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    tag[start..start + tag[start..].find('"').unwrap()].to_string()
}

/// The text of the first element after `marker` in `html` (tags stripped, entities kept).
fn text_after(html: &str, marker: &str) -> String {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} not in the page"));
    let rest = &html[at..];
    let start = rest.find('>').expect("tag end") + 1;
    let end = rest[start..].find("</").expect("closing tag") + start;
    let mut out = String::new();
    let mut in_tag = false;
    for c in rest[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}

/// The cells of the table row that starts at `marker` (text of each `<td>`).
fn row_cells(html: &str, marker: &str) -> Vec<String> {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} not in the page"));
    let row = &html[at..at + html[at..].find("</tr>").expect("row end")];
    row.split("<td")
        .skip(1)
        .map(|cell| text_after(&format!("<td{cell}</td>"), "<td"))
        .collect()
}

/// Credit per worker recomputed from the raw results: (valid results, their nodes).
fn credit(store: &dyn Store, campaigns: &[Campaign]) -> BTreeMap<u64, (u64, u128)> {
    let mut out: BTreeMap<u64, (u64, u128)> = BTreeMap::new();
    for c in campaigns {
        let (_, rows) = store.table(c.id).unwrap();
        for r in rows {
            for res in store.results(r.workunit_id).unwrap() {
                if res.outcome == ResultOutcome::Valid {
                    let e = out.entry(res.worker_id).or_default();
                    e.0 += 1;
                    e.1 += u128::from(res.nodes.unwrap_or(0));
                }
            }
        }
    }
    out
}

/// The campaign's name (escaped), priority and state as the page shows them equal the store's.
fn assert_shows_name_priority_and_state(page: &str, p: &CampaignProgress) {
    let c = &p.campaign;
    let id = c.id;
    match &c.name {
        Some(name) => assert_eq!(
            text_after(page, &format!("data-name=\"{id}\"")),
            name.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;"),
            "campaign {id} name"
        ),
        None => assert!(!page.contains(&format!("data-name=\"{id}\""))),
    }
    assert_eq!(
        text_after(page, &format!("data-priority=\"{id}\"")),
        c.priority.to_string(),
        "campaign {id} priority"
    );
    assert_eq!(
        text_after(page, &format!("data-state=\"{id}\"")),
        campaign_state(p),
        "campaign {id} state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_page_shows_the_stores_numbers_in_a_real_browser() {
    let Some(exe) = chromium() else { return };
    let server = TestServer::start(quick_config()).await;
    let store = server.store.clone();
    let spec = |depth, positions: &str| {
        NewCampaign::new(depth, 2, None, parse_positions(positions).unwrap()).unwrap()
    };
    let now = c960_coordinator::clock::now_ms();
    let perft = store.create_campaign(&spec(3, "0-11,518"), now).unwrap();
    let split = store
        .create_campaign(&spec(3, "0-3").split_at(1).unwrap(), now)
        .unwrap();
    let analysis = store
        .create_campaign(
            &spec(2, "0-5,518").analyse(AnalysisEngine::Builtin).unwrap(),
            now,
        )
        .unwrap();

    // Three real workers, one named like an attack on the page.
    let (stop, rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for name in ["alice", HOSTILE, "carol"] {
        let mut cfg = c960_worker::runner::RunnerConfig::new(&server.url);
        cfg.name = name.into();
        cfg.progress = false;
        cfg.backoff_cap = Duration::from_secs(1);
        tasks.push(tokio::spawn(c960_worker::runner::run(cfg, rx.clone())));
    }
    for c in [&perft, &split, &analysis] {
        server.wait_finished(c.id, Duration::from_secs(300)).await;
    }
    stop.send(true).unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    // A deep campaign over all 960 that has not started: its OEIS check is pending. The
    // operator names and prioritises it and pauses it; another one is named and cancelled.
    let pending = store.create_campaign(&spec(5, "0-959"), now).unwrap();
    let cancelled = store.create_campaign(&spec(4, "0-9"), now).unwrap();
    for (id, change) in [
        (
            perft.id,
            CampaignChange::Name(Some("classical & neighbours <depth 3>".into())),
        ),
        (
            pending.id,
            CampaignChange::Name(Some("all 960 at depth 5".into())),
        ),
        (pending.id, CampaignChange::Priority(7)),
        (pending.id, CampaignChange::Status(CampaignAction::Pause)),
        (cancelled.id, CampaignChange::Name(Some("a mistake".into()))),
        (cancelled.id, CampaignChange::Priority(-2)),
        (cancelled.id, CampaignChange::Status(CampaignAction::Cancel)),
    ] {
        store.update_campaign(id, &change).unwrap();
    }
    // A worker stored with a right-to-left override in its name (as registration allowed before
    // labels were checked): the pages show it inert.
    store
        .register_worker(TURNED, &[7; 32], "c960 1", now)
        .unwrap();
    let campaigns = [
        perft.clone(),
        split.clone(),
        analysis.clone(),
        pending.clone(),
        cancelled.clone(),
    ];

    let profile = tempfile::tempdir().unwrap();
    let shots = tempfile::tempdir().unwrap();
    let url = &server.url;

    // The dashboard: every campaign's counters as the store keeps them.
    let page = dom(&exe, profile.path(), &format!("{url}/")).await;
    for p in store.progress().unwrap() {
        let id = p.campaign.id;
        let shown = text_after(&page, &format!("data-live=\"c{id}.valid\""));
        assert_eq!(
            shown,
            format!("{} / {}", grouped(p.valid.into()), grouped(p.total.into()))
        );
        let nodes = text_after(&page, &format!("data-live=\"c{id}.nodes\""));
        assert_eq!(nodes, grouped(p.nodes_valid), "campaign {id} nodes");
        let failed = text_after(&page, &format!("data-live=\"c{id}.failed\""));
        assert_eq!(failed, p.failed.to_string());
        assert_shows_name_priority_and_state(&page, &p);
    }
    let shown_state = |id: u64| text_after(&page, &format!("data-state=\"{id}\""));
    assert_eq!(shown_state(perft.id), "complete");
    assert_eq!(shown_state(pending.id), "paused");
    assert_eq!(shown_state(cancelled.id), "cancelled");
    // Listed as the scheduler serves them: priority 7, then 0 by age, then -2.
    let at = |id: u64| page.find(&format!("data-state=\"{id}\"")).unwrap();
    assert!(at(pending.id) < at(perft.id) && at(perft.id) < at(split.id));
    assert!(at(analysis.id) < at(cancelled.id));
    // The reference check of the depth-3 table: all 13 start positions agree.
    assert_eq!(
        text_after(&page[at(perft.id)..], "data-check=\"reference\""),
        "13 / 13"
    );
    assert!(
        page.contains("OEIS A157851 a(5) = <strong>4,433,048,830</strong>"),
        "{page}"
    );
    // The live script ran in the browser (a file of its own: the policy runs no inline
    // script) and polled /api/v1/live; each bar shows its campaign's share done.
    assert!(
        text_after(&page, "id=\"live-note\"").starts_with("live · updated"),
        "the live script did not poll: {}",
        text_after(&page, "id=\"live-note\"")
    );
    for p in store.progress().unwrap() {
        let value = attribute(
            &page,
            &format!("data-bar=\"c{}.bar\"", p.campaign.id),
            "value",
        );
        let done = 100.0 * (p.valid + p.failed) as f64 / p.total as f64;
        assert!(
            (value.parse::<f64>().unwrap() - done).abs() < 0.1,
            "campaign {}: bar {value}, done {done}",
            p.campaign.id
        );
    }
    // The hostile name is escaped text, never markup.
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; \"co\""));
    assert!(!page.contains("<script>alert(1)"));

    // The perft table: each row's nodes and agreeing workers.
    let page = dom(
        &exe,
        profile.path(),
        &format!("{url}/campaigns/{}", perft.id),
    )
    .await;
    assert_shows_name_priority_and_state(&page, &progress_of(&*store, perft.id));
    let (_, rows) = store.table(perft.id).unwrap();
    assert_eq!(rows.len(), 13);
    for r in &rows {
        let sp = r.sp.unwrap();
        let cells = row_cells(&page, &format!("data-sp=\"{sp}\""));
        assert_eq!(cells[0], sp.to_string());
        assert_eq!(cells[1], r.fen);
        assert_eq!(cells[2], "valid");
        assert_eq!(
            cells[3],
            format!("{} / {}", r.returned, perft.quorum),
            "sp {sp}"
        );
        assert!(r.returned >= perft.quorum, "sp {sp}: {}", r.returned);
        assert_eq!(cells[4], grouped(r.nodes.unwrap().into()), "sp {sp}");
        assert_eq!(cells[5], r.agreeing_results.to_string());
        assert_eq!(cells[6], "✓ agrees");
    }
    assert!(page.contains(&format!("/api/v1/campaigns/{}/table?format=csv", perft.id)));

    // The paused campaign's page says so, with its name and priority.
    let page = dom(
        &exe,
        profile.path(),
        &format!("{url}/campaigns/{}", pending.id),
    )
    .await;
    assert_shows_name_priority_and_state(&page, &progress_of(&*store, pending.id));
    assert_eq!(
        text_after(&page, &format!("data-state=\"{}\"", pending.id)),
        "paused"
    );

    // The split table: per start position the assembled total and its ply-1 divide.
    let page = dom(
        &exe,
        profile.path(),
        &format!("{url}/campaigns/{}", split.id),
    )
    .await;
    let (_, rows) = c960_coordinator::export::split_table(&*store, split.id).unwrap();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let cells = row_cells(&page, &format!("data-sp=\"{}\"", r.sp));
        assert_eq!(cells[1], "valid");
        assert_eq!(cells[4], grouped(r.nodes.unwrap()), "sp {}", r.sp);
        assert!(cells[5].starts_with(&format!("{} moves", r.divide.len())));
    }

    // The analysis table: scores and best moves, and the balance chart.
    let page = dom(
        &exe,
        profile.path(),
        &format!("{url}/campaigns/{}", analysis.id),
    )
    .await;
    let (_, rows) = store.analysis_table(analysis.id).unwrap();
    for r in &rows {
        let a = r.result.as_ref().unwrap();
        let cells = row_cells(&page, &format!("data-sp=\"{}\"", r.sp.unwrap()));
        let score = match (a.mate, a.score_cp) {
            (Some(m), _) => format!("mate {m}"),
            (None, Some(cp)) => format!("{cp:+}"),
            _ => "?".into(),
        };
        assert_eq!(cells[3], score);
        assert_eq!(cells[4], a.best_move.clone().unwrap_or_default());
    }
    assert!(page.contains(&format!(
        "/api/v1/campaigns/{}/balance?format=svg",
        analysis.id
    )));
    // Its agreement with the published table, each coefficient recomputed here without the
    // bootstrap: the first figure of each cell, over the same starts.
    let scores = c960_coordinator::export::position_scores(&rows);
    let plain = c960_common::balance::correlate(
        &scores,
        c960_coordinator::work::known::published_balance(),
    );
    assert_eq!(plain.n, rows.len());
    assert!(page.contains(&format!("over the {} starts both score", plain.n)));
    for (stat, value) in [("pearson", plain.pearson), ("spearman", plain.spearman)] {
        let cells = row_cells(&page, &format!("data-stat=\"{stat}\""));
        let shown = value.map_or("—".to_string(), |v| format!("{v:.3}"));
        assert!(
            cells[1].starts_with(&shown),
            "{stat}: {:?} vs {shown}",
            cells[1]
        );
    }

    // The leaderboard: credit recomputed from the raw results.
    let page = dom(&exe, profile.path(), &format!("{url}/workers")).await;
    let credit = credit(&*store, &campaigns);
    assert_eq!(credit.len(), 3, "every worker validated something");
    for (id, (results, nodes)) in &credit {
        let cells = row_cells(&page, &format!("data-worker=\"{id}\""));
        assert_eq!(cells[2], grouped(*nodes), "worker {id} credit");
        assert_eq!(
            cells[3],
            grouped(u128::from(*results)),
            "worker {id} results"
        );
        assert_eq!(cells[6], "0", "no strikes");
        assert_eq!(cells[7], "active");
    }
    assert!(!page.contains("<script>alert(1)"));
    assert!(page.contains("evil-[U+202E]gnp.exe") && !page.contains('\u{202E}'));

    // One worker's page: its standing and history, its hostile name escaped.
    let hostile_id = *credit
        .keys()
        .find(|id| store.worker(**id).unwrap().unwrap().name == HOSTILE)
        .unwrap();
    let page = dom(&exe, profile.path(), &format!("{url}/workers/{hostile_id}")).await;
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains("<script>alert(1)"));
    assert_eq!(
        text_after(&page, "data-live=\"w.credit\""),
        grouped(credit[&hostile_id].1)
    );

    // An unknown campaign is a 404 page, not an error text.
    let missing = reqwest::get(format!("{url}/campaigns/999")).await.unwrap();
    assert_eq!(missing.status(), 404);
    assert!(
        missing
            .text()
            .await
            .unwrap()
            .contains("There is no campaign 999")
    );

    // Screenshots of every page (the analysis page taller: its agreement table is below the
    // chart).
    let pages = [
        ("dashboard", "/".to_string(), 900),
        ("campaign-perft", format!("/campaigns/{}", perft.id), 900),
        ("campaign-split", format!("/campaigns/{}", split.id), 900),
        (
            "campaign-analysis",
            format!("/campaigns/{}", analysis.id),
            1400,
        ),
        ("workers", "/workers".to_string(), 900),
        ("worker", format!("/workers/{hostile_id}"), 900),
    ];
    let keep = std::env::var_os("C960_UPDATE_SCREENSHOTS").is_some();
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
    for (name, path, height) in pages {
        let file = shots.path().join(format!("{name}.png"));
        screenshot(&exe, profile.path(), &format!("{url}{path}"), &file, height).await;
        if keep {
            std::fs::create_dir_all(&docs).unwrap();
            std::fs::copy(&file, docs.join(format!("{name}.png"))).unwrap();
        }
    }
}

/// The security headers of every answer, and what they require of the pages: no inline script
/// or style. Needs no browser.
#[tokio::test]
async fn every_answer_carries_the_security_headers_and_pages_hold_nothing_inline() {
    let server = TestServer::start(quick_config()).await;
    let store = server.store.clone();
    let now = c960_coordinator::clock::now_ms();
    let c = store
        .create_campaign(
            &NewCampaign::new(2, 2, None, parse_positions("0-3").unwrap()).unwrap(),
            now,
        )
        .unwrap();
    let turned = store
        .register_worker(TURNED, &[9; 32], "c960 \u{2066}1", now)
        .unwrap();
    let url = &server.url;
    let pages = [
        "/".to_string(),
        format!("/campaigns/{}", c.id),
        "/workers".into(),
        format!("/workers/{turned}"),
        "/campaigns/999".into(),
        "/positions?sort=d9".into(),
        "/positions/chess960/555".into(),
        "/positions/shuffle/7".into(),
    ];
    let others = [
        "/assets/live.js",
        "/assets/style.css",
        "/api/v1/live",
        "/api/v1/positions/chess960/555",
        "/api/v1/status",
        "/healthz",
        "/no-such-thing",
    ];
    for path in pages.iter().map(String::as_str).chain(others) {
        let resp = reqwest::get(format!("{url}{path}")).await.unwrap();
        let h = resp.headers();
        let csp = h
            .get("content-security-policy")
            .unwrap_or_else(|| panic!("{path}: no Content-Security-Policy"))
            .to_str()
            .unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        if !pages.iter().any(|p| p == path) {
            continue;
        }
        let html = resp.text().await.unwrap();
        // Every script is a file (`src`), no element has a style attribute, no handler.
        for (at, _) in html.match_indices("<script") {
            let tag = &html[at..at + html[at..].find('>').unwrap()];
            assert!(
                tag.contains(" src=\"/assets/"),
                "{path}: inline script {tag}"
            );
        }
        assert!(!html.contains(" style="), "{path}: an inline style");
        assert!(!html.contains("<style"), "{path}: a style element");
        assert!(
            !html.contains(" onload=") && !html.contains(" onclick="),
            "{path}"
        );
        // The override and the isolate stored before the rule show as code points.
        assert!(
            !html.contains('\u{202E}') && !html.contains('\u{2066}'),
            "{path}: a bidirectional control reached the page"
        );
        if path.starts_with("/workers") {
            assert!(html.contains("evil-[U+202E]gnp.exe"), "{path}");
        }
    }
    // The worker's own page shows its engine inert too.
    let page = reqwest::get(format!("{url}/workers/{turned}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("c960 [U+2066]1"), "{page}");
}
