//! Where the threads are: a SQLite file or a PostgreSQL database, opened without
//! creating anything that is not already there.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};
#[cfg(feature = "postgres")]
use stategraph::checkpoint::CheckpointError;
use stategraph::checkpoint::CheckpointSaver;
use stategraph::store::Store;
#[cfg(feature = "postgres")]
use stategraph_postgres::{PostgresError, PostgresOptions, PostgresSaver, PostgresStore};
use stategraph_sqlite::{SqliteSaver, SqliteStore};

use crate::error::CliError;

/// The store to inspect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file written by `stategraph_sqlite::SqliteSaver`.
    Sqlite(PathBuf),
    /// A PostgreSQL database written by `stategraph_postgres::PostgresSaver`, with
    /// the schema holding its tables when it is not the default one.
    Postgres {
        /// The connection URL.
        url: String,
        /// The schema given to `PostgresOptions::schema`, if any.
        schema: Option<String>,
    },
}

impl fmt::Display for Target {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Sqlite(path) => write!(f, "{}", path.display()),
            Target::Postgres { url, schema } => {
                write!(f, "{}", without_password(url))?;
                if let Some(schema) = schema {
                    write!(f, " (schema `{schema}`)")?;
                }
                Ok(())
            }
        }
    }
}

/// `url` with its password, if any, replaced by `***`: the password of a URL's user
/// info, or the `password=` setting of a `key=value` connection string.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split(' ')
            .map(|part| match part.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" ");
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl Target {
    /// Opens the store's saver.
    ///
    /// # Errors
    /// [`CliError::MissingDatabase`] for a file that does not exist (nothing is
    /// created), [`CliError::NotADatabase`] for a file without a saver's tables,
    /// [`CliError::BadUrl`] when PostgreSQL cannot be reached with the URL,
    /// [`CliError::PostgresDisabled`] for a URL when built without the `postgres`
    /// feature, and [`CliError::Store`] when the saver refuses the store.
    pub async fn open(&self) -> Result<Arc<dyn CheckpointSaver>, CliError> {
        match self {
            Target::Sqlite(path) => {
                check_sqlite(path, SAVER_TABLE)?;
                Ok(Arc::new(SqliteSaver::open(path)?))
            }
            #[cfg(not(feature = "postgres"))]
            Target::Postgres { .. } => Err(CliError::PostgresDisabled {
                target: self.to_string(),
            }),
            #[cfg(feature = "postgres")]
            Target::Postgres { url, schema } => {
                if !has_postgres_tables(url, schema.as_deref()).await? {
                    return Err(CliError::NoTables {
                        target: self.to_string(),
                    });
                }
                let mut options = PostgresOptions::new().pool_size(2);
                if let Some(schema) = schema {
                    options = options.schema(schema.clone());
                }
                let saver = PostgresSaver::connect_with(url, options)
                    .await
                    .map_err(|source| CliError::BadUrl { source })?;
                Ok(Arc::new(saver))
            }
        }
    }

    /// Opens the long-term memory store in the file or database, without creating
    /// its tables.
    ///
    /// # Errors
    /// [`CliError::MissingDatabase`] for a file that does not exist,
    /// [`CliError::NotADatabase`] for a file that is not SQLite,
    /// [`CliError::NoStoreTables`] for a file, database or schema without a store's
    /// tables, [`CliError::PostgresDisabled`] for a URL when built without the
    /// `postgres` feature, and [`CliError::StoreFailed`] when the store cannot be
    /// opened.
    pub async fn open_store(&self) -> Result<Arc<dyn Store>, CliError> {
        let failed = |source| CliError::StoreFailed { source };
        match self {
            Target::Sqlite(path) => {
                check_sqlite(path, STORE_TABLE).map_err(|e| match e {
                    CliError::NotADatabase { reason, .. } if reason.contains(STORE_TABLE) => {
                        CliError::NoStoreTables {
                            target: self.to_string(),
                        }
                    }
                    other => other,
                })?;
                Ok(Arc::new(SqliteStore::open(path).map_err(failed)?))
            }
            #[cfg(not(feature = "postgres"))]
            Target::Postgres { .. } => Err(CliError::PostgresDisabled {
                target: self.to_string(),
            }),
            #[cfg(feature = "postgres")]
            Target::Postgres { url, schema } => {
                let mut options = PostgresOptions::new().pool_size(2);
                if let Some(schema) = schema {
                    options = options.schema(schema.clone());
                }
                match stategraph_postgres::store_tables_exist(url, &options).await {
                    Ok(false) => {
                        return Err(CliError::NoStoreTables {
                            target: self.to_string(),
                        });
                    }
                    Err(e) if is_timeout(&e) => return Err(CliError::BadUrl { source: e }),
                    // Found, or a failure the store's own connection reports.
                    _ => {}
                }
                let store = PostgresStore::connect_with(url, options)
                    .await
                    .map_err(failed)?;
                Ok(Arc::new(store))
            }
        }
    }
}

