//! Text from workers is data, never markup or formulas (issue 31 item 4), one test per class of
//! character, against a real `serve` process: workers with hostile names submit UCI analysis
//! results with hostile engine ids (a quorum of two validates each), and every export and page
//! is read back. Formula leaders (`= + - @`) and markup (`< > & "`) are printable, so they are
//! accepted and neutralised where they land: a CSV cell that a spreadsheet would evaluate gets
//! a `'` prefix (OWASP's advice), JSON is the encoder's, pages escape. Tab and CR (formula
//! leaders too), bidirectional overrides, control and invisible characters are refused at the
//! door: 400 `bad_label` at registration and on the engine label of a submission, 422
//! `invalid_result` for an engine id, nothing stored.

use c960_common::error_code::ErrorCode;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use c960_common::digest::result_digest;
use c960_common::search::{self, SearchLimits};
use c960_common::startpos::StartPosition;
use c960_common::wire::{
    Assignment, Capabilities, EngineInfo, FetchResponse, PROTOCOL_VERSION, PositionSpec,
    SubmitRequest, WorkResult, WorkerAuth,
};
use c960_tests::{ServeProcess, bins};
use c960_worker::client::Client;

/// A `serve` process with open enrolment and a UCI analysis campaign (depth 2, quorum 2) over
/// `starts` start positions, its database beside it.
struct Coordinator {
    serve: ServeProcess,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Coordinator {
    fn start(starts: &str) -> Coordinator {
        c960_worker::client::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c960.sqlite");
        let serve = ServeProcess::start(
            &db,
            &[
                "--open-enrolment",
                "--registrations-per-hour",
                "0",
                "--export-rate-per-address",
                "0",
                // Each pair validates the next workunit in order: replicas are otherwise drawn
                // at random, and a value of a bare quorum gets a hidden audit replica (issue
                // 30). The test is about the text, not the draw or the audits.
                "--draw-pool",
                "0",
                "--audit-rate",
                "0",
            ],
            Stdio::null(),
        );
        let c = Coordinator {
            serve,
            db,
            _dir: dir,
        };
        c.cli(&[
            "campaign",
            "add",
            "--analyse",
            "--engine",
            "uci",
            "--depth",
            "2",
            "--positions",
            starts,
        ]);
        c
    }

    /// `c960-coordinator ARGS… --db DB`, which must succeed; its stdout.
    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new(&bins().0)
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A worker named `name`, or the refusal's code.
    async fn register(&self, name: &str) -> Result<(Client, WorkerAuth), String> {
        let client = Client::new(&self.serve.url).unwrap();
        match client.register(name, 1, 0).await {
            Ok(auth) => Ok((client, auth)),
            Err(e) => Err(e.code().map_or("none", ErrorCode::as_str).to_string()),
        }
    }

    /// Two workers named `names` each lease a replica of the next workunit and answer it with
    /// the built-in search's result under `engine_id` (and the engine label `label`): the
    /// refusal's code, or the workunit they validated.
    async fn validate(
        &self,
        names: [&str; 2],
        engine_id: &str,
        label: &str,
    ) -> Result<u64, String> {
        let mut workunit = None;
        for name in names {
            let (client, auth) = self.register(name).await?;
            let caps = Capabilities {
                uci_analysis: true,
                ..Capabilities::builtin()
            };
            let FetchResponse::Assigned(a) = client.fetch(&auth, &caps).await.unwrap() else {
                panic!("no work for {name:?}");
            };
            if let Some(w) = workunit {
                assert_eq!(a.workunit_id, w, "the pair got two workunits");
            }
            workunit = Some(a.workunit_id);
            if let Err(e) = submit(&client, &auth, &a, engine_id, label).await {
                // A refused label leaves the lease open: give it back for the next pair.
                let _ = client.abandon(&auth, a.lease_id).await;
                return Err(e.code().map_or("none", ErrorCode::as_str).to_string());
            }
        }
        Ok(workunit.unwrap())
    }

    /// `GET PATH`: status, content type, `X-Content-Type-Options` and body.
    async fn get(&self, path: &str) -> (u16, String, String, String) {
        let resp = reqwest::get(format!("{}{path}", self.serve.url))
            .await
            .unwrap();
        let header = |h: &str| {
            resp.headers()
                .get(h)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let (status, kind, nosniff) = (
            resp.status().as_u16(),
            header("content-type"),
            header("x-content-type-options"),
        );
        (status, kind, nosniff, resp.text().await.unwrap())
    }

    /// Every export and page that shows what workers sent, as (what, body): the CSV tables
    /// over HTTP and from `export`, the per-depth CSV, the JSON table and `/api/v1/status`
    /// (checked to be JSON, served as JSON with `nosniff`), and the pages.
    async fn everything(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for path in [
            "/api/v1/campaigns/1/table?format=csv",
            "/api/v1/campaigns/1/table?format=depths",
            "/api/v1/campaigns/1/table?format=json",
            "/api/v1/status",
            "/",
            "/campaigns/1",
            "/workers",
        ] {
            let (status, kind, nosniff, body) = self.get(path).await;
            assert_eq!(status, 200, "{path}: {body}");
            assert_eq!(nosniff, "nosniff", "{path}");
            if kind.starts_with("application/json") {
                serde_json::from_str::<serde_json::Value>(&body)
                    .unwrap_or_else(|e| panic!("{path} is not JSON: {e}"));
            }
            out.push((path.to_string(), body));
        }
        for id in self.worker_ids() {
            let path = format!("/workers/{id}");
            out.push((path.clone(), self.get(&path).await.3));
        }
        out.push((
            "export --format csv".into(),
            self.cli(&["export", "--campaign", "1", "--format", "csv"]),
        ));
        out
    }

    /// The registered workers' ids (from `worker list`).
    fn worker_ids(&self) -> Vec<u64> {
        self.cli(&["worker", "list"])
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect()
    }
}

/// The built-in search's analysis of `a`'s start at depth 2, submitted under `engine_id`.
async fn submit(
    client: &Client,
    auth: &WorkerAuth,
    a: &Assignment,
    engine_id: &str,
    label: &str,
) -> Result<(), c960_worker::client::ClientError> {
    let PositionSpec::StartPosition(sp) = a.kind.position() else {
        panic!("not a start position");
    };
    let pos = StartPosition::new(u32::from(*sp)).unwrap().position();
    let found = search::analyse(
        &pos,
        &SearchLimits {
            depth: 2,
            hash_mib: 1,
        },
    );
    let result = WorkResult::Analysis(c960_compute::engine::to_wire(&found, engine_id));
    client
        .submit(
            auth,
            &SubmitRequest {
                protocol: PROTOCOL_VERSION,
                lease_id: a.lease_id,
                workunit_id: a.workunit_id,
                digest: result_digest(a.workunit_id, &a.kind, &result),
                result,
                elapsed_ms: 1,
                engine: EngineInfo {
                    name: label.into(),
                    version: "1".into(),
                },
            },
        )
        .await
        .map(|_| ())
}

/// The cells of a CSV text (RFC 4180: quoted cells with doubled quotes, line breaks inside
/// quotes), row by row.
fn csv_cells(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut cell) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cell.push(c),
            (false, '"') if cell.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut cell)),
            (false, '\n') => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => cell.push(c),
        }
    }
    rows
}

