//! Counting network round trips: a TCP proxy on loopback between a database client
//! and its server that forwards bytes unchanged (so TLS passes through) and counts
//! the client's request flights.
//!
//! A flight is a send of the client after the server has answered (or the first
//! send of a connection): requests the client sends back to back, without waiting
//! for an answer in between, are one flight, however many statements they carry.
//! So on a client that waits for each answer before its next request, flights are
//! the round trips it waited for. The count is summed over every connection made
//! through the proxy.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use stategraph_bench::roundtrips::{RoundTripProxy, via};
//! let url = "postgres://me:pw@127.0.0.1:5432/db";
//! let proxy = RoundTripProxy::start("127.0.0.1:5432").await?;
//! let counted_url = via(url, proxy.addr()).expect("a postgres:// URL");
//! // ... connect to `counted_url` and work ...
//! println!("{} round trips", proxy.round_trips());
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A counting proxy listening on an ephemeral loopback port, forwarding every
/// connection to one upstream address. It stops when dropped.
#[derive(Debug)]
pub struct RoundTripProxy {
    addr: SocketAddr,
    flights: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl RoundTripProxy {
    /// Listens on `127.0.0.1` (a free port) and forwards to `upstream` (`host:port`).
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start(upstream: impl Into<String>) -> std::io::Result<Self> {
        let upstream = upstream.into();
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let flights = Arc::new(AtomicU64::new(0));
        let counter = flights.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let flights = counter.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        forward(client, server, flights).await;
                    }
                });
            }
        });
        Ok(Self {
            addr,
            flights,
            accept,
        })
    }

    /// The address clients connect to instead of the server's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Client request flights so far, over every connection (see the module docs).
    pub fn round_trips(&self) -> u64 {
        self.flights.load(Ordering::Relaxed)
    }
}

impl Drop for RoundTripProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copies both ways until either side closes; counts the client's flights.
async fn forward(client: TcpStream, server: TcpStream, flights: Arc<AtomicU64>) {
    // Without delayed small writes, the proxy adds no waiting of its own.
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // Whether the server has spoken since the client's last send: the next client
    // send then starts a new flight. True at first: a connection's first send is one.
    let answered = Arc::new(AtomicBool::new(true));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = copy(client_read, server_write, {
        let answered = answered.clone();
        move || {
            if answered.swap(false, Ordering::AcqRel) {
                flights.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let down = copy(server_read, client_write, move || {
        answered.store(true, Ordering::Release);
    });
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// Copies `from` into `to`, calling `seen` before forwarding each chunk read.
async fn copy(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, seen: impl Fn()) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen();
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}

/// `url` (`postgres://` or `postgresql://`) with its host and port replaced by
/// `addr`, the rest (user, password, database, parameters) kept; `None` for a URL of
/// another form.
pub fn via(url: &str, addr: SocketAddr) -> Option<String> {
    let scheme_end = url.find("://")? + 3;
    let scheme = &url[..scheme_end];
    if scheme != "postgres://" && scheme != "postgresql://" {
        return None;
    }
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    Some(format!(
        "{scheme}{}{addr}{}",
        &authority[..host_start],
        &rest[authority_end..]
    ))
}

/// The `host:port` a `postgres://` URL points at (port 5432 when it names none).
pub fn upstream(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let host_port = &authority[authority.rfind('@').map_or(0, |at| at + 1)..];
    if host_port.is_empty() {
        return None;
    }
    let has_port = host_port
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.contains(']'));
    Some(if has_port {
        host_port.to_string()
    } else {
        format!("{host_port}:5432")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_pointed_at_the_proxy() {
        let addr: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        assert_eq!(
            via("postgres://u:p@db:5432/x?sslmode=require", addr).as_deref(),
            Some("postgres://u:p@127.0.0.1:4000/x?sslmode=require")
        );
        assert_eq!(
            via("postgresql://db/x", addr).as_deref(),
            Some("postgresql://127.0.0.1:4000/x")
        );
        assert_eq!(via("host=db user=u", addr), None);
        assert_eq!(
            upstream("postgres://u:p@db:6543/x").as_deref(),
            Some("db:6543")
        );
        assert_eq!(upstream("postgres://u@db/x").as_deref(), Some("db:5432"));
    }

    /// A client that waits for each answer makes one flight per request; one that
    /// sends three requests before reading makes one flight for the three.
    #[tokio::test]
    async fn counts_flights_not_writes() {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = server.local_addr().unwrap().to_string();
        // An echo server answering each byte with one byte.
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let proxy = RoundTripProxy::start(upstream).await.unwrap();
        let mut c = TcpStream::connect(proxy.addr()).await.unwrap();
        c.set_nodelay(true).unwrap();
        let mut b = [0u8; 3];
        for _ in 0..4 {
            c.write_all(b"x").await.unwrap();
            c.read_exact(&mut b[..1]).await.unwrap();
        }
        assert_eq!(proxy.round_trips(), 4);
        c.write_all(b"abc").await.unwrap();
        c.read_exact(&mut b).await.unwrap();
        assert_eq!(proxy.round_trips(), 5);
    }
}
