//! Why a workunit could not be computed: one error type for perft, analysis and self-play.

/// Why a workunit could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// The workunit names a position this engine refuses.
    #[error("bad workunit position: {0}")]
    BadPosition(String),
    /// Cancelled (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
    /// The analysis engine hung, crashed, answered nonsense, or is not available here. Reported
    /// to the coordinator as a failed replica, never as a result.
    #[error("engine failed: {0}")]
    EngineFailed(String),
}
