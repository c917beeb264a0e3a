//! Studio for stategraph: a web page to see a graph and step through its threads'
//! checkpoints, and the JSON API it reads.
//!
//! Two hosts serve it: `stategraph --db app.sqlite studio` (read-only, from a
//! SQLite file or PostgreSQL database, with no user code: the graph's shape comes
//! from what the checkpoints recorded, see
//! [`recorded_shape`](stategraph::checkpoint::recorded_shape)) and
//! `stategraph-server` (with the served graphs, and driving them through the
//! server's LangGraph Platform routes). Both mount two routers:
//!
//! - [`pages`]: the page (`/studio`, `/studio/`, any `/studio/...` page path: the
//!   page routes on `location.pathname`) and its files (`/studio/assets/{file}`),
//!   embedded in the binary. They hold no data.
//! - [`api`]: the JSON API under `/studio/api`, reading a saver:
//!
//! | route | answer |
//! |---|---|
//! | `GET /studio/api/info` | [`Info`](views::Info): mode, drive, source |
//! | `GET /studio/api/threads?search=&status=&limit=&offset=` | [`ThreadList`](views::ThreadList), newest first |
//! | `GET /studio/api/threads/{tid}` | [`ThreadView`](views::ThreadView): status, graph, path, timeline (oldest first) |
//! | `GET /studio/api/threads/{tid}/checkpoints/{cid}` | [`CheckpointView`](views::CheckpointView): values as JSON |
//! | `GET /studio/api/threads/{tid}/diff?from=CID&to=CID` | [`DiffView`](views::DiffView): one change per JSON path |
//!
//! An unknown thread or checkpoint is a 404 `{"detail": "thread X not found"}` or
//! `{"detail": "checkpoint C of thread X not found"}`; a bad query parameter a 400;
//! every error body is `{"detail": "..."}`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use stategraph_studio::{Studio, api, pages};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let saver = Arc::new(stategraph::checkpoint::InMemorySaver::new());
//! let app = pages().merge(api(Studio::stored(saver, "memory")));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! axum::serve(listener, app).await?;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

mod api;
pub mod assets;
mod data;
pub mod diff;
mod error;
pub mod record;
pub mod status;
mod timeline;
pub mod views;

use std::sync::Arc;

use axum::Router;
use stategraph::GraphShape;
use stategraph::checkpoint::CheckpointSaver;

pub use data::ThreadQuery;
pub use error::StudioError;

/// What the Studio reads and how it is served: the saver, and whether the page may
/// drive graphs (`served`, with the graphs) or only look (`stored`). Cheap to clone.
#[derive(Clone)]
pub struct Studio {
    inner: Arc<Inner>,
}

struct Inner {
    saver: Arc<dyn CheckpointSaver>,
    drive: bool,
    source: String,
    /// The served graphs, `(graph_id, shape)`: a thread maps to the graph whose
    /// version wrote its latest checkpoint.
    graphs: Vec<(String, GraphShape)>,
}

impl std::fmt::Debug for Studio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Studio")
            .field("drive", &self.inner.drive)
            .field("source", &self.inner.source)
            .field(
                "graphs",
                &self
                    .inner
                    .graphs
                    .iter()
                    .map(|(id, _)| id)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Studio {
    /// Read-only, over `saver`; `source` names it on the page (a file, or a URL
    /// without its password). Graph shapes come from what the threads recorded.
    pub fn stored(saver: Arc<dyn CheckpointSaver>, source: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                saver,
                drive: false,
                source: source.into(),
                graphs: Vec::new(),
            }),
        }
    }

    /// Served by stategraph-server with `graphs` (`(graph_id, shape)` of each served
    /// graph) over their `saver`: the page may drive them.
    pub fn served(saver: Arc<dyn CheckpointSaver>, graphs: Vec<(String, GraphShape)>) -> Self {
        Self {
            inner: Arc::new(Inner {
                saver,
                drive: true,
                source: "server".to_string(),
                graphs,
            }),
        }
    }
}

/// The page and its files (see the [crate docs](crate)): no data, so a server can
/// mount them outside its authentication.
pub fn pages() -> Router {
    assets::routes()
}

/// The JSON API of `studio` under `/studio/api` (see the [crate docs](crate)).
pub fn api(studio: Studio) -> Router {
    api::routes(studio)
}
