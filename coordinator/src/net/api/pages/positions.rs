//! The position explorer's routes (issue 56): `/positions`, `/positions/{family}/{n}` (Chess960
//! and shuffle, the families with shipped tables) and the same as JSON under `/api/v1/positions`. Thin: the values and every decision are
//! [`crate::explorer`]'s, the HTML [`super::explorer`]'s. What it reads of the store is the
//! valid perft values of this coordinator's Chess960 campaigns (the [`Overlay`] that
//! supersedes the published tables), cached until a campaign's counters move; a fresh `serve`
//! reads nothing but the progress counters.

use std::sync::{Arc, Mutex};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use c960_common::StartPosition;
use c960_common::error_code::ErrorCode;
use c960_common::family::{Family, Start};
use serde::{Deserialize, Serialize};

use super::explorer::{Charts, index_page, position_page, shuffle_index_page};
use super::views;
use crate::explorer::detail::{FAMILY, Index, PositionDetail, detail, index, shuffle_detail};
use crate::explorer::query::Column;
use crate::explorer::request::{Asked, IndexFamily, IndexRequest};
use crate::explorer::shuffle::{self, ShuffleRow};
use crate::explorer::tables::{self, Refusal, SHIPPED};
use crate::explorer::{
    BalanceTable, CampaignValue, MAX_DEPTH, Overlay, SHUFFLE_DEPTHS, perft_value, published,
    shuffle_perft,
};
use crate::model::{CampaignKind, RowStatus, StoreError};
use crate::net::api::error::ApiError;
use crate::store::Store;

/// The campaigns an overlay was read at: (id, valid, failed) each.
type OverlayKey = Vec<(u64, u64, u64)>;

/// The explorer's state: the store and the cached overlay.
pub struct Explorer {
    store: Arc<dyn Store>,
    cache: Mutex<Option<(OverlayKey, Arc<Overlay>)>>,
}

/// The explorer's routes over this store.
pub fn routes<S: Clone + Send + Sync + 'static>(store: Arc<dyn Store>) -> Router<S> {
    let explorer = Arc::new(Explorer {
        store,
        cache: Mutex::new(None),
    });
    Router::new()
        .route("/positions", get(index_html))
        .route("/positions/{family}/{n}", get(position_html))
        .route("/api/v1/positions", get(index_json))
        .route("/api/v1/positions/{family}/{n}", get(position_json))
        .route("/api/v1/positions/tables", get(tables_json))
        .route("/api/v1/positions/tables/{name}", get(table_csv))
        .layer(Extension(explorer))
}

impl Explorer {
    /// The valid perft values of this coordinator's unsplit Chess960 campaigns, the newest
    /// campaign's value standing where two have one; re-read only when a counter moved.
    fn overlay(&self) -> Result<Arc<Overlay>, StoreError> {
        let progress = self.store.progress()?;
        let campaigns: Vec<_> = progress
            .iter()
            .filter(|p| {
                let c = &p.campaign;
                c.kind == CampaignKind::Perft
                    && c.family == FAMILY
                    && c.split_ply == 0
                    && (1..=MAX_DEPTH).contains(&c.depth)
                    && p.valid > 0
            })
            .collect();
        let key: OverlayKey = campaigns
            .iter()
            .map(|p| (p.campaign.id, p.valid, p.failed))
            .collect();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, o)) = cache.as_ref()
            && *k == key
        {
            return Ok(o.clone());
        }
        let mut overlay = Overlay::new();
        // Oldest first, so a newer campaign's value overwrites an older one's.
        let mut ids: Vec<u64> = key.iter().map(|k| k.0).collect();
        ids.sort_unstable();
        for id in ids {
            let (campaign, rows) = self.store.table(id)?;
            for r in rows {
                if let (RowStatus::Valid, Some(sp), Some(nodes)) = (r.status, r.sp, r.nodes) {
                    overlay.insert(
                        (sp, r.depth),
                        CampaignValue {
                            campaign: campaign.id,
                            nodes,
                            agreeing_results: r.agreeing_results,
                            audit: r.audit,
                        },
                    );
                }
            }
        }
        let overlay = Arc::new(overlay);
        *cache = Some((key, overlay.clone()));
        Ok(overlay)
    }
}

/// A refused address or query: a status, a machine-readable code and why.
type Refused = ApiError;

fn not_found(message: String) -> Refused {
    ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
}

fn bad_query(message: String) -> Refused {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadQuery, message)
}

/// A start the explorer has tables for.
enum Target {
    /// A Chess960 start: every table.
    Chess960(StartPosition),
    /// A shuffle start: the shipped perft d1–d6.
    Shuffle(Start),
}

impl Target {
    fn detail(&self, overlay: &Overlay) -> PositionDetail {
        match self {
            Target::Chess960(sp) => detail(*sp, overlay),
            Target::Shuffle(start) => shuffle_detail(start),
        }
    }

    fn position(&self) -> c960_common::Position {
        match self {
            Target::Chess960(sp) => sp.position(),
            Target::Shuffle(start) => start.position(),
        }
    }
}

