//! The HTTP API, in layers. Bottom: [`error`] (the one error type), [`limits`] and [`auth`]
//! (rate limits, tokens: pure), [`tallies`] (per-campaign tallies, read in the background),
//! [`state`] (the shared state and tunables), [`extract`]
//! (extractors), [`layers`] (middleware, gzip, CORS) and [`session`] (one worker session for
//! both kinds of client: registration, hand-out, settlement). Above them, one file per route group:
//! [`workers`] (the worker protocol), [`boinc`] (BOINC's client protocol, `serve --boinc`),
//! [`admin`], [`public`] (status and exports), [`pages`] (the web pages), [`health`]
//! (`/metrics`, `/healthz`, `/readyz`). Nothing below the routes imports a route file (a test
//! checks it).
//!
//! Worker endpoints take and return bincode bodies ([`c960_common::codec`]) and, after
//! registration, a bearer token; human endpoints are public and return JSON, CSV or HTML; admin
//! endpoints need the admin token. Every refusal is an [`ApiError`]: HTTP status +
//! machine-readable code + message, as a JSON body on every endpoint; the decisions behind them
//! are the domain's ([`crate::work::judge`] for submitted results, the store's refusals), and the
//! status each gets is decided here ([`error`]). `docs/protocol.md` lists the codes.

pub mod admin;
pub mod auth;
pub mod boinc;
pub mod error;
pub mod extract;
pub mod health;
pub mod layers;
pub mod limits;
pub mod pages;
pub mod public;
pub mod session;
pub mod state;
pub mod tallies;
pub mod workers;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use c960_common::error_code::ErrorCode;
use c960_common::wire::MAX_BODY_BYTES;

pub use error::ApiError;
pub use state::{AppState, Config, Limits};

/// The router of the whole API, without a socket (tests call it directly or serve it).
///
/// Worker handlers report a bad body or protocol version before a missing or bad token, so a
/// protocol-1 worker (credentials in the body, no header) is told `unsupported_protocol`.
///
/// The per-address rate limit needs the peer address: serve it with
/// `into_make_service_with_connect_info::<SocketAddr>()` (without it, that limit is off); the
/// client's address is then the peer's, or behind a trusted proxy the one it forwards.
pub fn app(state: AppState) -> Router {
    // Public read-only endpoints and pages: gzip, any origin may read them.
    let public = public::routes(state.clone())
        .merge(pages::routes(state.store.clone(), state.tallies.clone()))
        .layer(layers::public_cors())
        .layer(layers::gzip());
    Router::new()
        .merge(workers::routes(state.clone()))
        .merge(boinc::routes(&state))
        .merge(admin::routes())
        .merge(public)
        .merge(health::routes(state.store.clone()))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                ErrorCode::NotFound,
                "no such endpoint",
            )
        })
        // Bodies other than the bincode ones (admin JSON) are bounded too.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            layers::timeout,
        ))
        .layer(axum::middleware::from_fn(layers::json_405))
        .layer(axum::middleware::from_fn(layers::security_headers))
        .layer(axum::middleware::from_fn(crate::net::metrics::track))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            layers::client,
        ))
        .with_state(state)
}

/// The layering of this module, checked on the source text: the files below the routes import
/// only files below themselves, and no route file imports another route file.
#[cfg(test)]
mod layout {
    /// Route files: handlers of one route group each.
    const ROUTES: [&str; 6] = ["workers", "admin", "public", "pages", "health", "boinc"];

    /// Each api file and the api modules it may import (bottom first).
    const ALLOWED: [(&str, &str, &[&str]); 14] = [
        ("error", include_str!("error.rs"), &[]),
        ("tallies", include_str!("tallies.rs"), &[]),
        ("limits", include_str!("limits.rs"), &["error"]),
        ("auth", include_str!("auth.rs"), &["error"]),
        (
            "state",
            include_str!("state.rs"),
            &["error", "limits", "auth", "tallies"],
        ),
        (
            "extract",
            include_str!("extract.rs"),
            &["error", "auth", "state"],
        ),
        (
            "layers",
            include_str!("layers.rs"),
            &["error", "limits", "state"],
        ),
        (
            "session",
            include_str!("session.rs"),
            &["error", "auth", "state"],
        ),
        (
            "workers",
            include_str!("workers.rs"),
            &["error", "auth", "extract", "layers", "session", "state"],
        ),
        (
            "boinc",
            include_str!("boinc.rs"),
            &["error", "auth", "extract", "layers", "session", "state"],
        ),
        (
            "admin",
            include_str!("admin.rs"),
            &["error", "auth", "extract", "state"],
        ),
        (
            "public",
            include_str!("public.rs"),
            &["error", "layers", "state"],
        ),
        ("pages", include_str!("pages/mod.rs"), &["tallies"]),
        ("health", include_str!("health.rs"), &[]),
    ];

    /// The api modules a file's code names (`super::m`, `super::{m, …}` or `crate::net::api::m`),
    /// doc comments and its own tests aside.
    fn imports(src: &str) -> Vec<String> {
        let code: String = src
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let ident = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let mut found = Vec::new();
        for prefix in ["super::", "crate::net::api::"] {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = &group[..group.find('}').unwrap_or(group.len())];
                    found.extend(group.split(',').map(ident));
                } else {
                    found.push(ident(rest));
                }
            }
        }
        found.retain(|m| !m.is_empty() && m != "self");
        found.sort();
        found.dedup();
        found
    }

    #[test]
    fn lower_layers_never_import_a_route_file_and_routes_not_each_other() {
        for (name, src, allowed) in ALLOWED {
            for m in imports(src) {
                assert!(
                    allowed.contains(&m.as_str()),
                    "api/{name} imports api/{m}, which is not below it"
                );
                assert!(
                    !ROUTES.contains(&m.as_str()),
                    "api/{name} imports the route file api/{m}"
                );
            }
        }
        // The pages' own files import nothing else of the API either.
        for src in [
            include_str!("pages/views.rs"),
            include_str!("pages/live.rs"),
            include_str!("pages/format.rs"),
            include_str!("pages/board.rs"),
            include_str!("pages/explorer.rs"),
        ] {
            assert!(!src.contains("crate::net::api::"), "pages import the API");
        }
        // The explorer's routes (whose `super::` is the pages') refuse with the one error type,
        // and import nothing else of the API.
        let explorer = include_str!("pages/positions.rs");
        let code = explorer.split("#[cfg(test)]").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::net::api::") {
            let rest = &code[at + "crate::net::api::".len()..];
            assert!(
                rest.starts_with("error::"),
                "pages/positions imports {rest:.30}"
            );
        }
    }

    #[test]
    fn the_check_sees_an_import() {
        assert_eq!(
            imports("use super::state::{AppState, blocking};"),
            ["state"]
        );
        assert_eq!(
            imports("use super::{error, layers};\n//! super::admin"),
            ["error", "layers"]
        );
        assert!(imports("#[cfg(test)]\nuse super::workers;").is_empty());
    }
}
