//! Connections of `serve`: how many one client address, one address block and everyone together
//! may hold open, and how long a connection may sit without sending a request.
//!
//! A client that opens connections and sends nothing, or sends its headers a byte at a time
//! (slowloris), would otherwise hold a file descriptor each for ever; a thousand of them exhaust
//! the descriptor limit and nobody else gets an answer. So:
//! - `serve` raises its soft descriptor limit to the hard one ([`raise_descriptor_limit`]) and
//!   sizes the total cap from it ([`total_for_descriptors`]);
//! - [`GatedListener`] admits a connection by the pure rule [`admission()`]: beyond
//!   [`ConnLimits::per_address`] from its address or [`ConnLimits::per_block`] from its address
//!   block it is closed at once; at [`ConnLimits::total`] the oldest idle connection of the
//!   heaviest block is closed in its place when its own block is lighter (so new addresses,
//!   status probes and the operator get through a flood), else it is closed. A refused
//!   connection is held for [`HOLD`] before it is closed (a bounded number of them:
//!   [`ConnLimits::held_refusals`]), so a client that reconnects at once cannot spin. The count
//!   is held by a [`Permit`] inside the stream, so it covers TLS handshakes too;
//! - hyper's header-read timeout closes an HTTP/1 connection whose request head takes longer than
//!   [`ConnLimits::header_timeout`], counted from when the server starts waiting for it (so it
//!   bounds idle keep-alives as well);
//! - a watchdog closes a connection on which nothing was read or written for
//!   [`ConnLimits::idle_timeout`] while no request of it is being handled (silent new
//!   connections, idle HTTP/2, clients that stop reading their answer).

mod admission;
mod tarpit;

pub use admission::{
    Admission, ConnLimits, DEFAULT_PER_ADDRESS, DEFAULT_PER_BLOCK, FALLBACK_DESCRIPTORS, Load,
    MAX_DEFAULT_TOTAL, Refusal, admission, held_for_descriptors, total_for_descriptors,
};
pub use tarpit::HOLD;

use std::collections::{BTreeMap, HashMap};
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
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Notify, watch};
use tower::Service;

use crate::integrity::trust::address_block;
use crate::net::proxies::TrustedProxies;

/// Open connections, in all, per address and per address block (each block's in the order
/// they opened, so the oldest comes first).
#[derive(Default)]
struct Counts {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
    blocks: HashMap<String, BTreeMap<u64, Open>>,
    next_id: u64,
}

/// One open connection, as its block's record holds it.
struct Open {
    ip: IpAddr,
    activity: Arc<Activity>,
}

impl Counts {
    /// The open connections of the block holding the most.
    fn heaviest_block(&self) -> Option<(&String, usize)> {
        self.blocks
            .iter()
            .map(|(b, open)| (b, open.len()))
            .max_by_key(|(_, n)| *n)
    }

    /// Forgets connection `id` of `block`; false if it was not counted (already shed).
    fn remove(&mut self, block: &str, id: u64) -> bool {
        let Some(open) = self.blocks.get_mut(block) else {
            return false;
        };
        let Some(conn) = open.remove(&id) else {
            return false;
        };
        if open.is_empty() {
            self.blocks.remove(block);
        }
        self.total -= 1;
        if let Some(n) = self.by_address.get_mut(&conn.ip) {
            *n -= 1;
            if *n == 0 {
                self.by_address.remove(&conn.ip);
            }
        }
        true
    }

    /// Closes the oldest idle connection of the heaviest block (the oldest of all its
    /// connections when every one is busy) and stops counting it.
    fn shed_one(&mut self) {
        let Some((block, _)) = self.heaviest_block() else {
            return;
        };
        let block = block.clone();
        let open = &self.blocks[&block];
        let victim = open
            .iter()
            .find(|(_, c)| !c.activity.is_busy())
            .or_else(|| open.iter().next())
            .map(|(id, c)| (*id, c.activity.clone()));
        if let Some((id, activity)) = victim {
            self.remove(&block, id);
            activity.shed();
            tracing::debug!(%block, "closing a connection of the heaviest block to admit another");
        }
    }
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

