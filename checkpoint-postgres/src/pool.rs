//! Connections for other code on the saver's database (a server's own tables, its
//! `LISTEN`), made exactly as the saver makes its own: the same URL parsing
//! (`sslmode`, `sslrootcert`), CA, TLS over rustls and connect timeout.

use deadpool_postgres::Pool;
use stategraph::checkpoint::CheckpointError;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Notification};

use crate::connect::{OwnPool, parse, pooled_client};
use crate::error::{Failure, within};
use crate::options::PostgresOptions;
use crate::tls;

/// A pool of connections to the database at `url`, connected as
/// [`PostgresSaver::connect_with`](crate::PostgresSaver::connect_with) connects: TLS
/// as the URL's `sslmode` says (with `sslrootcert` or the options' CA), the options'
/// connect timeout, `pool_size` and `schema` (as the connections' `search_path`; the
/// schema must exist). One connection is opened before it returns, so a wrong URL,
/// password or certificate fails here.
///
/// # Errors
/// [`CheckpointError::Storage`] whose source is a [`PostgresError`](crate::PostgresError):
/// the URL does not parse, the CA cannot be read, the server cannot be reached,
/// refuses the login or TLS, or does not answer within the connect timeout.
pub async fn connect_pool(url: &str, options: &PostgresOptions) -> Result<Pool, CheckpointError> {
    async {
        let own = OwnPool::new(url, options)?;
        drop(pooled_client(&own.pool, Some(own.tls.mode), &own.target, own.deadline).await?);
        Ok::<_, Failure>(own.pool)
    }
    .await
    .map_err(|f| f.during("connect"))
}

/// A connection of its own (outside any pool) whose server notifications
/// (`NOTIFY`) arrive in order through [`PostgresListener::recv`]: issue `LISTEN
/// channel` on [`PostgresListener::client`]. Made by [`connect_listener`].
pub struct PostgresListener {
    client: tokio_postgres::Client,
    notifications: mpsc::UnboundedReceiver<Notification>,
}

impl PostgresListener {
    /// The connection, for `LISTEN`, `UNLISTEN` and any other statement.
    pub fn client(&self) -> &tokio_postgres::Client {
        &self.client
    }

    /// The next notification; `None` once the connection has ended (then connect
    /// again and `LISTEN` again: notifications sent meanwhile are lost).
    pub async fn recv(&mut self) -> Option<Notification> {
        self.notifications.recv().await
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

impl std::fmt::Debug for PostgresListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresListener")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// A dedicated connection to the database at `url` for `LISTEN`, connected as
/// [`connect_pool`] connects (TLS, CA, connect timeout). The current tokio runtime
/// drives it: a task polls the connection and forwards every notification to the
/// listener, until the connection ends or the listener is dropped.
///
/// # Errors
/// As [`connect_pool`].
pub async fn connect_listener(
    url: &str,
    options: &PostgresOptions,
) -> Result<PostgresListener, CheckpointError> {
    open_listener(url, options)
        .await
        .map_err(|f| f.during("connect"))
}

async fn open_listener(url: &str, options: &PostgresOptions) -> Result<PostgresListener, Failure> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(crate::error::PostgresError::NoRuntime.into());
    }
    let (pg, tls, deadline) = parse(url, options)?;
    let target = crate::connect::describe_target(&pg);
    let step = || "opening a listening connection (TCP connect and startup handshake)".to_string();
    let (client, mut connection) = within(deadline, step, &target, async {
        pg.connect(tls.connector.clone())
            .await
            .map_err(|e| Failure::from(tls::connect_failure(&target, tls.mode, &e)))
    })
    .await?;
    let (tx, notifications) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if tx.send(n).is_err() {
                        // Nobody listens any more; the client may still be in use.
                        continue;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
    });
    Ok(PostgresListener {
        client,
        notifications,
    })
}
