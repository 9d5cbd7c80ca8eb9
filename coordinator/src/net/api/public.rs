//! The public read-only JSON: `GET /api/v1/status` and the table exports
//! (`/api/v1/campaigns/{id}/table`, `/balance`; rate limited per address, as each reads a whole
//! campaign).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use c960_common::error_code::ErrorCode;
use c960_common::wire::PROTOCOL_VERSION;
use serde::Serialize;

use super::error::ApiError;
use super::layers;
use super::state::{AppState, blocking};
use crate::clock::now_ms;
use crate::explorer::tables::{Refusal, rows_of};
use crate::export;
use crate::model::{CampaignProgress, CheckCost, Stall, StoreError, WorkerSummary};

/// The status route and the rate-limited exports.
pub fn routes(state: AppState) -> Router<AppState> {
    let exports = Router::new()
        .route("/api/v1/campaigns/{id}/table", get(table))
        .route("/api/v1/campaigns/{id}/balance", get(balance))
        .route_layer(axum::middleware::from_fn_with_state(state, layers::exports));
    Router::new()
        .route("/api/v1/status", get(status))
        .merge(exports)
}

/// The JSON of `GET /api/v1/status`.
#[derive(Serialize)]
pub struct StatusBody {
    /// This coordinator's crate version.
    pub version: &'static str,
    /// The git commit it was built from (`unknown` in a build without git).
    pub commit: &'static str,
    /// Protocol version spoken.
    pub protocol: u32,
    /// Replicas waiting to be leased, over all campaigns.
    pub queue_depth: u64,
    /// Leases in progress, over all campaigns.
    pub in_flight: u64,
    /// Workers, with their trust and checks.
    pub workers: WorkerSummary,
    /// What the integrity checks cost: coordinator check nodes, replicas per valid workunit.
    pub integrity: CheckCost,
    /// Disagreements settled by bisection: opened, decided, convictions, challenges, the
    /// coordinator's leaf nodes ([`crate::integrity::referee`]).
    pub disputes: crate::model::disputes::DisputeCost,
    /// Per campaign: how many agreeing workers its valid values rest on, and the nodes the
    /// coordinator counted itself per node of them (read at most [`super::tallies::REFRESH`]
    /// ago).
    pub tallies: Vec<crate::model::CampaignTally>,
    /// Since when the database's disk has been full (ms since the epoch), while it is: writes
    /// are refused with 503 `storage_full` until space is freed.
    pub storage_full_since_ms: Option<i64>,
    /// Per campaign.
    pub campaigns: Vec<CampaignProgress>,
    /// Campaigns that no connected worker may take (see [`crate::work::stall`]).
    pub stalled: Vec<StalledCampaign>,
}

/// A stalled campaign on the status page: the cause, and the same words as everywhere else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StalledCampaign {
    /// Campaign id.
    pub campaign: u64,
    /// The rule that keeps its remaining replicas waiting.
    pub cause: c960_common::wait::WaitCause,
    /// How many replicas wait on it.
    pub replicas: u64,
    /// Since when (Unix ms).
    pub since_ms: i64,
    /// What waits, why, and what to do.
    pub reason: String,
}

impl StalledCampaign {
    fn of(campaign: u64, stall: Stall) -> StalledCampaign {
        StalledCampaign {
            campaign,
            cause: stall.cause,
            replicas: stall.replicas,
            since_ms: stall.since_ms,
            reason: stall.waiting(campaign).describe(),
        }
    }
}

async fn status(State(st): State<AppState>) -> Result<Response, ApiError> {
    let store = st.store.clone();
    let tallies = st.tallies.clone();
    let body = blocking(move || {
        // Reads only, on the store's reader: the status answers while workers keep the writer
        // busy, and on a full disk. Lapsed leases are expired by the checker's sweep.
        let now = now_ms();
        let campaigns = store.progress()?;
        Ok(StatusBody {
            version: c960_cli::build_info::VERSION,
            commit: c960_cli::build_info::COMMIT,
            protocol: PROTOCOL_VERSION,
            queue_depth: campaigns.iter().map(|c| c.queued_replicas).sum(),
            in_flight: campaigns.iter().map(|c| c.in_flight).sum(),
            workers: store.worker_summary(now)?,
            integrity: store.check_cost()?,
            disputes: store.dispute_cost()?,
            storage_full_since_ms: store.storage_full_since(),
            tallies: tallies.get(&store).as_ref().clone(),
            stalled: campaigns
                .iter()
                .filter_map(|p| Some(StalledCampaign::of(p.campaign.id, p.campaign.stall?)))
                .collect(),
            campaigns,
        })
    })
    .await?;
    Ok(axum::Json(body).into_response())
}

