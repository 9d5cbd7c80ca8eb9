//! The front doors: the HTTP API and pages ([`api`]), BOINC's protocol for the stock client
//! ([`boinc`]), `serve`'s connection loop ([`conn`]), TLS ([`tls`]), trusted proxies
//! ([`proxies`]) and the Prometheus metrics ([`metrics`]).

pub mod api;
pub mod boinc;
pub mod conn;
pub mod metrics;
pub mod proxies;
pub mod tls;
