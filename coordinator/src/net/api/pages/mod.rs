//! The public, read-only web pages: `/` (every campaign, this coordinator, connected workers),
//! `/campaigns/{id}` (the table as it fills), `/workers` (the leaderboard), `/workers/{id}`,
//! `/api/v1/live` (the JSON the pages' script polls), and the position explorer ([`positions`]:
//! `/positions`, `/positions/{family}/{n}` and their JSON). Server-rendered with maud; the CSS and
//! the script are embedded in the binary ([`STYLE_PATH`], [`SCRIPT_PATH`]); every page is
//! complete without the script, which only refreshes the live counters every few seconds.
//!
//! Cost per request: live parts read the trigger-kept counters ([`Store::progress`],
//! O(campaigns)) and the in-memory sample ring ([`live`]); a campaign page reads one page of its
//! table on load (at most [`ROWS_PER_PAGE`] start positions; a split campaign's units of those
//! start positions only); the leaderboard reads its listed workers' results through an index.
//! The reference/OEIS checks of the dashboard are cached per campaign until its counters move.

pub mod board;
pub mod explorer;
pub mod format;
pub mod live;
pub mod positions;
pub mod table;
pub mod views;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::extract::{Extension, Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use maud::Markup;
use serde::{Deserialize, Serialize};

use crate::model::standings::StandingsQuery;
use crate::model::{Campaign, CampaignKind, CampaignProgress, StoreError};
use crate::store::Store;
use crate::work::assembly::{self, CheckReport};
use format::{duration, grouped, per_second, percent};
use live::{Ring, Sample};
use table::table_page;
pub use table::{AgreementView, AnalysisRowView, PerftRowView, SelfPlayRowView, TablePage};

/// Where the stylesheet is served.
pub const STYLE_PATH: &str = "/assets/style.css";
/// Where the live-update script is served.
pub const SCRIPT_PATH: &str = "/assets/live.js";
/// Start positions per page of a campaign table.
pub const ROWS_PER_PAGE: usize = 100;
/// Workers per page of the leaderboard.
pub const WORKERS_PER_PAGE: u64 = 50;
/// "Connected": seen within this long.
pub const CONNECTED_MS: i64 = 5 * 60_000;

const STYLE: &str = include_str!("../../../../assets/style.css");
const SCRIPT: &str = include_str!("../../../../assets/live.js");

pub use crate::clock::now_ms;

/// The checks of a campaign and the (valid, failed) counters they were computed at.
type CachedChecks = ((u64, u64), Option<CheckView>);

/// What the pages share: the store, the sample ring, cached checks.
pub struct Pages {
    store: Arc<dyn Store>,
    tallies: Arc<super::tallies::Tallies>,
    ring: Ring,
    /// Per campaign: (valid, failed) when computed, and the checks then.
    checks: Mutex<HashMap<u64, CachedChecks>>,
    /// Campaigns seen complete (`None` before the first sample), to log each completion once.
    completed: Mutex<Option<BTreeSet<u64>>>,
}

impl Pages {
    /// Samples the counters (O(campaigns)) into the ring and returns them.
    fn sample(&self) -> Result<Vec<CampaignProgress>, StoreError> {
        let progress = self.store.progress()?;
        let m = crate::net::metrics::metrics();
        let results = m.results_accepted.get();
        let requests = crate::net::metrics::requests_answered();
        self.ring
            .push(Sample::of(now_ms(), &progress, requests, results));
        self.log_completions(&progress);
        Ok(progress)
    }

    /// Logs each campaign that finished since the last sample (not those finished before this
    /// process started).
    fn log_completions(&self, progress: &[CampaignProgress]) {
        let mut seen = lock(&self.completed);
        let first = seen.is_none();
        let seen = seen.get_or_insert_with(BTreeSet::new);
        for p in progress {
            if p.total > 0 && p.valid + p.failed == p.total && seen.insert(p.campaign.id) && !first
            {
                tracing::info!(
                    campaign = p.campaign.id,
                    valid = p.valid,
                    failed = p.failed,
                    nodes = %p.nodes_valid,
                    "campaign complete"
                );
            }
        }
    }

