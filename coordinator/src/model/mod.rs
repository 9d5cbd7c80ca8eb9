//! The coordinator's vocabulary: the records the store reads and writes, the small states every
//! layer names, and the store's one error type. The ground floor: this module imports nothing of
//! the coordinator, so the pure rules above it, the store that implements the persistence
//! contract over it and the front doors all speak it without importing one another.
//!
//! - [`disputes`]: two results that disagree, settled by bisection, and their challenges.
//! - [`records`]: campaigns, workers, leases, results, progress, checks, settlements.
//! - [`states`]: campaign status and actions, replica states, trust levels, digests.
//! - [`standings`]: what the pages' read-only queries return (leaderboard, a worker's history).
//! - [`store_error`]: [`StoreError`], a refusal's or a failure's reason (domain variants map to 4xx).

pub mod disputes;
pub mod records;
pub mod standings;
pub mod states;
pub mod store_error;

pub use records::*;
pub use states::*;
pub use store_error::{StoreError, StoreResult};
