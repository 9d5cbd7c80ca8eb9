//! The layers around the routes: the client's address ([`crate::net::proxies`]), the rate-limit
//! middleware ([`super::limits`]), the request
//! timeout, gzip and CORS for the public read-only endpoints, a JSON body for a 405 (axum
//! answers it with an empty body), and the security headers of every response. Below the
//! routes.

use c960_common::error_code::ErrorCode;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use c960_common::wire::ErrorBody;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};

use super::error::ApiError;
use super::state::AppState;
use crate::net::proxies::{ClientAddr, client_address};

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

/// The Content-Security-Policy of every response: scripts, styles, images and fetches from this
/// origin only, so nothing inline runs (the pages' script and stylesheet are files under
/// `/assets/`, and their progress bars are `<progress>` elements, not inline styles); no
/// plugins, no `<base>`, forms only to this origin, and no page inside another site's frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Middleware: every response says how a browser may use it: [`CONTENT_SECURITY_POLICY`],
/// `X-Frame-Options: DENY` (the same as `frame-ancestors 'none'` for browsers without CSP 2),
/// and `X-Content-Type-Options: nosniff` (a CSV or JSON export is never run as a script or
/// shown as HTML, whatever it holds).
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Turns an empty 405 into the API's JSON error body.
pub async fn json_405(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    if resp.status() != StatusCode::METHOD_NOT_ALLOWED
        || resp.headers().contains_key(header::CONTENT_TYPE)
    {
        return resp;
    }
    // The router adds `Allow` to the response around this layer.
    let mut out = (
        StatusCode::METHOD_NOT_ALLOWED,
        axum::Json(ErrorBody {
            code: "method_not_allowed".into(),
            message:
                "this endpoint does not take that method; the Allow header lists those it takes"
                    .into(),
        }),
    )
        .into_response();
    out.extensions_mut()
        .insert(crate::net::metrics::RefusalCode("method_not_allowed"));
    out
}

/// Middleware, outermost: finds the client's address ([`client_address`]: the TCP peer, or
/// behind a trusted proxy the address it forwards) and puts it in the request's extensions as
/// [`ClientAddr`] for the rate limits, address blocks and log lines. Without connect info
/// (tests calling the router directly) there is none.
pub async fn client(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>().copied() {
        let forwarded = req
            .headers()
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok());
        let ip = client_address(&st.config.trusted_proxies, peer.ip(), forwarded);
        if ip == peer.ip() && req.headers().contains_key("x-forwarded-for") {
            warn_unnamed_proxy(peer.ip());
        }
        req.extensions_mut().insert(ClientAddr(ip));
    }
    next.run(req).await
}

/// Says once that a local peer forwards clients' addresses without being named a trusted proxy:
/// every volunteer behind it then shares its loopback or private address, whose block does not
/// separate replicas by default, and one per-address limit.
fn warn_unnamed_proxy(peer: std::net::IpAddr) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let local =
        crate::integrity::trust::is_local_block(&crate::integrity::trust::address_block(peer));
    if local && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            "requests from {peer} carry X-Forwarded-For, but {peer} is not a trusted proxy: every client behind it shares its address (one rate limit, and replicas of one local address pair). If it is your reverse proxy, run serve with --trusted-proxy {peer}"
        );
    }
}

/// Middleware: the per-address limit, by the client's address ([`client`]).
pub async fn per_address(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(ip) = ClientAddr::of(req.extensions())
        && let Err(e) = st.limiter.check_address(ip)
    {
        return e.into_response();
    }
    next.run(req).await
}

/// Middleware: the per-address limit of the table exports (429 `rate_limited` + `Retry-After`).
/// A request bearing the admin token is the operator's and is not limited (the limit keeps
/// the public from making the coordinator read whole campaigns at will, not its operator from
/// reading them); any other bearer counts as a failed admin attempt
/// ([`AppState::check_admin`]), so the
/// exports are no way around the admin token's guessing limit, and is then limited as usual.
pub async fn exports(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let ip = ClientAddr::of(req.extensions());
    let operator = req.headers().contains_key(header::AUTHORIZATION)
        && st.check_admin(req.headers(), ip).is_ok();
    if !operator
        && let Some(ip) = ip
        && let Err(e) = st.limiter.check_export(ip)
    {
        return e.into_response();
    }
    next.run(req).await
}

/// Middleware: every request finishes within the configured time or gets 503 `timeout`. A
/// store transaction already started still commits or rolls back as a whole, so a timed-out
/// submission is either stored or not; the worker retries and learns which (`lease_closed`).
pub async fn timeout(State(st): State<AppState>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(st.config.limits.request_timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Timeout,
            "the request took too long",
        )
        .with_retry_after(1)
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;
    use crate::model::StoreError;

    async fn call(app: Router, req: Request) -> (StatusCode, String) {
        let resp = app.oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_500_hides_the_internal_error_and_a_405_is_json() {
        let app = Router::new()
            .route(
                "/broken",
                get(|| async {
                    ApiError::from(StoreError::Db(
                        "disk I/O error in /var/lib/secret.db".into(),
                    ))
                }),
            )
            .layer(axum::middleware::from_fn(json_405));
        let get_req = |uri: &str| Request::get(uri).body(Body::empty()).unwrap();
        let (status, body) = call(app.clone(), get_req("/broken")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["code"], "internal");
        assert!(!body.contains("secret") && !body.contains("disk"), "{body}");

        let post = Request::post("/broken").body(Body::empty()).unwrap();
        let (status, body) = call(app, post).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["code"], "method_not_allowed");
    }

    #[tokio::test]
    async fn every_response_carries_the_security_headers() {
        let app = Router::new()
            .route(
                "/page",
                get(|| async {
                    maud::html! { p { "hi" } }
                }),
            )
            .layer(axum::middleware::from_fn(security_headers));
        for uri in ["/page", "/missing"] {
            let resp = app
                .clone()
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            let h = resp.headers();
            let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            assert!(csp.contains("script-src 'self';"), "{uri}: {csp}");
            assert!(csp.contains("frame-ancestors 'none'"), "{uri}: {csp}");
            assert!(!csp.contains("unsafe-inline"), "{uri}: {csp}");
            assert_eq!(h[header::X_FRAME_OPTIONS], "DENY", "{uri}");
            assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{uri}");
        }
    }
}