    /// The counters, sampling them too when the newest sample is stale.
    fn progress(&self) -> Result<Vec<CampaignProgress>, StoreError> {
        if self.ring.stale(now_ms()) {
            self.sample()
        } else {
            self.store.progress()
        }
    }
}

/// The page routes over this store, for any router state. Spawns the sampler when called
/// inside a Tokio runtime (it ends when the router is dropped).
pub fn routes<S: Clone + Send + Sync + 'static>(
    store: Arc<dyn Store>,
    tallies: Arc<super::tallies::Tallies>,
) -> Router<S> {
    let store_for_positions = store.clone();
    let pages = Arc::new(Pages {
        store,
        tallies,
        ring: Ring::default(),
        checks: Mutex::new(HashMap::new()),
        completed: Mutex::new(None),
    });
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        let weak: Weak<Pages> = Arc::downgrade(&pages);
        rt.spawn(async move {
            let mut tick =
                tokio::time::interval(Duration::from_millis(live::SAMPLE_EVERY_MS as u64));
            loop {
                tick.tick().await;
                let Some(p) = weak.upgrade() else { break };
                if let Err(e) = tokio::task::spawn_blocking(move || p.sample()).await {
                    tracing::warn!("progress sampler: {e}");
                }
            }
        });
    }
    Router::new()
        .route("/", get(dashboard))
        .route("/campaigns/{id}", get(campaign))
        .route("/workers", get(workers))
        .route("/workers/{id}", get(worker))
        .route("/api/v1/live", get(live_json))
        .route(
            STYLE_PATH,
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route(
            SCRIPT_PATH,
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .layer(Extension(pages))
        .merge(positions::routes(store_for_positions))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// The dashboard's view of a campaign.
pub struct CampaignCard {
    /// Id.
    pub id: u64,
    /// The store's kind: `perft`, `analysis` or `selfplay` (what the views branch on).
    pub kind: CampaignKind,
    /// The kind as shown: `perft`, `perft (split)`, `analysis (ENGINE)` or `self-play (ENGINE)`.
    pub kind_label: String,
    /// Self-play: games per workunit and nodes per move.
    pub self_play: Option<(u32, u64)>,
    /// The operator's name for it, if any.
    pub name: Option<String>,
    /// Scheduling priority (higher first).
    pub priority: i64,
    /// What it is doing: see [`campaign_state`].
    pub state: &'static str,
    /// Why it is stalled, what waits and what to do, while it is.
    pub stalled: Option<String>,
    /// Depth.
    pub depth: u32,
    /// Split ply (0: none).
    pub split_ply: u32,
    /// Quorum.
    pub quorum: u32,
    /// Position list.
    pub positions: String,
    /// Counters.
    pub total: u64,
    /// Valid workunits.
    pub valid: u64,
    /// Failed workunits.
    pub failed: u64,
    /// Leases in flight.
    pub in_flight: u64,
    /// Replicas queued.
    pub queued: u64,
    /// Canonical nodes so far (perft: the table's sum; analysis: nodes searched).
    pub nodes_valid: u128,
    /// What `nodes_valid` is.
    pub nodes_label: &'static str,
    /// Done share in percent.
    pub percent: f64,
    /// Nodes computed per second over the window.
    pub nodes_per_s: Option<f64>,
    /// Seconds to go.
    pub eta_s: Option<f64>,
    /// Checks against published figures, when they apply.
    pub checks: Option<CheckView>,
}

/// The checks of a perft campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckView {
    /// Depth ≤ 6: (agreeing, compared, mismatches) against the reference table.
    pub reference: Option<ReferenceCheck>,
    /// Depth 1-8 over all 960 start positions: the OEIS A157851 sum.
    pub oeis: Option<OeisView>,
}

/// Agreeing and compared start positions, and the mismatches as (sp, ours, reference).
pub type ReferenceCheck = (usize, usize, Vec<(u16, String, String)>);

/// The OEIS check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OeisView {
    /// Depth.
    pub depth: u32,
    /// a(depth), grouped.
    pub want: String,
    /// The sum here once all 960 are valid, grouped.
    pub got: Option<String>,
    /// Whether they agree (`None`: not yet comparable).
    pub verdict: Option<bool>,
}

