//! The HTTP client of the worker protocol: bincode over HTTP with reqwest; the API token goes
//! in `Authorization: Bearer …`.

use c960_common::error_code::ErrorCode;
use std::time::Duration;

use c960_common::codec;
use c960_common::wire::{
    AbandonRequest, AbandonResponse, BatchedResult, CONTENT_TYPE, Capabilities, EngineInfo,
    ErrorBody, FailRequest, FailResponse, FetchBatchRequest, FetchBatchResponse, FetchRequest,
    FetchResponse, HeartbeatRequest, HeartbeatResponse, LEGACY_MAX_BATCH, MAX_BATCH,
    MAX_BATCH_HEADER, MAX_BODY_BYTES, PROTOCOL_VERSION, RegisterRequest, RegisterResponse,
    StandingRequest, StandingResponse, SubmitBatchRequest, SubmitBatchResponse, SubmitRequest,
    SubmitResponse, WorkerAuth,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The coordinator could not be reached or the connection broke: retry later.
    #[error("cannot reach the coordinator: {0}")]
    Transport(String),
    /// The coordinator refused the request with a code (see `docs/protocol.md`).
    #[error("coordinator refused ({status} {code}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Machine-readable code.
        code: String,
        /// Message.
        message: String,
        /// The `Retry-After` the coordinator sent (429, 503), if any.
        retry_after: Option<Duration>,
    },
    /// The answer was not a valid message.
    #[error("bad answer from the coordinator: {0}")]
    BadAnswer(String),
}

impl ClientError {
    /// Whether retrying the same request later may succeed (server down, overloaded or failing).
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport(_) => true,
            ClientError::Refused { status, .. } => *status >= 500 || *status == 429,
            ClientError::BadAnswer(_) => true,
        }
    }

    /// Whether this is expected back-pressure rather than trouble: the coordinator asked to
    /// slow down (429: rate limit, lease cap), usually with a `Retry-After` the worker honours.
    pub fn is_back_pressure(&self) -> bool {
        matches!(self, ClientError::Refused { status: 429, .. })
    }

    /// How long the coordinator asked us to wait before retrying, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Refused { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The refusal code, if the coordinator refused with one this worker knows.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Refused { code, .. } => ErrorCode::parse(code),
            _ => None,
        }
    }
}

/// A client of one coordinator.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    enrol_secret: Option<String>,
    /// The engine named in registrations and submissions ([`engine`], or
    /// [`engine_with_seed`] for a worker whose perft table has its own Zobrist seed).
    engine: EngineInfo,
    /// The largest batch the coordinator takes, as its last answer said
    /// ([`c960_common::wire::MAX_BATCH_HEADER`]; [`LEGACY_MAX_BATCH`] until it says).
    max_batch: std::sync::Arc<std::sync::atomic::AtomicU32>,
}

impl Client {
    /// A client for the coordinator at `base` (e.g. `http://127.0.0.1:8960` or `https://…`).
    pub fn new(base: &str) -> Result<Client, ClientError> {
        Client::with_ca(base, None)
    }

