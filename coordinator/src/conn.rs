//! Connections of `serve`: how many one client address (and everyone together) may hold open, and
//! how long a connection may sit without sending a request.
//!
//! A client that opens connections and sends nothing, or sends its headers a byte at a time
//! (slowloris), would otherwise hold a file descriptor each for ever; a thousand of them exhaust
//! the descriptor limit and nobody else gets an answer. So:
//! - [`GatedListener`] refuses (accepts and at once closes) a connection beyond
//!   [`ConnLimits::per_address`] from its address or [`ConnLimits::total`] in all; the count is
//!   held by a [`Permit`] inside the stream, so it covers TLS handshakes too;
//! - hyper's header-read timeout closes an HTTP/1 connection whose request head takes longer than
//!   [`ConnLimits::header_timeout`], counted from when the server starts waiting for it (so it
//!   bounds idle keep-alives as well);
//! - a watchdog closes a connection on which nothing was read or written for
//!   [`ConnLimits::idle_timeout`] while no request of it is being handled (silent new
//!   connections, idle HTTP/2, clients that stop reading their answer).
//!
//! The admission rule is the pure [`admits`]; the rest is plumbing.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::Service;

use crate::proxies::TrustedProxies;

/// Operator limits on connections (`serve` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections one client address may hold open (0: no cap).
    pub per_address: usize,
    /// Connections open in all (0: no cap). Keep it below the descriptor limit (`ulimit -n`)
    /// with room for the database and logs.
    pub total: usize,
    /// Longest time to receive a request's head, from when the server starts waiting for it.
    pub header_timeout: Duration,
    /// Longest time a connection may go without any byte read or written while none of its
    /// requests is being handled.
    pub idle_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            per_address: 64,
            total: 768,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// Whether one more connection may open, given how many are open in all and from its address.
pub fn admits(limits: &ConnLimits, open_total: usize, open_from_address: usize) -> bool {
    (limits.total == 0 || open_total < limits.total)
        && (limits.per_address == 0 || open_from_address < limits.per_address)
}

/// Open connections, in all and per address.
#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// The shared connection counter of one listener.
struct Gate {
    limits: ConnLimits,
    /// Trusted reverse proxies carry many clients' connections: only the total cap applies.
    proxies: TrustedProxies,
    counts: Mutex<Counts>,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Permit> {
        let mut c = self.lock();
        let from = match self.proxies.contains(ip) {
            true => 0,
            false => c.by_address.get(&ip).copied().unwrap_or(0),
        };
        if !admits(&self.limits, c.total, from) {
            return None;
        }
        c.total += 1;
        *c.by_address.entry(ip).or_insert(0) += 1;
        Some(Permit {
            gate: self.clone(),
            ip,
        })
    }
}

/// One open connection's place in the count; given back when the connection is dropped.
pub struct Permit {
    gate: Arc<Gate>,
    ip: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut c = self.gate.lock();
        c.total -= 1;
        if let Some(n) = c.by_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.by_address.remove(&self.ip);
            }
        }
    }
}

/// When a connection last moved a byte, and how many of its requests are being handled.
pub struct Activity {
    opened: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        })
    }

    fn touch(&self) {
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// How long nothing has moved, or zero while a request is being handled.
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(last)
    }
}

/// Marks a request as being handled for as long as it lives.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(a: &Arc<Activity>) -> InFlight {
        a.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A stream that holds its connection's [`Permit`] and records its [`Activity`].
pub struct Gated<S> {
    inner: S,
    activity: Arc<Activity>,
    _permit: Permit,
}

/// A connection whose activity the idle watchdog can see.
pub trait Watched {
    /// The connection's activity record.
    fn activity(&self) -> Arc<Activity>;
}

