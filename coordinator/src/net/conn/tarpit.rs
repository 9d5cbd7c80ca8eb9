//! Refused connections held open a moment before they are closed ([`HOLD`]), a bounded number
//! at once.
//!
//! Why: a client that reconnects as soon as its connection is closed turns every refusal into a
//! new connection at once, hundreds of thousands a minute from a few hundred sockets; they fill
//! the kernel's accept queue, and a status probe's handshake waits behind them or is dropped
//! (measured in `docs/security-results.md`, issue 31: p99 2 s before this). Held for [`HOLD`], each
//! of those sockets comes back at most once per hold. The held ones cost a descriptor each, so
//! their number is bounded (`serve` gives them half the descriptors the connection cap leaves:
//! [`super::held_for_descriptors`]); beyond it a refused connection is closed at once, as before.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long a refused connection is held before it is closed.
pub const HOLD: Duration = Duration::from_secs(2);

/// Where refused connections wait to be closed.
pub(super) struct Tarpit {
    tx: mpsc::Sender<TcpStream>,
}

impl Tarpit {
    /// A tarpit holding at most `capacity` connections (and as many more, at most 64, waiting
    /// to be taken in), on a task of its own, which ends when the tarpit is dropped; `None`
    /// for 0.
    pub(super) fn spawn(capacity: usize) -> Option<Tarpit> {
        if capacity == 0 {
            return None;
        }
        let (tx, mut rx) = mpsc::channel::<TcpStream>(capacity.min(64));
        tokio::spawn(async move {
            let mut held: VecDeque<(Instant, TcpStream)> = VecDeque::new();
            loop {
                let due = held.front().map(|(at, _)| *at + HOLD);
                tokio::select! {
                    s = rx.recv(), if held.len() < capacity => match s {
                        Some(s) => held.push_back((Instant::now(), s)),
                        None => return,
                    },
                    _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                        held.pop_front();
                    }
                }
            }
        });
        Some(Tarpit { tx })
    }

    /// Holds `stream` for [`HOLD`], or closes it at once when the tarpit is full.
    pub(super) fn hold(&self, stream: TcpStream) {
        // A full channel hands the stream back in the error, dropped (closed) here.
        let _ = self.tx.try_send(stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Whether the peer closed `s` within `limit`.
    async fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
        let mut buf = [0u8; 8];
        matches!(
            tokio::time::timeout(limit, s.read(&mut buf)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    #[tokio::test]
    async fn refused_connections_are_held_then_closed_and_bounded() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tarpit = Tarpit::spawn(2).unwrap();
        let mut clients = Vec::new();
        for _ in 0..70 {
            clients.push(TcpStream::connect(addr).await.unwrap());
            tarpit.hold(listener.accept().await.unwrap().0);
        }
        // Two held and two waiting to be taken in at most; the others closed at once.
        let mut at_once = 0;
        for c in &mut clients {
            if closed_within(c, Duration::from_millis(300)).await {
                at_once += 1;
            }
        }
        assert!((66..70).contains(&at_once), "{at_once} closed at once");
        // The first is closed once its hold is over.
        assert!(closed_within(&mut clients[0], HOLD * 2).await);
    }
}