    /// A client that also trusts the CA certificates in this PEM (for a coordinator with a
    /// private or self-signed certificate), besides the system's roots.
    pub fn with_ca(base: &str, ca_pem: Option<&[u8]>) -> Result<Client, ClientError> {
        install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            // Names this build to the coordinator, which shows it per worker.
            .user_agent(c960_cli::build_info::worker_build().user_agent());
        if let Some(pem) = ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ClientError::Transport(format!("bad CA file: {e}")))?;
            if certs.is_empty() {
                return Err(ClientError::Transport(
                    "the CA file holds no certificate".into(),
                ));
            }
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder
            .build()
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            enrol_secret: None,
            engine: engine(),
            max_batch: std::sync::Arc::new(LEGACY_MAX_BATCH.into()),
        })
    }

    /// The largest batch to ask for or submit: what the coordinator said it takes, within
    /// [`MAX_BATCH`] ([`LEGACY_MAX_BATCH`] from a coordinator that does not say).
    pub fn max_batch(&self) -> u32 {
        self.max_batch.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The same client, presenting this enrolment secret when it registers.
    pub fn with_enrol_secret(mut self, secret: Option<String>) -> Client {
        self.enrol_secret = secret;
        self
    }

    /// The same client naming `engine` in its registration and submissions.
    pub fn with_engine(mut self, engine: EngineInfo) -> Client {
        self.engine = engine;
        self
    }

    /// The coordinator's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        auth: Option<&WorkerAuth>,
        req: &Req,
    ) -> Result<Resp, ClientError> {
        let body = codec::encode(req).map_err(|e| ClientError::BadAnswer(e.to_string()))?;
        self.call_with(path, auth, body).await
    }

    /// [`Client::call`] with the request encoded already.
    async fn call_with<Resp: DeserializeOwned>(
        &self,
        path: &str,
        auth: Option<&WorkerAuth>,
        body: Vec<u8>,
    ) -> Result<Resp, ClientError> {
        let mut post = self
            .http
            .post(format!("{}/api/v1/{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
            .body(body);
        if let Some(a) = auth {
            post = post.bearer_auth(&a.token);
        }
        let resp = post.send().await.map_err(|e| self.transport(&e))?;
        let status = resp.status();
        if let Some(max) = resp
            .headers()
            .get(MAX_BATCH_HEADER)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u32>().ok())
        {
            self.max_batch.store(
                max.clamp(1, MAX_BATCH),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = resp.bytes().await.map_err(|e| self.transport(&e))?;
        if status.is_success() {
            return codec::decode(&bytes).map_err(|e| ClientError::BadAnswer(e.to_string()));
        }
        let (code, message) = match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(b) => (b.code, b.message),
            Err(_) => (
                "http_error".to_string(),
                String::from_utf8_lossy(&bytes).chars().take(200).collect(),
            ),
        };
        Err(ClientError::Refused {
            status: status.as_u16(),
            code,
            message,
            retry_after,
        })
    }

    fn transport(&self, e: &reqwest::Error) -> ClientError {
        ClientError::Transport(format!("{} ({})", describe(e), self.base))
    }

    /// Enrols a new worker.
    pub async fn register(
        &self,
        name: &str,
        threads: u32,
        hash_mib: u32,
    ) -> Result<WorkerAuth, ClientError> {
        let req = RegisterRequest {
            protocol: PROTOCOL_VERSION,
            name: name.to_string(),
            engine: self.engine.clone(),
            threads,
            hash_mib,
            enrol_secret: self.enrol_secret.clone(),
        };
        let resp: RegisterResponse = self.call("register", None, &req).await?;
        Ok(resp.auth)
    }

    /// Asks for a workunit.
    pub async fn fetch(
        &self,
        auth: &WorkerAuth,
        capabilities: &Capabilities,
    ) -> Result<FetchResponse, ClientError> {
        self.call(
            "fetch",
            Some(auth),
            &FetchRequest {
                protocol: PROTOCOL_VERSION,
                capabilities: capabilities.clone(),
            },
        )
        .await
    }

    /// Reports that a lease could not be computed (the engine failed).
    pub async fn fail(
        &self,
        auth: &WorkerAuth,
        lease_id: u64,
        reason: &str,
    ) -> Result<FailResponse, ClientError> {
        self.call(
            "fail",
            Some(auth),
            &FailRequest {
                protocol: PROTOCOL_VERSION,
                lease_id,
                reason: reason.chars().take(500).collect(),
            },
        )
        .await
    }

    /// Submits a result (the request is built by the caller, digest included).
    pub async fn submit(
        &self,
        auth: &WorkerAuth,
        req: &SubmitRequest,
    ) -> Result<SubmitResponse, ClientError> {
        self.call("submit", Some(auth), req).await
    }

    /// Asks for up to `max_units` workunits in one request.
    pub async fn fetch_batch(
        &self,
        auth: &WorkerAuth,
        capabilities: &Capabilities,
        max_units: u32,
    ) -> Result<FetchBatchResponse, ClientError> {
        self.call(
            "fetch-batch",
            Some(auth),
            &FetchBatchRequest {
                protocol: PROTOCOL_VERSION,
                capabilities: capabilities.clone(),
                max_units,
            },
        )
        .await
    }

    /// Submits several results in one request; the answer has one outcome per result.
    pub async fn submit_batch(
        &self,
        auth: &WorkerAuth,
        results: Vec<BatchedResult>,
    ) -> Result<SubmitBatchResponse, ClientError> {
        let req = SubmitBatchRequest {
            protocol: PROTOCOL_VERSION,
            engine: self.engine.clone(),
            results,
        };
        let body = codec::encode(&req).map_err(|e| ClientError::BadAnswer(e.to_string()))?;
        if body.len() <= MAX_BODY_BYTES || req.results.len() < 2 {
            return self.call_with("submit-batch", Some(auth), body).await;
        }
        // Over the coordinator's body limit (results with long divides or games): in halves,
        // one outcome per result all the same.
        let mut first = req.results;
        let second = first.split_off(first.len() / 2);
        let mut outcomes = Box::pin(self.submit_batch(auth, first)).await?.outcomes;
        outcomes.extend(Box::pin(self.submit_batch(auth, second)).await?.outcomes);
        Ok(SubmitBatchResponse { outcomes })
    }

    /// Renews the leases in hand (the worker is alive and computing them).
    pub async fn heartbeat(
        &self,
        auth: &WorkerAuth,
        lease_ids: Vec<u64>,
    ) -> Result<HeartbeatResponse, ClientError> {
        self.call(
            "heartbeat",
            Some(auth),
            &HeartbeatRequest {
                protocol: PROTOCOL_VERSION,
                lease_ids,
            },
        )
        .await
    }

    /// How this identity's results stand on the coordinator.
    pub async fn standing(&self, auth: &WorkerAuth) -> Result<StandingResponse, ClientError> {
        self.call(
            "standing",
            Some(auth),
            &StandingRequest {
                protocol: PROTOCOL_VERSION,
            },
        )
        .await
    }

    /// Gives a lease back.
    pub async fn abandon(
        &self,
        auth: &WorkerAuth,
        lease_id: u64,
    ) -> Result<AbandonResponse, ClientError> {
        self.call(
            "abandon",
            Some(auth),
            &AbandonRequest {
                protocol: PROTOCOL_VERSION,
                lease_id,
            },
        )
        .await
    }
}

/// Why a request did not get an answer, in the words a volunteer can act on: "connection
/// refused", "name not resolved", "TLS failure: …", "timeout", … . reqwest's own message is
/// "error sending request" for all of these; the cause is further down its source chain.
pub fn describe(e: &reqwest::Error) -> String {
    let mut causes: Vec<&(dyn std::error::Error + 'static)> = Vec::new();
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        causes.push(cause);
        // An io::Error wrapping another error (rustls's, say) reports that error's source,
        // not the error itself: look inside.
        if let Some(inner) = cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            causes.push(inner);
        }
        next = cause.source();
    }
    for cause in &causes {
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return format!("TLS failure: {tls}");
        }
    }
    for cause in &causes {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            let what = match io.kind() {
                ConnectionRefused => "connection refused",
                ConnectionReset => "connection reset",
                ConnectionAborted => "connection aborted",
                TimedOut => "timeout",
                HostUnreachable => "host unreachable",
                NetworkUnreachable => "network unreachable",
                AddrNotAvailable => "address not available",
                _ => continue,
            };
            return what.to_string();
        }
    }
    let text: Vec<String> = causes.iter().map(|c| c.to_string()).collect();
    let last = text.last().cloned().unwrap_or_else(|| e.to_string());
    if text.iter().any(|t| t.starts_with("dns error")) {
        return format!("name not resolved: {last}");
    }
    if e.is_timeout() {
        return "timeout".into();
    }
    // rustls's errors may arrive as text only (wrapped by the TLS connector).
    const TLS_WORDS: [&str; 4] = ["corrupt message", "certificate", "handshake", "tls"];
    if text
        .iter()
        .any(|t| TLS_WORDS.iter().any(|w| t.to_ascii_lowercase().contains(w)))
    {
        return format!("TLS failure: {last}");
    }
    if text.iter().any(|t| t.contains("invalid HTTP version")) {
        return format!("not an HTTP answer (an https:// server?): {last}");
    }
    if e.is_connect() {
        return format!("cannot connect: {last}");
    }
    last
}

