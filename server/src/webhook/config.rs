//! [`Webhooks`]: the server's webhook configuration.

use std::sync::Arc;
use std::time::Duration;

/// Where webhooks may go, how they are signed, how long and how often they are
/// tried: [`Server::webhooks`](crate::Server::webhooks).
///
/// ```
/// use std::time::Duration;
/// use stategraph_server::Webhooks;
///
/// let webhooks = Webhooks::new()
///     .secret("a shared secret the receivers check signatures with")
///     .allow("hooks.internal.example")
///     .timeout(Duration::from_secs(5))
///     .attempts(10);
/// # let _ = webhooks;
/// ```
#[derive(Clone)]
pub struct Webhooks {
    pub(crate) allowed: Arc<Vec<String>>,
    pub(crate) secret: Option<Arc<str>>,
    pub(crate) timeout: Duration,
    pub(crate) attempts: u32,
}

impl Default for Webhooks {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("allowed", &self.allowed)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl Webhooks {
    /// No internal host allowed, no signature, 10 s per call, 8 attempts.
    pub fn new() -> Self {
        Self {
            allowed: Arc::new(Vec::new()),
            secret: None,
            timeout: Duration::from_secs(10),
            attempts: 8,
        }
    }

    /// Allows calls to `host` — a name (`hooks.internal`, `localhost`) or an IP
    /// address (`127.0.0.1`, `::1`) — even when it is or resolves to an internal
    /// address. Named as it appears in the webhook URL.
    #[must_use]
    pub fn allow(mut self, host: impl Into<String>) -> Self {
        let host = host.into();
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        Arc::make_mut(&mut self.allowed).push(host);
        self
    }

    /// Signs each call: `X-Stategraph-Signature: t=<unix seconds>,v1=<hex>`, the
    /// HMAC-SHA256 under `secret` of `<t>.<body>`.
    #[must_use]
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.secret = Some(Arc::from(secret.into()));
        self
    }

    /// How long one call may take, connecting included.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times a call is tried before it is given up (at least 1); the
    /// waits between tries double from 1 s, up to 5 minutes.
    #[must_use]
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }
}
