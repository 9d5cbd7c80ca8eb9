//! The per-campaign tallies of `/api/v1/status` and the campaign pages (how many agreeing
//! workers each valid value rests on, the coordinator's share of the nodes;
//! [`crate::store::Store::campaign_tallies`]): a grouped read over every valid result, so it is
//! kept here and read again in the background once older than [`REFRESH`], never on the
//! request's time after the first (a page load must not recount a million results).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::model::{CampaignTally, StoreError};
use crate::store::Store;

/// How old the tallies may grow before a read starts a refresh.
pub const REFRESH: Duration = Duration::from_secs(10);

/// The tallies last read, and when.
#[derive(Default)]
pub struct Tallies {
    last: Mutex<Option<(Instant, Arc<Vec<CampaignTally>>)>>,
    refreshing: Arc<AtomicBool>,
}

impl Tallies {
    /// The tallies: read now the first time, then the last ones read (refreshed in the
    /// background when older than [`REFRESH`]). Call it off the async threads.
    pub fn get(
        self: &Arc<Self>,
        store: &Arc<dyn Store>,
    ) -> Result<Arc<Vec<CampaignTally>>, StoreError> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some((at, tallies)) = last else {
            let fresh = Arc::new(store.campaign_tallies()?);
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((Instant::now(), fresh.clone()));
            return Ok(fresh);
        };
        if at.elapsed() >= REFRESH && !self.refreshing.swap(true, Ordering::AcqRel) {
            let (me, store) = (self.clone(), store.clone());
            std::thread::spawn(move || {
                match store.campaign_tallies() {
                    Ok(fresh) => {
                        *me.last.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some((Instant::now(), Arc::new(fresh)));
                    }
                    Err(e) if e.is_storage_full() => {}
                    Err(e) => tracing::warn!("tallies: {e}"),
                }
                me.refreshing.store(false, Ordering::Release);
            });
        }
        Ok(tallies)
    }

    /// One campaign's tally, if it has one.
    pub fn of(
        self: &Arc<Self>,
        store: &Arc<dyn Store>,
        campaign: u64,
    ) -> Result<Option<CampaignTally>, StoreError> {
        Ok(self
            .get(store)?
            .iter()
            .find(|t| t.campaign == campaign)
            .cloned())
    }
}