    /// Counts a connection from `ip` with this activity record if [`admission()`] admits it.
    fn admit(self: &Arc<Self>, ip: IpAddr, activity: &Arc<Activity>) -> Result<Permit, Refusal> {
        let block = address_block(ip);
        let mut c = self.lock();
        let at_total = self.limits.total != 0 && c.total >= self.limits.total;
        let load = Load {
            total: c.total,
            address: c.by_address.get(&ip).copied().unwrap_or(0),
            block: c.blocks.get(&block).map_or(0, BTreeMap::len),
            heaviest_block: match at_total {
                true => c.heaviest_block().map_or(0, |(_, n)| n),
                false => 0,
            },
        };
        match admission(&self.limits, load, self.proxies.contains(ip)) {
            Admission::Refuse(r) => return Err(r),
            Admission::AdmitShedding => {
                c.shed_one();
                crate::net::metrics::connection_closed("shed");
            }
            Admission::Admit => {}
        }
        let id = c.next_id;
        c.next_id += 1;
        c.total += 1;
        *c.by_address.entry(ip).or_insert(0) += 1;
        c.blocks.entry(block.clone()).or_default().insert(
            id,
            Open {
                ip,
                activity: activity.clone(),
            },
        );
        Ok(Permit {
            gate: self.clone(),
            block,
            id,
        })
    }
}

/// The most descriptors asked for when the hard limit is higher or unlimited (Linux's default
/// `fs.nr_open`: a soft limit above it is refused).
const DESCRIPTORS_WANTED: u64 = 1 << 20;

/// Raises the process's soft limit on open files to its hard limit (at most
/// [`DESCRIPTORS_WANTED`]) and returns the limit now in force; [`FALLBACK_DESCRIPTORS`] where
/// the platform cannot tell. A failure is logged and leaves the limit as it was.
pub fn raise_descriptor_limit() -> u64 {
    #[cfg(unix)]
    match rlimit::increase_nofile_limit(DESCRIPTORS_WANTED) {
        Ok(n) => n.min(DESCRIPTORS_WANTED),
        Err(e) => {
            tracing::warn!("cannot raise the open-file limit: {e}");
            match rlimit::getrlimit(rlimit::Resource::NOFILE) {
                Ok((soft, _)) => soft.min(DESCRIPTORS_WANTED),
                Err(_) => FALLBACK_DESCRIPTORS,
            }
        }
    }
    #[cfg(not(unix))]
    FALLBACK_DESCRIPTORS
}

/// The listen backlog `serve` asks for (the kernel caps it at `net.core.somaxconn`, 4,096 on
/// current Linux): connections that reconnect together, such as a flood's after a header
/// timeout, overflow a short queue, and a dropped handshake is retried only after a second.
pub const BACKLOG: u32 = 4096;

/// A listener on `listen` (`HOST:PORT`, the first address it resolves to that binds) with a
/// [`BACKLOG`] long accept queue.
pub async fn bind(listen: &str) -> io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(listen).await? {
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        // As std's `TcpListener::bind` does: a restarted coordinator binds at once.
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(addr) {
            Ok(()) => return socket.listen(BACKLOG),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address")))
}

/// One open connection's place in the count; given back when the connection is dropped (or
/// at once when it is shed).
pub struct Permit {
    gate: Arc<Gate>,
    block: String,
    id: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.lock().remove(&self.block, self.id);
    }
}

/// When a connection last moved a byte, and how many of its requests are being handled.
pub struct Activity {
    opened: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
    /// Told when the gate sheds this connection to admit another ([`Admission::AdmitShedding`]).
    shed: Notify,
}

