//! A full disk, as the store lives through it (issue 55). The database refuses writes
//! ([`StoreError::StorageFull`]: 503 `storage_full` with `Retry-After` over HTTP) and keeps
//! everything it had; reads still answer. The store says so once at WARN with the remedy, and
//! once at INFO when writes have succeeded for [`RECOVERED_AFTER_MS`] without another refusal
//! (a nearly full disk still takes the small writes: a heartbeat fits where a result does not,
//! so one success proves little). Until then every writing transaction first extends the leases
//! whose deadline passed while the disk was full
//! ([`super::sql::extend_leases_lapsed_since`]), since their workers could not renew them nor
//! send their results, which they kept and send again.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::model::{StoreError, StoreResult};

/// How long writes must succeed, with no refusal for a full disk, before the disk counts as
/// having space again.
pub const RECOVERED_AFTER_MS: i64 = 5_000;

/// Whether the database's disk is full, since when, and when it last refused a write.
#[derive(Debug, Default)]
pub struct DiskWatch {
    /// When the disk was first found full (the coordinator's clock, ms); 0 while it is not.
    full_since_ms: AtomicI64,
    /// When it last refused a write.
    last_full_ms: AtomicI64,
}

impl DiskWatch {
    /// Since when the disk has been full, while it is.
    pub fn full_since(&self) -> Option<i64> {
        Some(self.full_since_ms.load(Ordering::Relaxed)).filter(|&ms| ms != 0)
    }

    /// Takes note of a writing transaction's outcome at `now_ms` on the database `shown`.
    pub fn observe<T>(&self, out: &StoreResult<T>, shown: &str, now_ms: i64) {
        match out {
            Err(StoreError::StorageFull(cause)) => {
                self.last_full_ms.store(now_ms, Ordering::Relaxed);
                let first = self
                    .full_since_ms
                    .compare_exchange(0, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok();
                if first {
                    tracing::warn!(
                        db = shown,
                        "the database's disk is full ({cause}): writes are refused with 503 \
                         storage_full and Retry-After until space is freed on its filesystem \
                         (delete or move files there, or grow it); reads and status still \
                         answer, workers keep their results and send them again"
                    );
                }
            }
            Ok(_) => {
                let Some(since) = self.full_since() else {
                    return;
                };
                let quiet = now_ms - self.last_full_ms.load(Ordering::Relaxed);
                if quiet >= RECOVERED_AFTER_MS
                    && self
                        .full_since_ms
                        .compare_exchange(since, 0, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    tracing::info!(
                        db = shown,
                        full_secs = (now_ms - since) / 1000,
                        "the database's disk has space again: writes are accepted; leases that \
                         lapsed meanwhile were extended"
                    );
                }
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_remembers_the_first_full_write_until_writes_succeed_for_a_while() {
        let w = DiskWatch::default();
        assert_eq!(w.full_since(), None);
        w.observe::<()>(&Err(StoreError::Bad("no".into())), "db", 5);
        assert_eq!(w.full_since(), None, "a refusal is not a full disk");
        w.observe::<()>(&Err(StoreError::StorageFull("full".into())), "db", 10);
        w.observe::<()>(&Err(StoreError::StorageFull("full".into())), "db", 20);
        assert_eq!(w.full_since(), Some(10), "since the first");
        w.observe::<()>(&Err(StoreError::Bad("no".into())), "db", 25);
        assert_eq!(w.full_since(), Some(10), "a refusal proves no space");
        w.observe(&Ok(()), "db", 30);
        assert_eq!(
            w.full_since(),
            Some(10),
            "a small write may fit on a full disk"
        );
        w.observe::<()>(&Err(StoreError::StorageFull("full".into())), "db", 1_000);
        w.observe(&Ok(()), "db", 1_000 + RECOVERED_AFTER_MS - 1);
        assert_eq!(w.full_since(), Some(10), "refused again meanwhile");
        w.observe(&Ok(()), "db", 1_000 + RECOVERED_AFTER_MS);
        assert_eq!(w.full_since(), None);
    }
}