/// The start a path names: a family with tables (Chess960, shuffle) and a number in range.
fn start_of(family: &str, n: &str) -> Result<Target, Refused> {
    let family = Family::parse(family).map_err(|e| not_found(e.to_string()))?;
    let n: u32 = n
        .parse()
        .map_err(|_| bad_query(format!("start {n:?} is not a number")))?;
    match family {
        Family::Chess960 => StartPosition::new(n)
            .map(Target::Chess960)
            .map_err(|e| not_found(e.to_string())),
        Family::Shuffle => family
            .start(u64::from(n))
            .map(Target::Shuffle)
            .map_err(|e| not_found(e.to_string())),
        f => Err(not_found(format!(
            "the explorer has no tables for {f} yet; only chess960 and shuffle"
        ))),
    }
}

/// `?family=…&sort=…&order=…&q=…&page=…`, all optional.
#[derive(Deserialize, Default)]
struct IndexQuery {
    family: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    q: Option<String>,
    page: Option<String>,
}

impl IndexQuery {
    fn asked(&self) -> Asked<'_> {
        Asked {
            family: self.family.as_deref(),
            sort: self.sort.as_deref(),
            order: self.order.as_deref(),
            q: self.q.as_deref(),
            page: self.page.as_deref(),
        }
    }
}

/// The query, or (a query string that does not parse) an empty one and the refusal.
fn query(q: Result<Query<IndexQuery>, QueryRejection>) -> (IndexQuery, Option<Refused>) {
    match q {
        Ok(Query(q)) => (q, None),
        Err(e) => (IndexQuery::default(), Some(bad_query(e.body_text()))),
    }
}

/// One family's index, with its charts.
enum Answer {
    Chess960(Index, Charts),
    Shuffle(Index<ShuffleRow>, Charts),
}

/// The index a request asks for; `404 not_found` for a page past the last.
fn answer(r: &IndexRequest, text: &str, overlay: &Overlay) -> Result<Answer, Refused> {
    match r.family {
        IndexFamily::Chess960 => {
            let ix =
                index(text, &r.search, r.column, r.order, r.page, overlay).map_err(not_found)?;
            let charts = index_charts(&ix, r.column, overlay);
            Ok(Answer::Chess960(ix, charts))
        }
        IndexFamily::Shuffle => {
            let (ix, listed) =
                shuffle::index(text, &r.search, r.column, r.order, r.page).map_err(not_found)?;
            let label = match r.column {
                Column::Perft(d) => format!("perft d{d}"),
                _ => format!("perft d{SHUFFLE_DEPTHS}"),
            };
            let charts = Charts {
                histogram: (shuffle::values(&listed, r.column), label, None),
                scatter: (Vec::new(), Vec::new()),
            };
            Ok(Answer::Shuffle(ix, charts))
        }
    }
}

/// The charts of the index: a histogram of the sorted column (perft d9 when sorted by number)
/// over the listed starts, and perft d9 against the balance of record for all 960.
fn index_charts(ix: &Index, column: Column, overlay: &Overlay) -> Charts {
    let column = match column {
        Column::Number => Column::Perft(MAX_DEPTH),
        c => c,
    };
    let values = ix
        .rows
        .iter()
        .filter_map(|r| column.value(&published()[r.number as usize], overlay))
        .collect();
    let label = match column {
        Column::Balance(t) => format!("{} (cp)", t.label()),
        c => format!("perft {}", c.key()),
    };
    Charts {
        histogram: (values, label, None),
        // Marking all 960 would mark nothing.
        scatter: (
            scatter_points(overlay),
            if ix.count < published().len() {
                ix.rows.iter().map(|r| r.number).collect()
            } else {
                Vec::new()
            },
        ),
    }
}

fn scatter_points(overlay: &Overlay) -> Vec<super::board::Point> {
    published()
        .iter()
        .filter_map(|p| {
            let y = p.eval(BalanceTable::Record)?.cp;
            Some((p.sp, perft_value(p.sp, MAX_DEPTH, overlay).nodes as f64, y))
        })
        .collect()
}

/// A start's charts: the histogram of its deepest perft over its family, its bin marked;
/// for Chess960 also perft d9 against the balance of record, this start marked.
fn position_charts(d: &PositionDetail, overlay: &Overlay) -> Charts {
    let mark = d.perft.last().map(|r| r.value.nodes as f64);
    match u16::try_from(d.number) {
        Ok(sp) if d.family == FAMILY => {
            let column = Column::Perft(MAX_DEPTH);
            let values = published()
                .iter()
                .filter_map(|p| column.value(p, overlay))
                .collect();
            Charts {
                histogram: (values, "perft d9".into(), mark),
                scatter: (scatter_points(overlay), vec![sp]),
            }
        }
        _ => {
            let values = shuffle_perft()
                .iter()
                .map(|p| p[SHUFFLE_DEPTHS as usize - 1] as f64)
                .collect();
            Charts {
                histogram: (values, format!("perft d{SHUFFLE_DEPTHS}"), mark),
                scatter: (Vec::new(), Vec::new()),
            }
        }
    }
}

/// Runs `f` on a blocking thread (it may read the store); a store failure is a 500.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Refused> + Send + 'static,
) -> Result<T, Refused> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            e.to_string(),
        ))
    })
}