/// No cell of the CSV exports is one a spreadsheet would evaluate, whatever the workers sent;
/// the engine column holds `engine_ids`, each prefixed with `'` when it leads with a formula
/// character.
fn assert_csv_is_inert(all: &[(String, String)], engine_ids: &[&str]) {
    for (what, body) in all
        .iter()
        .filter(|(w, _)| w.contains("csv") || w.contains("depths"))
    {
        let rows = csv_cells(body);
        for cell in rows.iter().flatten() {
            let number = cell.parse::<f64>().is_ok();
            assert!(
                number || !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "{what}: the cell {cell:?} is a formula"
            );
        }
        if what.contains("depths") {
            continue;
        }
        let engine = rows[0].iter().position(|h| h == "engine").unwrap();
        let mut found: Vec<&str> = rows[1..]
            .iter()
            .map(|r| r[engine].as_str())
            .filter(|e| !e.is_empty())
            .collect();
        found.sort();
        let mut want: Vec<String> = engine_ids
            .iter()
            .map(|id| match id.starts_with(['=', '+', '-', '@']) {
                true => format!("'{id}"),
                false => id.to_string(),
            })
            .collect();
        want.sort();
        assert_eq!(found, want, "{what}");
    }
}

/// The JSON table carries each engine id exactly (escaped by the encoder, read back whole).
fn assert_json_carries(all: &[(String, String)], engine_ids: &[&str]) {
    let (_, body) = all.iter().find(|(w, _)| w.ends_with("json")).unwrap();
    let table: serde_json::Value = serde_json::from_str(body).unwrap();
    let mut found: Vec<&str> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["result"]["engine_id"].as_str())
        .collect();
    found.sort();
    let mut want = engine_ids.to_vec();
    want.sort();
    assert_eq!(found, want);
}

