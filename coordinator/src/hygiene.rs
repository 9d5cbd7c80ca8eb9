//! HTTP hygiene shared by every route: gzip and CORS for the public read-only endpoints, and a
//! JSON body for a 405 (axum answers it with an empty body).

use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use c960_common::wire::ErrorBody;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};

/// Gzip when the client accepts it.
pub fn gzip() -> CompressionLayer {
    CompressionLayer::new()
        .gzip(true)
        .no_br()
        .no_deflate()
        .no_zstd()
}

/// Any origin may read (GET/HEAD) the public endpoints; no credentials are involved.
pub fn public_cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::HEAD])
}

/// Turns an empty 405 into the API's JSON error body, keeping its `Allow` header.
pub async fn json_405(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    if resp.status() != StatusCode::METHOD_NOT_ALLOWED
        || resp.headers().contains_key(header::CONTENT_TYPE)
    {
        return resp;
    }
    let allow = resp.headers().get(header::ALLOW).cloned();
    let mut out = (
        StatusCode::METHOD_NOT_ALLOWED,
        axum::Json(ErrorBody {
            code: "method_not_allowed".into(),
            message: format!(
                "this endpoint does not take that method{}",
                allow
                    .as_ref()
                    .and_then(|a| a.to_str().ok())
                    .map(|a| format!("; it allows {a}"))
                    .unwrap_or_default()
            ),
        }),
    )
        .into_response();
    if let Some(a) = allow {
        out.headers_mut().insert(header::ALLOW, a);
    }
    out.extensions_mut()
        .insert(crate::metrics::RefusalCode("method_not_allowed"));
    out
}