/// A refusal as a page: the same status, the message in words.
fn page_refused(e: Refused) -> Response {
    let title = if e.status == StatusCode::NOT_FOUND {
        "No such start"
    } else if e.status.is_client_error() {
        "Bad address"
    } else {
        "Something went wrong"
    };
    let text = if e.status.is_server_error() {
        tracing::error!("positions page: {}", e.message);
        "The coordinator could not read its store; the operator's log says why.".to_string()
    } else {
        e.message
    };
    (e.status, views::message(title, &text)).into_response()
}

async fn position_html(
    Extension(x): Extension<Arc<Explorer>>,
    Path((family, n)): Path<(String, String)>,
) -> Response {
    let start = match start_of(&family, &n) {
        Ok(s) => s,
        Err(e) => return page_refused(e),
    };
    match blocking(move || {
        let overlay = x.overlay()?;
        let d = start.detail(&overlay);
        let charts = position_charts(&d, &overlay);
        Ok(position_page(&d, &start.position(), &charts))
    })
    .await
    {
        Ok(page) => page.into_response(),
        Err(e) => page_refused(e),
    }
}

async fn position_json(
    Extension(x): Extension<Arc<Explorer>>,
    Path((family, n)): Path<(String, String)>,
) -> Result<Json<PositionDetail>, ApiError> {
    let start = start_of(&family, &n)?;
    blocking(move || {
        let overlay = x.overlay()?;
        Ok(Json(start.detail(&overlay)))
    })
    .await
}

async fn index_html(
    Extension(x): Extension<Arc<Explorer>>,
    q: Result<Query<IndexQuery>, QueryRejection>,
) -> Response {
    let (q, unreadable) = query(q);
    let asked = q.asked();
    // A refused query still shows an index (the family's first page, by number) under the
    // reason, with the refusal's status.
    let parsed = unreadable.map_or_else(|| IndexRequest::parse(&asked).map_err(bad_query), Err);
    let (request, error) = match parsed {
        Ok(r) => (r, None),
        Err(e) => (IndexRequest::fallback(&asked), Some(e)),
    };
    let text = if error.is_some() {
        String::new()
    } else {
        q.q.clone().unwrap_or_default()
    };
    match blocking(move || {
        let overlay = x.overlay()?;
        let (shown, error) = match answer(&request, &text, &overlay) {
            Ok(a) => (a, error),
            // A page past the last: the first page under the reason.
            Err(e) => {
                let first = IndexRequest { page: 1, ..request };
                (answer(&first, &text, &overlay)?, Some(e))
            }
        };
        let message = error.as_ref().map(|e| e.message.clone());
        let status = error.map_or(StatusCode::OK, |e| e.status);
        Ok((
            status,
            match shown {
                Answer::Chess960(ix, charts) => index_page(&ix, &charts, message.as_deref()),
                Answer::Shuffle(ix, charts) => shuffle_index_page(&ix, &charts, message.as_deref()),
            },
        ))
    })
    .await
    {
        Ok(page) => page.into_response(),
        Err(e) => page_refused(e),
    }
}

async fn index_json(
    Extension(x): Extension<Arc<Explorer>>,
    q: Result<Query<IndexQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (q, unreadable) = query(q);
    if let Some(e) = unreadable {
        return Err(e);
    }
    let request = IndexRequest::parse(&q.asked()).map_err(bad_query)?;
    let text = q.q.unwrap_or_default();
    blocking(move || {
        let overlay = x.overlay()?;
        Ok(match answer(&request, &text, &overlay)? {
            Answer::Chess960(ix, _) => Json(ix).into_response(),
            Answer::Shuffle(ix, _) => Json(ix).into_response(),
        })
    })
    .await
}

/// A shipped table in `GET /api/v1/positions/tables`.
#[derive(Serialize)]
struct TableEntry {
    name: &'static str,
    file: &'static str,
    rows: usize,
    url: String,
}

async fn tables_json() -> Json<Vec<TableEntry>> {
    Json(
        SHIPPED
            .iter()
            .map(|t| TableEntry {
                name: t.name(),
                file: t.file,
                rows: t.rows(),
                url: format!("/api/v1/positions/tables/{}", t.name()),
            })
            .collect(),
    )
}

/// `?start=N`: one start's rows.
#[derive(Deserialize)]
struct RowQuery {
    start: Option<String>,
}

/// A shipped table as CSV, byte for byte, or (`?start=N`) its header and that start's rows.
async fn table_csv(
    Path(name): Path<String>,
    q: Result<Query<RowQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let table = tables::find(&name).ok_or_else(|| {
        not_found(format!(
            "no shipped table {name:?}; /api/v1/positions/tables lists them"
        ))
    })?;
    let Query(q) = q.map_err(|e| bad_query(e.body_text()))?;
    let text = tables::select(table, q.start.as_deref()).map_err(|e| match e {
        Refusal::BadStart(m) => bad_query(m),
        Refusal::NoRow(m) => not_found(m),
    })?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"{}\"", table.name()),
            ),
        ],
        text,
    )
        .into_response())
}