/// No export or page holds any of `chars`.
fn assert_nowhere(all: &[(String, String)], chars: &[char]) {
    for (what, body) in all {
        assert!(!body.contains(chars), "{what} holds one of {chars:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formula_leaders_are_text_in_every_export() {
    let c = Coordinator::start("0-3");
    let ids = [
        "=HYPERLINK(\"http://evil.example\",\"sf\")",
        "+cmd|' /C calc'!A0",
        "-2+3+cmd|' /C calc'!A0",
        "@SUM(1+9)*cmd|' /C calc'!A0",
    ];
    for id in ids {
        // The names lead with formula characters too; both are printable labels.
        c.validate([id, &format!("={id}")], id, &format!("+{id}"))
            .await
            .unwrap();
    }
    let all = c.everything().await;
    assert_csv_is_inert(&all, &ids);
    assert_json_carries(&all, &ids);
}

/// Each of `texts` refused as a worker name (`bad_label`), an engine id (the replica closes as
/// `invalid_result`) and an engine label (`bad_label`), each on a workunit of its own.
async fn refused_at_the_door(c: &Coordinator, texts: impl IntoIterator<Item = String>) {
    for text in texts {
        assert_eq!(
            c.register(&text).await.err().as_deref(),
            Some(ErrorCode::BadLabel.as_str())
        );
        assert_eq!(
            c.validate(["a", "b"], &text, "sf").await.err().as_deref(),
            Some(ErrorCode::InvalidResult.as_str()),
            "engine id {text:?}"
        );
        assert_eq!(
            c.validate(["c", "d"], "sf", &text).await.err().as_deref(),
            Some(ErrorCode::BadLabel.as_str()),
            "engine label {text:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_and_carriage_return_are_refused_at_the_door() {
    // A valid result first, so the exports have a row; then the refusals, each on a
    // workunit of its own (a refused engine id closes its replica as an error).
    let c = Coordinator::start("0-9");
    c.validate(["e", "f"], "sf 1", "sf").await.unwrap();
    refused_at_the_door(&c, ['\t', '\r'].map(|lead| format!("{lead}=1+1"))).await;
    let all = c.everything().await;
    assert_csv_is_inert(&all, &["sf 1"]);
    assert_nowhere(&all, &['\t', '\r']);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markup_is_text_in_every_export_and_escaped_on_every_page() {
    let c = Coordinator::start("0");
    let id = "<script>alert(1)</script>&amp;\"'";
    let name = "<img src=x onerror=alert(1)>&\"";
    c.validate([name, name], id, "<b>sf</b>").await.unwrap();
    let all = c.everything().await;
    assert_csv_is_inert(&all, &[id]);
    assert_json_carries(&all, &[id]);
    let pages: Vec<&(String, String)> = all
        .iter()
        .filter(|(w, _)| w == "/" || w.starts_with("/campaigns") || w.starts_with("/workers"))
        .collect();
    for (what, html) in &pages {
        assert!(
            !html.contains("<script>alert")
                && !html.contains("<img src=x")
                && !html.contains("<b>sf"),
            "{what} carries markup a worker sent"
        );
    }
    // The text is there, escaped, where the pages show it.
    let escaped = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    assert!(
        pages.iter().any(|(_, h)| h.contains(&escaped(id))),
        "the engine id is shown nowhere"
    );
    assert!(
        pages.iter().any(|(_, h)| h.contains(&escaped(name))),
        "the worker name is shown nowhere"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidirectional_overrides_are_refused_at_the_door() {
    // A valid result first, so the exports have a row; then the refusals, each on a
    // workunit of its own (a refused engine id closes its replica as an error).
    let c = Coordinator::start("0-9");
    c.validate(["e", "f"], "sf 1", "sf").await.unwrap();
    let bidi = [
        '\u{202E}', '\u{202D}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{200F}', '\u{061C}',
    ];
    refused_at_the_door(&c, bidi.map(|ch| format!("evil-{ch}gnp.exe"))).await;
    let all = c.everything().await;
    assert_nowhere(&all, &bidi);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_refused_at_the_door() {
    // A valid result first, so the exports have a row; then the refusals, each on a
    // workunit of its own (a refused engine id closes its replica as an error).
    let c = Coordinator::start("0-9");
    c.validate(["e", "f"], "sf 1", "sf").await.unwrap();
    let controls = [
        '\0', '\u{1B}', '\n', '\u{7F}', '\u{85}', '\u{9B}', '\u{2028}',
    ];
    refused_at_the_door(&c, controls.map(|ch| format!("sf{ch}[31mred"))).await;
    let all = c.everything().await;
    // Line feeds end the lines of every export; the others appear nowhere.
    let nowhere: Vec<char> = controls.into_iter().filter(|&c| c != '\n').collect();
    assert_nowhere(&all, &nowhere);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invisible_characters_are_refused_at_the_door() {
    let c = Coordinator::start("0-9");
    c.validate(["alice", "bob"], "sf 1", "sf").await.unwrap();
    let invisible = ['\u{200B}', '\u{2060}', '\u{FEFF}', '\u{00AD}'];
    refused_at_the_door(&c, invisible.map(|ch| format!("al{ch}ice"))).await;
    let all = c.everything().await;
    assert_nowhere(&all, &invisible);
}
