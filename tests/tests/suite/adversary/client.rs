//! A worker client that speaks the wire protocol itself, from an address of its choosing.

use std::net::IpAddr;
use std::time::Duration;

use c960_common::codec;
use c960_common::wire::{
    Assignment, BatchedOutcome, BatchedResult, CONTENT_TYPE, Capabilities, FetchBatchRequest,
    FetchBatchResponse, PROTOCOL_VERSION, RegisterRequest, RegisterResponse, SubmitBatchRequest,
    SubmitBatchResponse, WorkerAuth,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A worker client that may bind its own source address (127.0.X.Y: a different address
/// block per X), speaking the wire protocol directly.
#[derive(Clone)]
pub(super) struct RawClient {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
}

impl RawClient {
    pub(super) fn new(url: &str, from: Option<IpAddr>) -> RawClient {
        c960_worker::client::install_crypto_provider();
        RawClient {
            http: reqwest::Client::builder()
                .local_address(from)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            url: url.to_string(),
        }
    }

    /// POSTs a bincode request; `Err((status, code))` for a refusal.
    pub(super) async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        token: Option<&str>,
        req: &Req,
    ) -> Result<Resp, (u16, String)> {
        let mut post = self
            .http
            .post(format!("{}/api/v1/{path}", self.url))
            .header("content-type", CONTENT_TYPE)
            .body(codec::encode(req).unwrap());
        if let Some(t) = token {
            post = post.bearer_auth(t);
        }
        let resp = post.send().await.map_err(|e| (0, e.to_string()))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| (status, e.to_string()))?;
        if status != 200 {
            let code = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["code"].as_str().map(str::to_string))
                .unwrap_or_default();
            return Err((status, code));
        }
        Ok(codec::decode(&bytes).unwrap())
    }

    pub(super) async fn register(&self, name: &str) -> Result<WorkerAuth, (u16, String)> {
        let req = RegisterRequest {
            protocol: PROTOCOL_VERSION,
            name: name.into(),
            engine: c960_worker::client::engine(),
            threads: 1,
            hash_mib: 0,
            enrol_secret: None,
        };
        let r: RegisterResponse = self.call("register", None, &req).await?;
        Ok(r.auth)
    }

    pub(super) async fn fetch(
        &self,
        auth: &WorkerAuth,
        max: u32,
    ) -> Result<Vec<Assignment>, (u16, String)> {
        let req = FetchBatchRequest {
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities::builtin(),
            max_units: max,
        };
        match self.call("fetch-batch", Some(&auth.token), &req).await? {
            FetchBatchResponse::Assigned(a) => Ok(a),
            FetchBatchResponse::NoWork { .. } => Ok(Vec::new()),
        }
    }

    pub(super) async fn submit(
        &self,
        auth: &WorkerAuth,
        results: Vec<BatchedResult>,
    ) -> Result<Vec<BatchedOutcome>, (u16, String)> {
        let req = SubmitBatchRequest {
            protocol: PROTOCOL_VERSION,
            engine: c960_worker::client::engine(),
            results,
        };
        let r: SubmitBatchResponse = self.call("submit-batch", Some(&auth.token), &req).await?;
        Ok(r.outcomes)
    }
}
