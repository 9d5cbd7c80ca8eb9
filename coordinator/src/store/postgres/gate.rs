//! [`Gate`]: at most so many writing transactions of one coordinator at once.
//!
//! Why: a writing transaction of the store is a few statements that keep PostgreSQL's CPU busy
//! between round trips. With more of them in flight than the database has cores, they only
//! take turns on those cores while holding row locks, so the assignment query skips more
//! locked workunits, lock waits grow, and the server spends its time switching. Measured with
//! the store benchmark on a 2-core machine (BENCHMARKS.md, issue 15): two coordinators with 16
//! writers each ran at about 70 % of the rate of two with 2 each. Reads and exports do not pass
//! the gate, so a long export never holds up handouts, and the pool stays larger than the gate.

use std::sync::{Condvar, Mutex, PoisonError};

/// A counting gate for blocking threads (the store is called from `spawn_blocking` threads).
#[derive(Debug)]
pub struct Gate {
    free: Mutex<u32>,
    freed: Condvar,
}

/// A place in the [`Gate`], given back when dropped (also when the transaction panics).
#[derive(Debug)]
pub struct Pass<'a>(&'a Gate);

impl Gate {
    /// A gate for `places` holders at once (at least 1).
    pub fn new(places: u32) -> Gate {
        Gate {
            free: Mutex::new(places.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Waits for a place.
    pub fn enter(&self) -> Pass<'_> {
        // A holder that panicked has already given its place back (Pass::drop), and the count
        // is a plain integer: a poisoned lock holds nothing half-done.
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Pass(self)
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn no_more_holders_than_places() {
        let gate = Arc::new(Gate::new(2));
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _pass = gate.enter();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2, "{most:?} inside at once");
        // Every place came back.
        assert_eq!(*gate.free.lock().unwrap(), 2);
    }

    #[test]
    fn a_place_comes_back_when_its_holder_panics() {
        let gate = Arc::new(Gate::new(1));
        let g = gate.clone();
        let _ = std::thread::spawn(move || {
            let _pass = g.enter();
            panic!("a transaction that panics");
        })
        .join();
        drop(gate.enter());
        assert_eq!(*gate.free.lock().unwrap(), 1);
    }
}
