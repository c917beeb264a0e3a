//! `stategraph studio`: the Studio page and its JSON API over the stored threads,
//! read-only (no user code: graph shapes come from what the checkpoints recorded),
//! on a local address until Ctrl-C.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;

use stategraph::checkpoint::CheckpointSaver;
use stategraph_studio::{Studio, api, pages};

use crate::error::CliError;

/// The address `studio` listens on when `--addr` is not given: loopback, a free port.
pub const DEFAULT_ADDR: &str = "127.0.0.1:0";

/// Serves the Studio over `saver` (named `source` on the page) on `addr`, prints
/// `studio at http://ADDR/studio` to `out`, and serves until `stop` completes.
///
/// # Errors
/// [`CliError::Bind`] when `addr` cannot be listened on; [`CliError::Io`] when the
/// address cannot be printed or serving fails.
pub async fn serve(
    saver: Arc<dyn CheckpointSaver>,
    source: String,
    addr: &str,
    out: &mut dyn Write,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CliError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| CliError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| CliError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    let io = |action| move |source| CliError::Io { action, source };
    writeln!(out, "studio at http://{bound}/studio").map_err(io("write the output"))?;
    out.flush().map_err(io("write the output"))?;
    let app = pages().merge(api(Studio::stored(saver, source)));
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
        .map_err(io("serve the studio"))
}

/// Completes on Ctrl-C (or, if the signal cannot be watched, never).
pub async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