impl Activity {
    fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            shed: Notify::new(),
        })
    }

    /// Whether one of its requests is being handled.
    fn is_busy(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }

    /// Asks the connection's task to close it (remembered if the task is not waiting yet, e.g.
    /// during a TLS handshake).
    fn shed(&self) {
        self.shed.notify_one();
    }

    /// Resolves once the connection is shed.
    pub async fn shed_requested(&self) {
        self.shed.notified().await
    }

    fn touch(&self) {
        let now = self.opened.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// How long nothing has moved, or zero while a request is being handled.
    fn idle_for(&self) -> Duration {
        if self.is_busy() {
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
    /// Where refused connections wait to be closed (none when `held_refusals` is 0).
    tarpit: Option<tarpit::Tarpit>,
}

impl GatedListener {
    /// Gates `tcp` with `limits`.
    pub fn new(tcp: TcpListener, limits: ConnLimits) -> GatedListener {
        GatedListener::behind(tcp, limits, TrustedProxies::default())
    }

    /// Gates `tcp` with `limits`, except that connections from trusted `proxies` count only
    /// against the total cap (each carries many clients). Call it within a tokio runtime (the
    /// held refusals have a task of their own).
    pub fn behind(tcp: TcpListener, limits: ConnLimits, proxies: TrustedProxies) -> GatedListener {
        GatedListener {
            tcp,
            tarpit: tarpit::Tarpit::spawn(limits.held_refusals),
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
            let activity = Activity::new();
            match self.gate.admit(peer.ip(), &activity) {
                Ok(permit) => {
                    return (
                        Gated {
                            inner: stream,
                            activity,
                            _permit: permit,
                        },
                        peer,
                    );
                }
                // Held a moment, or dropped: closed at once, the descriptor free again.
                Err(refusal) => {
                    crate::net::metrics::connection_closed(refusal.name());
                    tracing::debug!(%peer, reason = refusal.name(), "connection refused: too many open");
                    if let Some(t) = &self.tarpit {
                        t.hold(stream);
                    }
                }
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
                    _ = activity.shed_requested() => {
                        tracing::debug!(%peer, "closing a connection of the heaviest block");
                        break;
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

    fn gate(limits: ConnLimits, proxies: TrustedProxies) -> Arc<Gate> {
        Arc::new(Gate {
            limits,
            proxies,
            counts: Mutex::default(),
        })
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Admits a connection from `from` with a fresh activity record.
    fn open(gate: &Arc<Gate>, from: &str) -> Result<(Permit, Arc<Activity>), Refusal> {
        let a = Activity::new();
        gate.admit(ip(from), &a).map(|p| (p, a))
    }

    #[test]
    fn permits_are_given_back() {
        let gate = gate(
            ConnLimits {
                per_address: 1,
                per_block: 2,
                total: 3,
                ..ConnLimits::default()
            },
            TrustedProxies::default(),
        );
        let p = open(&gate, "10.0.0.1").unwrap();
        assert_eq!(open(&gate, "10.0.0.1").err(), Some(Refusal::Address));
        let q = open(&gate, "10.0.0.2").unwrap();
        assert_eq!(open(&gate, "10.0.0.3").err(), Some(Refusal::Block));
        let r = open(&gate, "10.0.1.1").unwrap();
        // At the total, 10.0.1.0/24 would hold 2 like 10.0.0.0/24: refused.
        assert_eq!(open(&gate, "10.0.1.2").err(), Some(Refusal::Total));
        drop(p);
        assert!(open(&gate, "10.0.0.1").is_ok());
        drop((q, r));
        let c = gate.lock();
        assert_eq!(c.total, 0);
        assert!(c.by_address.is_empty() && c.blocks.is_empty());
    }

    #[test]
    fn at_the_total_the_oldest_idle_connection_of_the_heaviest_block_is_shed() {
        let gate = gate(
            ConnLimits {
                per_address: 0,
                per_block: 0,
                total: 4,
                ..ConnLimits::default()
            },
            TrustedProxies::default(),
        );
        let mut flood: Vec<_> = ["127.1.0.1", "127.1.0.2", "127.1.0.3"]
            .iter()
            .map(|a| open(&gate, a).unwrap())
            .collect();
        // The oldest is busy (a request in flight): the next oldest idle one goes.
        let busy = InFlight::new(&flood[0].1);
        let _other = open(&gate, "127.2.0.1").unwrap();
        let _newcomer = open(&gate, "127.3.0.1").unwrap();
        let told = |a: &Arc<Activity>| {
            let mut f = pin!(a.shed_requested());
            let waker = std::task::Waker::noop();
            f.as_mut().poll(&mut Context::from_waker(waker)).is_ready()
        };
        assert!(!told(&flood[0].1) && told(&flood[1].1) && !told(&flood[2].1));
        {
            let c = gate.lock();
            assert_eq!(c.total, 4);
            assert_eq!(c.blocks["127.1.0.0/24"].len(), 2);
            assert_eq!(c.by_address.get(&ip("127.1.0.2")), None);
        }
        // The shed connection's permit, dropped when its task ends, counts nothing twice.
        drop(flood.remove(1));
        assert_eq!(gate.lock().total, 4);
        // The heaviest block (2) never sheds for one of its own.
        assert_eq!(open(&gate, "127.1.0.9").err(), Some(Refusal::Total));
        // When all of the heaviest block is busy, its oldest goes anyway.
        let _busy_too = InFlight::new(&flood[1].1);
        let _fourth = open(&gate, "127.4.0.1").unwrap();
        assert!(told(&flood[0].1));
        drop(busy);
    }

    #[test]
    fn a_trusted_proxy_counts_only_against_the_total() {
        let gate = gate(
            ConnLimits {
                per_address: 1,
                per_block: 1,
                total: 3,
                ..ConnLimits::default()
            },
            TrustedProxies::new(vec![crate::net::proxies::parse_proxy("10.0.0.1").unwrap()]),
        );
        let held: Vec<_> = (0..3).map(|_| open(&gate, "10.0.0.1").unwrap()).collect();
        assert_eq!(
            open(&gate, "10.0.0.1").err(),
            Some(Refusal::Total),
            "the total cap still holds"
        );
        drop(held);
        let _one = open(&gate, "10.0.0.2").unwrap();
        assert_eq!(
            open(&gate, "10.0.0.2").err(),
            Some(Refusal::Address),
            "others keep the per-address cap"
        );
    }
}