impl<S> Watched for Gated<S> {
    fn activity(&self) -> Arc<Activity> {
        self.activity.clone()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Gated<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gated<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A TCP listener that admits connections within the [`ConnLimits`] and closes the others.
pub struct GatedListener {
    tcp: TcpListener,
    gate: Arc<Gate>,
}

impl GatedListener {
    /// Gates `tcp` with `limits`.
    pub fn new(tcp: TcpListener, limits: ConnLimits) -> GatedListener {
        GatedListener::behind(tcp, limits, TrustedProxies::default())
    }

    /// Gates `tcp` with `limits`, except that connections from trusted `proxies` count only
    /// against the total cap (each carries many clients).
    pub fn behind(tcp: TcpListener, limits: ConnLimits, proxies: TrustedProxies) -> GatedListener {
        GatedListener {
            tcp,
            gate: Arc::new(Gate {
                limits,
                proxies,
                counts: Mutex::default(),
            }),
        }
    }

    /// The limits it applies.
    pub fn limits(&self) -> ConnLimits {
        self.gate.limits
    }

    /// The next admitted connection.
    pub async fn accept_gated(&self) -> (Gated<TcpStream>, SocketAddr) {
        loop {
            let (stream, peer) = match self.tcp.accept().await {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match self.gate.admit(peer.ip()) {
                Some(permit) => {
                    let activity = Activity::new();
                    return (
                        Gated {
                            inner: stream,
                            activity,
                            _permit: permit,
                        },
                        peer,
                    );
                }
                // Dropping the stream closes it at once: the descriptor is free again.
                None => tracing::debug!(%peer, "connection refused: too many open"),
            }
        }
    }
}

impl Listener for GatedListener {
    type Io = Gated<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        self.accept_gated().await
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets open requests finish.
/// Every request carries its peer address as `ConnectInfo<SocketAddr>` (the per-address limits
/// need it). `limits` gives the header and idle timeouts (the listener applies the counts).
pub async fn serve<L>(
    mut listener: L,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()>
where
    L: Listener<Addr = SocketAddr>,
    L::Io: Watched,
{
    // Connection tasks hold `done_rx`; `done_tx.closed()` resolves when the last has ended.
    let (done_tx, done_rx) = watch::channel(());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let (io, peer) = tokio::select! {
            c = listener.accept() => c,
            _ = &mut shutdown => break,
        };
        let activity = io.activity();
        let router = app.clone();
        let requests = activity.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            let busy = InFlight::new(&requests);
            let mut router = router.clone();
            async move {
                let resp = router.call(req.map(Body::new)).await;
                drop(busy);
                resp
            }
        });
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let mut conn = pin!(builder.serve_connection(TokioIo::new(io), service));
            let period =
                (limits.idle_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
            let mut tick = tokio::time::interval(period);
            let mut stopping = false;
            loop {
                tokio::select! {
                    r = conn.as_mut() => {
                        if let Err(e) = r {
                            tracing::debug!(%peer, "connection ended: {e}");
                        }
                        break;
                    }
                    _ = stop.wait_for(|s| *s), if !stopping => {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                    _ = tick.tick() => {
                        if activity.idle_for() >= limits.idle_timeout {
                            tracing::debug!(%peer, "closing an idle connection");
                            break;
                        }
                    }
                }
            }
            drop(done);
        });
    }
    let _ = stop_tx.send(true);
    drop(done_rx);
    done_tx.closed().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_counts_per_address_and_in_all() {
        let l = ConnLimits {
            per_address: 2,
            total: 3,
            ..ConnLimits::default()
        };
        assert!(admits(&l, 0, 0));
        assert!(admits(&l, 2, 1));
        assert!(!admits(&l, 2, 2), "per address");
        assert!(!admits(&l, 3, 0), "in all");
        let unbounded = ConnLimits {
            per_address: 0,
            total: 0,
            ..l
        };
        assert!(admits(&unbounded, 1 << 20, 1 << 20));
    }

    #[test]
    fn permits_are_given_back() {
        let gate = Arc::new(Gate {
            limits: ConnLimits {
                per_address: 1,
                total: 2,
                ..ConnLimits::default()
            },
            proxies: TrustedProxies::default(),
            counts: Mutex::default(),
        });
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let p = gate.admit(a).unwrap();
        assert!(gate.admit(a).is_none());
        let q = gate.admit(b).unwrap();
        assert!(gate.admit([10, 0, 0, 3].into()).is_none());
        drop(p);
        assert!(gate.admit(a).is_some());
        drop(q);
        assert_eq!(gate.lock().total, 0);
        assert!(gate.lock().by_address.is_empty());
    }

    #[test]
    fn a_trusted_proxy_counts_only_against_the_total() {
        let gate = Arc::new(Gate {
            limits: ConnLimits {
                per_address: 1,
                total: 3,
                ..ConnLimits::default()
            },
            proxies: TrustedProxies::new(vec![crate::proxies::parse_proxy("10.0.0.1").unwrap()]),
            counts: Mutex::default(),
        });
        let proxy: IpAddr = [10, 0, 0, 1].into();
        let held: Vec<Permit> = (0..3).map(|_| gate.admit(proxy).unwrap()).collect();
        assert!(gate.admit(proxy).is_none(), "the total cap still holds");
        drop(held);
        let other: IpAddr = [10, 0, 0, 2].into();
        let _one = gate.admit(other).unwrap();
        assert!(
            gate.admit(other).is_none(),
            "others keep the per-address cap"
        );
    }
}
