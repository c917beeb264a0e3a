//! The HTTP listener: HTTP/1.1 connections served by hyper within the server's
//! connection limits, so slow or idle clients cannot hold the server.
//!
//! - At most [`ConnLimits::max_connections`] connections are open at once. At the
//!   cap the listener stops accepting until one closes: later clients wait in the
//!   kernel's listen queue instead of using up the process's file descriptors
//!   (which its database and files need too).
//! - A request's headers must arrive within [`ConnLimits::header_read`] of the
//!   connection waiting for them, which also closes connections idle between
//!   requests: a client that opens a connection and sends half a request holds its
//!   slot that long at most. (Request bodies have their own deadline, a layer of
//!   the router.)
//! - Stopping stops accepting, lets requests in flight finish and closes idle
//!   connections.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// Limits on the connections a server keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnLimits {
    /// Most connections open at once.
    pub(crate) max_connections: usize,
    /// How long a connection may take to send a request's headers (or stay idle
    /// between requests).
    pub(crate) header_read: Duration,
}

/// How many connections a server keeps by default: half the process's limit on
/// open files (Linux reports it in `/proc/self/limits`), at most 4096; 512 where
/// the limit is unknown.
pub(crate) fn default_max_connections() -> usize {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok());
    match soft {
        Some(files) => (files / 2).clamp(16, 4096),
        None => 512,
    }
}

/// Resolves once `stop` is true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Serves `router` on `listener` until `stop` turns true.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = stopped(&mut stop) => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was
                    // accepted: look again shortly.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        // Small SSE writes go out at once, not after the client's delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        // Each request knows the address it came from (for per-client limits).
        let service = TowerToHyperService::new(tower::ServiceExt::map_request(
            router.clone(),
            move |mut req: axum::http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req
            },
        ));
        let connection = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