/// The checks that apply to a campaign, from the report over its complete start positions.
pub fn check_view(c: &Campaign, report: Option<&CheckReport>) -> Option<CheckView> {
    // The reference table and OEIS A157851 are of the Chess960 starts only.
    if c.kind != CampaignKind::Perft || c.family != "chess960" {
        return None;
    }
    let all_960 = c.positions == "0-959";
    let reference = (1..=6).contains(&c.depth).then(|| match report {
        Some(r) => (
            r.compared - r.mismatches.len(),
            r.compared,
            r.mismatches.clone(),
        ),
        None => (0, 0, Vec::new()),
    });
    let oeis = assembly::OEIS_A157851
        .get(c.depth as usize)
        .filter(|_| all_960 && c.depth > 0)
        .map(|want| {
            let got = report.and_then(|r| r.oeis.clone());
            OeisView {
                depth: c.depth,
                want: grouped(*want),
                verdict: got.as_ref().map(|(a, b)| a == b),
                got: got.and_then(|(a, _)| a.parse().ok()).map(grouped),
            }
        });
    (reference.is_some() || oeis.is_some()).then_some(CheckView { reference, oeis })
}

/// What a campaign is doing, as every place shows it ([`crate::work::transitioner::CampaignState`]).
pub fn campaign_state(p: &CampaignProgress) -> &'static str {
    p.state().name()
}

fn card(pages: &Pages, p: &CampaignProgress, checks: Option<CheckView>) -> CampaignCard {
    let c = &p.campaign;
    let remaining = p.total - p.valid - p.failed;
    let rates = pages.ring.campaign(c.id, remaining);
    CampaignCard {
        id: c.id,
        kind: c.kind,
        kind_label: match (&c.engine, c.split_ply) {
            (Some(e), _) if c.kind == CampaignKind::SelfPlay => format!("self-play ({e})"),
            (Some(e), _) => format!("analysis ({e})"),
            (None, 0) => c.kind.to_string(),
            (None, _) => format!("{} (split)", c.kind),
        },
        self_play: c.games.zip(c.move_nodes),
        name: c.name.clone(),
        priority: c.priority,
        state: campaign_state(p),
        stalled: c
            .stall
            .filter(|_| p.state() == crate::work::transitioner::CampaignState::Stalled)
            .map(|s| s.waiting(c.id).describe()),
        depth: c.depth,
        split_ply: c.split_ply,
        quorum: c.quorum,
        positions: c.positions.clone(),
        total: p.total,
        valid: p.valid,
        failed: p.failed,
        in_flight: p.in_flight,
        queued: p.queued_replicas,
        nodes_valid: p.nodes_valid,
        nodes_label: if c.kind == CampaignKind::Analysis || c.kind == CampaignKind::SelfPlay {
            "nodes searched"
        } else {
            "nodes (valid)"
        },
        percent: percent(p.valid + p.failed, p.total),
        nodes_per_s: rates.nodes_per_s,
        eta_s: rates.eta_s,
        checks,
    }
}

