//! Settling submitted results: each judged against its lease ([`crate::work::judge`]), every
//! settlement written in one transaction; and the checks on the labels a client sends. One
//! home for the native protocol's `submit` and `submit-batch` and for BOINC's upload handler,
//! so a result is judged the same way whichever client computed it.

use axum::http::StatusCode;
use c960_common::error_code::ErrorCode;
use c960_common::wire::BatchedResult;

use super::error::ApiError;
use crate::clock::now_ms;
use crate::store::Store;
use crate::work::judge::{Plan, judge};

/// A label a worker sent (`what`: `name`, `engine name`, …) checked by
/// [`crate::integrity::label::check_label`], or 400 `bad_field` (too long) / `bad_label` (a control,
/// line-break or bidirectional character).
pub(crate) fn check_label(what: &str, text: &str) -> Result<(), ApiError> {
    crate::integrity::label::check_label(text).map_err(|fault| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            fault.code(),
            format!("{what} {fault}"),
        )
    })
}

/// The engine as stored (`name version`), or the refusal of [`check_label`] for either part.
pub(crate) fn engine_label(e: &c960_common::wire::EngineInfo) -> Result<String, ApiError> {
    check_label("engine name", &e.name)?;
    check_label("engine version", &e.version)?;
    Ok(format!("{} {}", e.name, e.version))
}

/// Judges results ([`judge`]) and writes every settlement in one transaction; one outcome per
/// result. Stops, writing nothing, once `dropped` says the request was answered without it (the
/// timeout's 503) or its client is gone: judging a result may cost real work (a self-play
/// result's games are read and replayed), which must not go on for nobody.
pub(crate) fn settle_results(
    store: &dyn Store,
    worker_id: u64,
    results: Vec<BatchedResult>,
    engine: &str,
    max_nodes_per_sec: u64,
    dropped: &dyn Fn() -> bool,
) -> Result<Vec<Result<(), ApiError>>, ApiError> {
    let stopped = || {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Timeout,
            "the request ended before its results were judged",
        )
    };
    let ids: Vec<u64> = results.iter().map(|r| r.lease_id).collect();
    let leases = store.leases(&ids)?;
    let now = now_ms();
    let mut verdicts = Vec::with_capacity(results.len());
    for (r, lease) in results.into_iter().zip(leases) {
        if dropped() {
            return Err(stopped());
        }
        verdicts.push(judge(worker_id, lease, r, engine, now, max_nodes_per_sec));
    }
    if dropped() {
        return Err(stopped());
    }
    let plan = Plan::of(verdicts);
    let written = if plan.settlements.is_empty() {
        Vec::new()
    } else {
        store.settle(worker_id, &plan.settlements, now)?
    };
    let outcomes: Vec<Result<(), ApiError>> = plan
        .finish(written)
        .into_iter()
        .map(|o| o.map_err(ApiError::from))
        .collect();
    crate::net::metrics::results_settled(
        worker_id,
        outcomes
            .iter()
            .map(|o| o.as_ref().err().map(|e| e.code.as_str())),
    );
    Ok(outcomes)
}