/// The table that tells a saver's file from others.
const SAVER_TABLE: &str = "stategraph_checkpoints";
/// The table that tells a store's file from others.
const STORE_TABLE: &str = "stategraph_store_items";

/// Whether the saver's tables exist in the database (in `schema`, or on the
/// connection's search path), checked before the saver connects, which would create
/// them. The check connects as the saver does (the URL's `sslmode` and CA included).
/// A URL that does not parse or a server that refuses counts as having them: the
/// saver's own connection then fails with its message. A server that does not answer
/// within the connect timeout (the URL's `connect_timeout`, else 10 s) is
/// [`CliError::BadUrl`] naming the step, rather than a second wait in the saver.
#[cfg(feature = "postgres")]
async fn has_postgres_tables(url: &str, schema: Option<&str>) -> Result<bool, CliError> {
    let mut options = stategraph_postgres::PostgresOptions::new();
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    match stategraph_postgres::tables_exist(url, &options).await {
        Ok(found) => Ok(found),
        Err(e) if is_timeout(&e) => Err(CliError::BadUrl { source: e }),
        Err(_) => Ok(true),
    }
}

#[cfg(feature = "postgres")]
fn is_timeout(e: &CheckpointError) -> bool {
    matches!(
        e,
        CheckpointError::Storage { source, .. }
            if matches!(source.downcast_ref::<PostgresError>(), Some(PostgresError::Timeout { .. }))
    )
}

/// Refuses a path that is not an existing SQLite file holding `table` (a saver's or a
/// store's), before the saver or store opens it (which would create the file or add
/// the tables).
fn check_sqlite(path: &Path, table: &str) -> Result<(), CliError> {
    if !path.exists() {
        return Err(CliError::MissingDatabase {
            path: path.to_path_buf(),
        });
    }
    let not_a_db = |reason: String| CliError::NotADatabase {
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_file() {
        return Err(not_a_db("it is not a file".into()));
    }
    // An empty file is what SQLite (and so `SqliteSaver::open`) takes for a missing
    // database, to be created there; for a tool that only reads, it holds nothing.
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        return Err(not_a_db(
            "the file is empty (0 bytes): no saver has written to it; pass the database file a SqliteSaver wrote".into(),
        ));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| not_a_db(e.to_string()))?;
    let has_tables: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |row| row.get(0),
        )
        .map_err(|e| not_a_db(format!("{e} (is it a SQLite file?)")))?;
    if !has_tables {
        return Err(not_a_db(format!(
            "it has no `{table}` table; pass the file a SqliteSaver wrote"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_displayed_urls() {
        let shown = |url: &str| {
            Target::Postgres {
                url: url.into(),
                schema: None,
            }
            .to_string()
        };
        assert_eq!(
            shown("postgres://me:secret@db:5432/app"),
            "postgres://me:***@db:5432/app"
        );
        assert_eq!(shown("postgres://me@db/app"), "postgres://me@db/app");
        assert_eq!(shown("postgres://db/app?x=a@b"), "postgres://db/app?x=a@b");
        assert_eq!(shown("not a url"), "not a url");
        assert_eq!(
            shown("host=db user=me password=secret dbname=app"),
            "host=db user=me password=*** dbname=app"
        );
    }
}
