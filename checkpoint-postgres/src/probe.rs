//! Looking at a database without changing it: whether a saver's (or a store's)
//! tables are there.

use stategraph::checkpoint::CheckpointError;

use crate::connect::{describe_target, parse};
use crate::error::{Failure, PostgresError, within};
use crate::options::PostgresOptions;
use crate::tls;

/// Whether the saver's tables exist in the database at `url` (in the options'
/// schema, else on the connection's search path), creating nothing: for tools that
/// read a database a saver wrote and must not add tables to one it did not. It
/// connects as [`PostgresSaver::connect_with`](crate::PostgresSaver::connect_with)
/// does (the same `sslmode`, CA and connect timeout), over one connection that it
/// closes.
///
/// # Errors
/// As [`PostgresSaver::connect_with`](crate::PostgresSaver::connect_with) for the
/// connection, and [`PostgresError::Timeout`] when the server does not answer.
pub async fn tables_exist(url: &str, options: &PostgresOptions) -> Result<bool, CheckpointError> {
    probe(url, options, "stategraph_checkpoints")
        .await
        .map_err(|f| f.during("connect"))
}

/// Whether a [`PostgresStore`](crate::PostgresStore)'s tables exist in the database
/// at `url`, creating nothing, as [`tables_exist`] does for a saver's.
///
/// # Errors
/// As [`tables_exist`].
pub async fn store_tables_exist(
    url: &str,
    options: &PostgresOptions,
) -> Result<bool, CheckpointError> {
    probe(url, options, "stategraph_store_items")
        .await
        .map_err(|f| f.during("connect"))
}

async fn probe(url: &str, options: &PostgresOptions, table: &str) -> Result<bool, Failure> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(PostgresError::NoRuntime.into());
    }
    let (pg, tls, deadline) = parse(url, options)?;
    let target = describe_target(&pg);
    let opening = || "opening a connection (TCP connect and startup handshake)".to_string();
    let (client, connection) = within(deadline, opening, &target, async {
        pg.connect(tls.connector.clone())
            .await
            .map_err(|e| tls::connect_failure(&target, tls.mode, &e).into())
    })
    .await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let looking = || format!("looking for table `{table}`");
    let found = within(deadline, looking, &target, async {
        let row = match &options.schema {
            Some(schema) => {
                client
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                         WHERE table_schema = $1 AND table_name = $2)",
                        &[schema, &table],
                    )
                    .await?
            }
            None => {
                client
                    .query_one("SELECT to_regclass($1::text) IS NOT NULL", &[&table])
                    .await?
            }
        };
        Ok(row.try_get::<_, bool>(0)?)
    })
    .await;
    drop(client);
    if found.is_ok() {
        let _ = driver.await;
    } else {
        driver.abort();
    }
    found
}