/// Installs rustls's ring crypto provider for the process (idempotent). reqwest is built
/// without a default provider (ring avoids aws-lc's build needs), so any other
/// `reqwest::Client` made in this process, e.g. by tests, needs this first.
pub fn install_crypto_provider() {
    // Fails harmlessly when a provider is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// This build's engine.
pub fn engine() -> EngineInfo {
    EngineInfo {
        name: crate::ENGINE_NAME.to_string(),
        version: crate::ENGINE_VERSION.to_string(),
    }
}

/// This build's engine with the Zobrist seed of its perft table (`0.2.0 zobrist
/// 0123456789abcdef`): stored with every result, so a table's provenance can show that the two
/// replicas of a value were counted with different hash keys (a hash collision in one table
/// cannot then pass a quorum).
pub fn engine_with_seed(seed: u64) -> EngineInfo {
    EngineInfo {
        version: format!("{} zobrist {seed:016x}", crate::ENGINE_VERSION),
        ..engine()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn error_of(url: &str) -> String {
        let client = Client::new(url).unwrap();
        match client.register("t", 1, 0).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{url} answered"),
        }
    }

    #[tokio::test]
    async fn transport_errors_name_their_cause() {
        // A port nobody listens on: bind one, then close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let refused = error_of(&format!("http://127.0.0.1:{port}")).await;
        assert!(refused.contains("connection refused"), "{refused}");
        let unresolved = error_of("http://no-such-host.invalid").await;
        assert!(unresolved.contains("name not resolved"), "{unresolved}");
        // TLS spoken to a plain TCP server that answers garbage.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                use tokio::io::AsyncWriteExt;
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
            }
        });
        let tls = error_of(&format!("https://{addr}")).await;
        assert!(tls.contains("TLS failure"), "{tls}");
    }

    #[test]
    fn only_a_429_is_back_pressure() {
        let refused = |status: u16, code: &str| ClientError::Refused {
            status,
            code: code.into(),
            message: String::new(),
            retry_after: Some(Duration::from_secs(1)),
        };
        assert!(refused(429, "rate_limited").is_back_pressure());
        assert!(refused(429, "lease_limit").is_back_pressure());
        assert!(!refused(503, "timeout").is_back_pressure());
        assert!(!refused(500, "internal").is_back_pressure());
        assert!(!ClientError::Transport("connection refused".into()).is_back_pressure());
    }
}