/// The checks of a campaign, recomputed only when its counters moved since the last time.
/// Unsplit perft campaigns (at most 960 workunits) are checked as they fill; split ones once
/// complete (assembly reads every unit).
fn cached_checks(pages: &Pages, p: &CampaignProgress) -> Result<Option<CheckView>, StoreError> {
    let c = &p.campaign;
    // The checks compare with Chess960's reference table and OEIS sums: nothing to compare a
    // family's campaign with (and reading its up to 921,600 rows on every load cost seconds).
    if c.kind != CampaignKind::Perft || c.family != c960_common::family::Family::Chess960.name() {
        return Ok(None);
    }
    let key = (p.valid, p.failed);
    if let Some((k, v)) = lock(&pages.checks).get(&c.id)
        && *k == key
    {
        return Ok(v.clone());
    }
    let totals: Option<BTreeMap<u16, u128>> = if c.split_ply == 0 {
        let (_, rows) = pages.store.table(c.id)?;
        Some(
            rows.iter()
                .filter_map(|r| Some((r.sp?, u128::from(r.nodes?))))
                .collect(),
        )
    } else if p.valid == p.total {
        let (_, rows) = crate::export::split_table(&*pages.store, c.id)?;
        Some(crate::export::split_totals(&rows))
    } else {
        None
    };
    let report = totals.map(|t| assembly::check(c.depth, &t));
    let view = check_view(c, report.as_ref());
    lock(&pages.checks).insert(c.id, (key, view.clone()));
    Ok(view)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The coordinator's own numbers.
pub struct OwnView {
    /// Rates over the window.
    pub rates: live::OwnRates,
    /// Leases in flight.
    pub in_flight: u64,
    /// Workers seen in the last hour.
    pub active_last_hour: u64,
    /// Registered workers.
    pub registered: u64,
    /// Of them, BOINC hosts, and their valid results.
    pub boinc: (u64, u64),
}

/// A page failed: 404 for an unknown id, 500 without internal detail otherwise.
fn failure(e: StoreError) -> Response {
    match e {
        StoreError::UnknownCampaign(id) => (
            StatusCode::NOT_FOUND,
            views::message("No such campaign", &format!("There is no campaign {id}.")),
        )
            .into_response(),
        StoreError::UnknownWorker(id) => (
            StatusCode::NOT_FOUND,
            views::message("No such worker", &format!("There is no worker {id}.")),
        )
            .into_response(),
        e => {
            tracing::error!("page: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                views::message(
                    "Something went wrong",
                    "The coordinator could not read its store; the operator's log says why.",
                ),
            )
                .into_response()
        }
    }
}

async fn off_thread(f: impl FnOnce() -> Result<Markup, StoreError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(m)) => m.into_response(),
        Ok(Err(e)) => failure(e),
        Err(e) => failure(StoreError::Db(e.to_string())),
    }
}

/// "3 · 41": BOINC hosts and their valid results, for the dashboard (short: one line in a card).
fn boinc_hosts((hosts, valid): (u64, u64)) -> String {
    format!("{} · {}", grouped(hosts.into()), grouped(valid.into()))
}

fn own_view(pages: &Pages, progress: &[CampaignProgress], now: i64) -> Result<OwnView, StoreError> {
    let w = pages.store.worker_summary(now)?;
    Ok(OwnView {
        rates: pages.ring.own(),
        in_flight: progress.iter().map(|p| p.in_flight).sum(),
        active_last_hour: w.active_last_hour,
        registered: w.registered,
        boinc: (w.boinc_hosts, w.boinc_valid),
    })
}

async fn dashboard(Extension(pages): Extension<Arc<Pages>>) -> Response {
    off_thread(move || {
        let now = now_ms();
        let progress = pages.progress()?;
        let mut cards = Vec::with_capacity(progress.len());
        // In the order the scheduler serves them: higher priority first, then oldest first.
        let mut order: Vec<&CampaignProgress> = progress.iter().collect();
        order.sort_by_key(|p| (std::cmp::Reverse(p.campaign.priority), p.campaign.id));
        for p in order {
            let checks = cached_checks(&pages, p)?;
            cards.push(card(&pages, p, checks));
        }
        let own = own_view(&pages, &progress, now)?;
        let connected = pages.store.standings(&StandingsQuery {
            seen_since_ms: Some(now - CONNECTED_MS),
            recent_since_ms: now - live::WINDOW_MS,
            offset: 0,
            limit: 20,
        })?;
        Ok(views::dashboard(&cards, &own, &connected, now))
    })
    .await
}

/// `?page=N`.
#[derive(Deserialize)]
struct PageQuery {
    page: Option<u64>,
}

fn parse_id(text: &str, what: &str) -> Result<u64, Box<Response>> {
    text.parse().map_err(|_| {
        Box::new(
            (
                StatusCode::BAD_REQUEST,
                views::message("Bad address", &format!("{what} {text:?} is not a number.")),
            )
                .into_response(),
        )
    })
}

async fn campaign(
    Extension(pages): Extension<Arc<Pages>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let id = match parse_id(&id, "campaign") {
        Ok(id) => id,
        Err(r) => return *r,
    };
    off_thread(move || {
        let progress = pages.progress()?;
        let p = progress
            .iter()
            .find(|p| p.campaign.id == id)
            .ok_or(StoreError::UnknownCampaign(id))?;
        let checks = cached_checks(&pages, p)?;
        let card = card(&pages, p, checks);
        let table = table_page(&*pages.store, &p.campaign, q.page.unwrap_or(0))?;
        let tally = pages.tallies.of(&pages.store, id);
        Ok(views::campaign_page(&card, &table, tally.as_ref()))
    })
    .await
}

