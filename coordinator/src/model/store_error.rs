//! The store's one error type.
use c960_common::error_code::ErrorCode;

/// Why a store operation failed. The domain variants map to 4xx responses; `Db` and `Backend`
/// are 500s.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No worker with this id.
    #[error("unknown worker {0}")]
    UnknownWorker(u64),
    /// No workunit with this id.
    #[error("unknown workunit {0}")]
    UnknownWorkunit(u64),
    /// No lease with this id (for this workunit).
    #[error("unknown lease {0}")]
    UnknownLease(u64),
    /// The lease belongs to another worker.
    #[error("lease {0} is held by another worker")]
    LeaseNotYours(u64),
    /// The lease was already answered, abandoned or refused.
    #[error("lease {0} is closed ({1})")]
    LeaseClosed(u64, &'static str),
    /// The lease deadline passed; the replica went to another worker.
    #[error("lease {0} expired")]
    LeaseExpired(u64),
    /// The worker already holds as many open leases as the coordinator allows.
    #[error("worker {worker} already holds {open} open leases (cap {cap})")]
    LeaseLimit {
        /// The worker.
        worker: u64,
        /// Its open leases.
        open: u64,
        /// The cap.
        cap: u64,
    },
    /// The worker is banned or quarantined (checked inside the assign transaction).
    #[error("worker {worker} is {}", if *.banned { "banned by the operator" } else { "quarantined: a failed check or refused results; its results are being re-verified" })]
    NotInGoodStanding {
        /// The worker.
        worker: u64,
        /// Banned (else quarantined).
        banned: bool,
    },
    /// No campaign with this id.
    #[error("unknown campaign {0}")]
    UnknownCampaign(u64),
    /// The operator's action does not apply to a cancelled campaign.
    #[error("campaign {0}: {1}")]
    CampaignCancelled(u64, &'static str),
    /// An enrolment token that registers nobody (the code: bad, revoked, exhausted).
    #[error("enrolment token refused ({0})")]
    Enrolment(ErrorCode),
    /// The database holds something impossible (or a stored value does not decode).
    #[error("database: {0}")]
    Db(String),
    /// The database driver failed. Its error is kept (PostgreSQL's retry rule reads its
    /// SQLSTATE) and said in the message, so it is not also the source: a chain printer (`{:#}`)
    /// would say it, and its own causes, again.
    #[error("database ({backend}): {cause}")]
    Backend {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// The driver's error.
        cause: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The database's disk is full: nothing was changed (SQLite's `SQLITE_FULL`, PostgreSQL's
    /// `disk_full`). The store says so once at WARN; requests get 503 with `Retry-After`.
    #[error("the coordinator's disk is full ({0}); nothing was changed: send it again later")]
    StorageFull(String),
    /// A request the store refuses on its merits (e.g. a campaign with bad parameters).
    #[error("{0}")]
    Bad(String),
}

impl StoreError {
    /// A driver error of `backend`, kept as its cause.
    pub fn backend(
        backend: &'static str,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Backend {
            backend,
            cause: Box::new(cause),
        }
    }

    /// The machine-readable code a refusal of this kind is answered with (`net/api/error.rs`
    /// decides the HTTP status).
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::UnknownWorker(_) => ErrorCode::UnknownWorker,
            StoreError::UnknownWorkunit(_) => ErrorCode::UnknownWorkunit,
            StoreError::UnknownLease(_) => ErrorCode::UnknownLease,
            StoreError::LeaseNotYours(_) => ErrorCode::LeaseNotYours,
            StoreError::LeaseClosed(..) => ErrorCode::LeaseClosed,
            StoreError::LeaseExpired(_) => ErrorCode::LeaseExpired,
            StoreError::LeaseLimit { .. } => ErrorCode::LeaseLimit,
            StoreError::NotInGoodStanding { banned: true, .. } => ErrorCode::WorkerBanned,
            StoreError::NotInGoodStanding { banned: false, .. } => ErrorCode::WorkerQuarantined,
            StoreError::UnknownCampaign(_) => ErrorCode::UnknownCampaign,
            StoreError::CampaignCancelled(..) => ErrorCode::CampaignCancelled,
            StoreError::Enrolment(code) => *code,
            StoreError::Db(_) | StoreError::Backend { .. } => ErrorCode::Internal,
            StoreError::StorageFull(_) => ErrorCode::StorageFull,
            StoreError::Bad(_) => ErrorCode::BadField,
        }
    }

    /// Whether this is the database's failure (a 500 or, for a full disk, a 503, and it aborts
    /// a whole batch) rather than a refusal on the request's merits.
    pub fn is_internal(&self) -> bool {
        matches!(
            self,
            StoreError::Db(_) | StoreError::Backend { .. } | StoreError::StorageFull(_)
        )
    }

    /// Whether the database's disk is full (nothing to log per request: the store said so).
    pub fn is_storage_full(&self) -> bool {
        matches!(self, StoreError::StorageFull(_))
    }
}

/// Result alias of the store.
pub type StoreResult<T> = Result<T, StoreError>;
