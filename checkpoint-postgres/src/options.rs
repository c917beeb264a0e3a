//! Settings of the PostgreSQL saver and store.

use std::fmt;
use std::time::Duration;

use crate::tls::CaSource;

/// `url` with the password (if any) replaced by `***`.
pub(crate) fn redacted(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let Some(at) = rest.rfind('@') else {
        return url.to_string();
    };
    match rest[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..scheme_end],
            &rest[..colon],
            &rest[at..]
        ),
        None => url.to_string(),
    }
}

/// Settings of a [`PostgresSaver`](crate::PostgresSaver) (and a
/// [`PostgresStore`](crate::PostgresStore)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct PostgresOptions {
    pub(crate) max_record_bytes: usize,
    pub(crate) pool_size: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) schema: Option<String>,
    pub(crate) lock_poll: Duration,
    pub(crate) ca: Option<CaSource>,
    pub(crate) lock_url: Option<LockUrl>,
}

/// A connection URL that may hold a password, shown without it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct LockUrl(pub(crate) String);

impl fmt::Debug for LockUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redacted(&self.0))
    }
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            max_record_bytes: 64 << 20,
            pool_size: 8,
            connect_timeout: Duration::from_secs(10),
            schema: None,
            lock_poll: Duration::from_millis(25),
            ca: None,
            lock_url: None,
        }
    }
}

impl PostgresOptions {
    /// A 64 MiB record limit, a pool of 8 connections, a 10-second connect timeout, the
    /// tables in the user's default schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest stored record, in bytes of JSON: a checkpoint, its metadata, one
    /// channel value or one pending write. Larger records are refused when written and
    /// when read, as [`CheckpointError::Oversize`](stategraph::checkpoint::CheckpointError::Oversize).
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes;
        self
    }

    /// Most connections the saver's pool keeps open at once (at least 1). The
    /// threads' locks take one more connection, the lock session, however many
    /// threads run: the saver holds at most `connections` + 1.
    pub fn pool_size(mut self, connections: usize) -> Self {
        self.pool_size = connections.max(1);
        self
    }

    /// How long each network step may take before it fails naming the step: opening
    /// a connection (TCP connect and startup handshake), waiting for a pooled one,
    /// opening a thread's lock session. A `connect_timeout` in the URL takes
    /// precedence. Default 10 seconds.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Keeps the saver's tables in this schema (created when missing) instead of the
    /// user's default one: savers on different schemas of one database are independent.
    /// A plain identifier: ASCII letters, digits and `_`.
    pub fn schema(mut self, name: impl Into<String>) -> Self {
        self.schema = Some(name.into());
        self
    }

    /// Trusts the CA certificates in this PEM file for the server's certificate (as
    /// `sslrootcert=/path` in the URL, which takes precedence). With a CA given,
    /// `sslmode=prefer` and `require` check the certificate's chain as `verify-ca`
    /// does (as libpq); without one, `verify-ca` and `verify-full` trust the operating
    /// system's CA store.
    pub fn ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ca = Some(CaSource::File(path.into()));
        self
    }

    /// Trusts the CA certificates in these PEM bytes, as [`ca_file`](Self::ca_file)
    /// does those in a file.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(CaSource::Pem(pem.into()));
        self
    }

    /// Opens the lock session (the one connection holding the threads' advisory
    /// locks) to this URL instead of the saver's own. Behind PgBouncer in transaction
    /// mode, point it at the server itself or at a session-mode pool: session-level
    /// advisory locks need a session that stays one server connection. Its `sslmode`
    /// and `sslrootcert` are read as the main URL's are; the options' CA and connect
    /// timeout apply to it too.
    pub fn lock_url(mut self, url: impl Into<String>) -> Self {
        self.lock_url = Some(LockUrl(url.into()));
        self
    }

    /// How often a run waiting for a busy thread asks again whether it is free.
    pub fn lock_poll_interval(mut self, interval: Duration) -> Self {
        self.lock_poll = interval.max(Duration::from_millis(1));
        self
    }
}