async fn workers(Extension(pages): Extension<Arc<Pages>>, Query(q): Query<PageQuery>) -> Response {
    off_thread(move || {
        let now = now_ms();
        let registered = pages.store.worker_summary(now)?.registered;
        let page_count = registered.div_ceil(WORKERS_PER_PAGE).max(1);
        let page = q.page.unwrap_or(0).min(page_count - 1);
        let rows = pages.store.standings(&StandingsQuery {
            seen_since_ms: None,
            recent_since_ms: now - live::WINDOW_MS,
            offset: page * WORKERS_PER_PAGE,
            limit: WORKERS_PER_PAGE,
        })?;
        Ok(views::leaderboard(
            &rows,
            page * WORKERS_PER_PAGE + 1,
            (live::WINDOW_MS / 1000) as f64,
            now,
            page,
            page_count,
        ))
    })
    .await
}

async fn worker(Extension(pages): Extension<Arc<Pages>>, Path(id): Path<String>) -> Response {
    let id = match parse_id(&id, "worker") {
        Ok(id) => id,
        Err(r) => return *r,
    };
    off_thread(move || {
        let now = now_ms();
        let h = pages
            .store
            .worker_history(id, now - live::WINDOW_MS, 50)?
            .ok_or(StoreError::UnknownWorker(id))?;
        Ok(views::worker_page(&h, (live::WINDOW_MS / 1000) as f64, now))
    })
    .await
}

/// The JSON of `GET /api/v1/live`: the text of every live element by its `data-live` key and
/// the width of every bar by its `data-bar` key, plus the raw counters (node counts as decimal
/// strings: they pass 2^53).
#[derive(Serialize)]
pub struct LiveBody {
    /// When (ms since the epoch).
    pub now_ms: i64,
    /// `data-live` key → text.
    pub text: BTreeMap<String, String>,
    /// `data-bar` key → percent.
    pub bars: BTreeMap<String, f64>,
    /// Raw counters per campaign.
    pub campaigns: Vec<LiveCampaign>,
}

/// Raw counters of one campaign in [`LiveBody`].
#[derive(Serialize)]
pub struct LiveCampaign {
    /// Id.
    pub id: u64,
    /// Workunits.
    pub total: u64,
    /// Valid.
    pub valid: u64,
    /// Failed.
    pub failed: u64,
    /// In flight.
    pub in_flight: u64,
    /// Canonical nodes so far (a JSON integer, as every node count: docs/protocol.md).
    pub nodes_valid: u128,
    /// Nodes computed per second, when known.
    pub nodes_per_s: Option<f64>,
    /// Seconds to go, when known.
    pub eta_s: Option<f64>,
}