/// Query of the table export.
#[derive(serde::Deserialize)]
struct TableQuery {
    format: Option<String>,
    /// CSV only: the header and this start's rows (the explorer links a value to its row).
    start: Option<String>,
}

async fn table(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
) -> Result<Response, ApiError> {
    let id: u64 = id.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadQuery,
            format!("campaign id {id:?} is not a number"),
        )
    })?;
    let format = export::Format::parse(q.format.as_deref().unwrap_or("json"))
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadQuery, e))?;
    if let Some(start) = q.start {
        return start_rows(&st, id, format, start).await;
    }
    let store = st.store.clone();
    let (campaign, complete) = blocking(move || {
        // Read before the table: a campaign complete then has a complete table.
        match store.campaign_progress(id) {
            Ok(p) => Ok((Some(p.campaign.clone()), p.valid + p.failed == p.total)),
            Err(StoreError::UnknownCampaign(_)) => Ok((None, false)),
            Err(e) => Err(e.into()),
        }
    })
    .await?;
    // A table still filling is streamed from one read snapshot by a blocking thread, chunk by
    // chunk: it is never built in memory, and a client that goes away stops the export. A
    // completed table is rendered once so that its bytes carry an ETag.
    if let Some(c) = campaign.filter(|c| !complete && export::streams(c, format)) {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let store = st.store.clone();
        tokio::task::spawn_blocking(move || {
            let sent = export::stream_csv(&*store, &c, &mut |chunk| {
                tx.blocking_send(Bytes::from(chunk)).is_ok()
            });
            if let Err(e) = sent {
                tracing::error!(campaign = c.id, "export stopped: {e}");
            }
        });
        return Ok((
            [(header::CONTENT_TYPE, format.content_type())],
            Body::new(ChannelBody(rx)),
        )
            .into_response());
    }
    let store = st.store.clone();
    let text = blocking(move || Ok(export::render(&*store, id, format)?))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadQuery, e))?;
    let mut resp = if complete {
        // A completed table changes no more (a quarantine that reopens a workunit makes the
        // campaign incomplete again): an ETag of its bytes lets clients revalidate for free.
        let etag = export::etag(&text);
        let cached = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| export::if_none_match_hits(v, &etag));
        let etag = HeaderValue::from_str(&etag).map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::Internal,
                e.to_string(),
            )
        })?;
        let mut resp = if cached {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            Body::from(text).into_response()
        };
        resp.headers_mut().insert(header::ETAG, etag);
        resp
    } else {
        Body::from(text).into_response()
    };
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    Ok(resp)
}

/// `?format=csv&start=N`: the header and the rows of one start, read from the whole table.
async fn start_rows(
    st: &AppState,
    id: u64,
    format: export::Format,
    start: String,
) -> Result<Response, ApiError> {
    let refused = |status, code, message| ApiError::new(status, code, message);
    if format != export::Format::Csv {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadQuery,
            "start selects rows of the CSV export only (format=csv)".into(),
        ));
    }
    let store = st.store.clone();
    let text = blocking(move || Ok(export::render(&*store, id, format)?))
        .await?
        .map_err(|e| refused(StatusCode::BAD_REQUEST, ErrorCode::BadQuery, e))?;
    let rows = rows_of(&format!("campaign {id}"), &text, &start).map_err(|e| match e {
        Refusal::BadStart(m) => refused(StatusCode::BAD_REQUEST, ErrorCode::BadQuery, m),
        Refusal::NoRow(m) => refused(StatusCode::NOT_FOUND, ErrorCode::NotFound, m),
    })?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], rows).into_response())
}

/// A response body fed by a channel: the export's blocking thread sends the chunks as it reads
/// them; the body ends when the sender is dropped.
struct ChannelBody(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// `GET /api/v1/campaigns/{id}/balance`: the balance report of an analysis campaign (JSON, or
/// `?format=svg` for the chart).
async fn balance(
    State(st): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
) -> Result<Response, ApiError> {
    let format = match q.format.as_deref().unwrap_or("json") {
        "json" => "balance",
        "svg" => "svg",
        other => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::BadQuery,
                format!("unknown format {other:?}; use json or svg"),
            ));
        }
    };
    table(
        State(st),
        headers,
        Path(id),
        Query(TableQuery {
            format: Some(format.into()),
            start: None,
        }),
    )
    .await
}
