//! The per-campaign tallies of `/api/v1/status` and the campaign pages (how many agreeing
//! workers each valid value rests on, the coordinator's share of the nodes;
//! [`crate::store::Store::campaign_tallies`]): a grouped read over every valid result, so it is
//! kept here and read again in the background, never on a request's time. A request waits at
//! most [`FIRST_WAIT`] for the first read (a small store's is instant; a store of millions of
//! results after a restart took longer than the request timeout) and otherwise answers with
//! what it has, none the first time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::model::{CampaignTally, StoreError};
use crate::store::Store;

/// How old the tallies may grow before a read starts a refresh, at least.
pub const REFRESH: Duration = Duration::from_secs(10);

/// A refresh waits at least this many times as long as the last read took, so that rereading a
/// large store costs at most 1/20 of a core however often pages are loaded.
const SPACING: u32 = 20;

/// How long a request waits for the first read.
pub const FIRST_WAIT: Duration = Duration::from_secs(2);

/// The tallies last read: when, what, and how long the read took.
struct Read {
    at: Instant,
    took: Duration,
    tallies: Arc<Vec<CampaignTally>>,
}

/// The tallies last read, and whether a read is under way.
#[derive(Default)]
pub struct Tallies {
    last: Mutex<Option<Read>>,
    read: Condvar,
    refreshing: AtomicBool,
}

/// When tallies read at `at`, in `took`, are due to be read again.
fn due(at: Instant, took: Duration) -> Instant {
    at + REFRESH.max(took * SPACING)
}

impl Tallies {
    /// The tallies last read, starting a background read when there are none or they are due
    /// ([`due`]); the first time, waits up to [`FIRST_WAIT`] for it. Call it off the async
    /// threads.
    pub fn get(self: &Arc<Self>, store: &Arc<dyn Store>) -> Arc<Vec<CampaignTally>> {
        let store = store.clone();
        self.get_from(move || store.campaign_tallies())
    }

    /// [`Tallies::get`], reading them with `read`.
    fn get_from(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Vec<CampaignTally>, StoreError> + Send + 'static,
    ) -> Arc<Vec<CampaignTally>> {
        let last = self.lock();
        let stale = last
            .as_ref()
            .is_none_or(|r| Instant::now() >= due(r.at, r.took));
        if stale && !self.refreshing.swap(true, Ordering::AcqRel) {
            self.refresh(read);
        }
        match &*last {
            Some(r) => r.tallies.clone(),
            None => {
                let (last, _) = self
                    .read
                    .wait_timeout_while(last, FIRST_WAIT, |l| l.is_none())
                    .unwrap_or_else(|e| e.into_inner());
                last.as_ref().map(|r| r.tallies.clone()).unwrap_or_default()
            }
        }
    }

    /// One campaign's tally, if it has one.
    pub fn of(self: &Arc<Self>, store: &Arc<dyn Store>, campaign: u64) -> Option<CampaignTally> {
        self.get(store)
            .iter()
            .find(|t| t.campaign == campaign)
            .cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Read>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the tallies on a thread of its own and keeps them (a failed read keeps the last).
    fn refresh(
        self: &Arc<Self>,
        read: impl FnOnce() -> Result<Vec<CampaignTally>, StoreError> + Send + 'static,
    ) {
        let me = self.clone();
        std::thread::spawn(move || {
            let began = Instant::now();
            match read() {
                Ok(fresh) => {
                    *me.lock() = Some(Read {
                        at: Instant::now(),
                        took: began.elapsed(),
                        tallies: Arc::new(fresh),
                    });
                    me.read.notify_all();
                }
                Err(e) if e.is_storage_full() => {}
                Err(e) => tracing::warn!("tallies: {e}"),
            }
            me.refreshing.store(false, Ordering::Release);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_read_is_repeated_less_often() {
        let at = Instant::now();
        assert_eq!(due(at, Duration::from_millis(3)), at + REFRESH);
        assert_eq!(
            due(at, Duration::from_secs(4)),
            at + Duration::from_secs(80)
        );
    }

    #[test]
    fn a_slow_first_read_does_not_hold_the_request() {
        let tallies = Arc::new(Tallies::default());
        let finished = Arc::new(AtomicBool::new(false));
        let done = finished.clone();
        let slow = move || {
            std::thread::sleep(FIRST_WAIT * 3);
            done.store(true, Ordering::Release);
            Ok(vec![CampaignTally {
                campaign: 7,
                ..CampaignTally::default()
            }])
        };
        // The request answers, with no tallies, while the read is still going on ...
        assert!(tallies.get_from(slow).is_empty());
        assert!(!finished.load(Ordering::Acquire));
        // ... and a later one gets what it read, without reading again.
        std::thread::sleep(FIRST_WAIT * 3);
        let got = tallies.get_from(|| panic!("read again"));
        assert_eq!(got[0].campaign, 7);
        // A quick first read is waited for.
        let fresh = Arc::new(Tallies::default());
        assert_eq!(
            fresh.get_from(|| Ok(vec![CampaignTally::default()])).len(),
            1
        );
    }
}