async fn live_json(Extension(pages): Extension<Arc<Pages>>) -> Response {
    let body = tokio::task::spawn_blocking(move || -> Result<LiveBody, StoreError> {
        let now = now_ms();
        let progress = pages.progress()?;
        let own = own_view(&pages, &progress, now)?;
        let mut text = BTreeMap::new();
        let mut bars = BTreeMap::new();
        let mut campaigns = Vec::new();
        for p in &progress {
            let c = card(&pages, p, None);
            let k = |f: &str| format!("c{}.{f}", c.id);
            text.insert(
                k("valid"),
                format!("{} / {}", grouped(c.valid.into()), grouped(c.total.into())),
            );
            text.insert(k("in_flight"), grouped(c.in_flight.into()));
            text.insert(k("failed"), grouped(c.failed.into()));
            text.insert(k("queued"), grouped(c.queued.into()));
            text.insert(k("nodes"), grouped(c.nodes_valid));
            text.insert(k("rate"), per_second(c.nodes_per_s, "nodes"));
            text.insert(k("eta"), duration(c.eta_s));
            text.insert(k("percent"), format!("{:.1} %", c.percent));
            bars.insert(k("bar"), c.percent);
            campaigns.push(LiveCampaign {
                id: c.id,
                total: c.total,
                valid: c.valid,
                failed: c.failed,
                in_flight: c.in_flight,
                nodes_valid: c.nodes_valid,
                nodes_per_s: c.nodes_per_s,
                eta_s: c.eta_s,
            });
        }
        text.insert(
            "own.requests".into(),
            per_second(own.rates.requests_per_s, "req"),
        );
        text.insert(
            "own.results".into(),
            per_second(own.rates.results_per_s, "results"),
        );
        text.insert("own.in_flight".into(), grouped(own.in_flight.into()));
        text.insert("own.active".into(), grouped(own.active_last_hour.into()));
        text.insert("own.registered".into(), grouped(own.registered.into()));
        text.insert("own.boinc".into(), boinc_hosts(own.boinc));
        text.insert("own.window".into(), duration(own.rates.window_s));
        Ok(LiveBody {
            now_ms: now,
            text,
            bars,
            campaigns,
        })
    })
    .await;
    match body {
        Ok(Ok(b)) => Json(b).into_response(),
        Ok(Err(e)) => {
            tracing::error!("live: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(
                    serde_json::json!({"code": "internal", "message": "the store did not answer"}),
                ),
            )
                .into_response()
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign(depth: u32, positions: &str, kind: CampaignKind) -> Campaign {
        Campaign {
            id: 1,
            kind,
            engine: None,
            split_ply: 0,
            depth,
            quorum: 2,
            max_results: 4,
            positions: positions.into(),
            family: "chess960".into(),
            name: None,
            priority: 0,
            status: Default::default(),
            games: None,
            move_nodes: None,
            stall: None,
        }
    }

    #[test]
    fn checks_apply_by_depth_and_position_set() {
        assert_eq!(
            check_view(&campaign(4, "0-9", CampaignKind::Analysis), None),
            None
        );
        assert_eq!(
            check_view(&campaign(7, "0-9", CampaignKind::Perft), None),
            None
        );
        let shallow = check_view(&campaign(3, "0-9", CampaignKind::Perft), None).unwrap();
        assert_eq!(shallow.reference, Some((0, 0, vec![])));
        assert_eq!(shallow.oeis, None);
        let deep = check_view(&campaign(7, "0-959", CampaignKind::Perft), None).unwrap();
        assert_eq!(deep.reference, None);
        let o = deep.oeis.unwrap();
        assert_eq!((o.want.as_str(), o.verdict), ("2,854,198,413,886", None));
        let totals: BTreeMap<u16, u128> = (0..960).map(|sp| (sp, 20)).collect();
        let report = assembly::check(1, &totals);
        let one = check_view(&campaign(1, "0-959", CampaignKind::Perft), Some(&report)).unwrap();
        assert_eq!(one.oeis.unwrap().verdict, Some(false));
        assert_eq!(one.reference.unwrap().1, 960);
    }

    #[test]
    fn state_says_complete_over_the_operators_status_and_paused_or_cancelled_before_running() {
        let progress = |status, valid, failed, in_flight| CampaignProgress {
            campaign: Campaign {
                status,
                ..campaign(3, "0-9", CampaignKind::Perft)
            },
            total: 10,
            valid,
            failed,
            queued_replicas: 0,
            in_flight,
            nodes_valid: 0,
            nodes_computed: 0,
        };
        use crate::model::CampaignStatus::*;
        assert_eq!(campaign_state(&progress(Active, 0, 0, 0)), "waiting");
        assert_eq!(campaign_state(&progress(Active, 0, 0, 1)), "running");
        assert_eq!(campaign_state(&progress(Active, 3, 0, 0)), "running");
        assert_eq!(campaign_state(&progress(Paused, 3, 0, 1)), "paused");
        assert_eq!(campaign_state(&progress(Paused, 0, 0, 0)), "paused");
        assert_eq!(campaign_state(&progress(Cancelled, 3, 0, 0)), "cancelled");
        assert_eq!(campaign_state(&progress(Cancelled, 10, 0, 0)), "complete");
        assert_eq!(campaign_state(&progress(Paused, 9, 1, 0)), "failed");
    }
}
