//! HTTPS for `serve --tls-cert --tls-key`: rustls with the ring crypto provider (no cmake or
//! C toolchain beyond what ring needs), behind axum's [`Listener`] trait so the same router,
//! graceful shutdown and connect info serve both HTTP and HTTPS.
//!
//! Handshakes run in their own tasks with a deadline, so a client that opens a connection and
//! never finishes the handshake cannot stall other clients' accepts. Connections come from a
//! [`GatedListener`], so handshakes in progress count against the connection caps too.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use axum::serve::Listener;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::net::conn::{Activity, Gated, GatedListener, Watched};

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A rustls server configuration from a PEM certificate chain and a PEM private key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read certificates from {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("bad certificate PEM in {}", cert.display()))?;
    if certs.is_empty() {
        return Err(anyhow!("no certificate in {}", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a private key from {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TCP listener that hands out connections once their TLS handshake is done.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<Gated<TcpStream>>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` and completes handshakes with `config` in the background.
    pub fn new(tcp: GatedListener, config: Arc<rustls::ServerConfig>) -> io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tcp.accept_gated().await;
                if tx.is_closed() {
                    return;
                }
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<Gated<TcpStream>>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept task only ends when this listener is gone; never hand out garbage.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

impl Watched for TlsStream<Gated<TcpStream>> {
    fn activity(&self) -> Arc<Activity> {
        self.get_ref().0.activity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let nothing = dir.path().join("none.pem");
        assert!(server_config(&nothing, &nothing).is_err());
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a pem").unwrap();
        assert!(server_config(&junk, &junk).is_err());
    }
}
