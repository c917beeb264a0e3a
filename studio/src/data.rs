//! The data source: what the API answers, read from a checkpoint saver with no user
//! types (channel values are rebuilt as JSON, the graph's shape is the served
//! graph's or the one the thread's checkpoints recorded).

use std::collections::BTreeMap;

use serde_json::Value;
use stategraph::GraphShape;
use stategraph::checkpoint::{
    CheckpointConfig, CheckpointTuple, GRAPH_SHAPE_KEY, ListOptions, channel_values, recorded_shape,
};

use crate::Studio;
use crate::diff;
use crate::error::StudioError;
use crate::status::ThreadStatus;
use crate::timeline;
use crate::views::{Change, CheckpointView, DiffView, Info, ThreadList, ThreadRow, ThreadView};

/// What the thread list is asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadQuery {
    /// Only threads whose id contains this.
    pub search: Option<String>,
    /// Only threads with this status.
    pub status: Option<ThreadStatus>,
    /// At most this many (default [`ThreadQuery::DEFAULT_LIMIT`], at most
    /// [`ThreadQuery::MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: Option<usize>,
}

impl ThreadQuery {
    /// The page size when none is asked for.
    pub const DEFAULT_LIMIT: usize = 100;
    /// The largest page.
    pub const MAX_LIMIT: usize = 1000;
}

/// A graph version, or `None` for the empty one older checkpoints hold.
fn version_of(tuple: &CheckpointTuple) -> Option<String> {
    let v = &*tuple.checkpoint.graph_version;
    (!v.is_empty()).then(|| v.to_string())
}

impl Studio {
    /// `GET /studio/api/info`.
    pub fn info(&self) -> Info {
        Info {
            mode: if self.inner.drive { "served" } else { "stored" },
            drive: self.inner.drive,
            source: self.inner.source.clone(),
        }
    }

    /// The served graph of graph version `version`.
    fn served_graph(&self, version: Option<&str>) -> Option<&(String, GraphShape)> {
        let version = version?;
        self.inner.graphs.iter().find(|(_, s)| s.version == version)
    }

    /// The threads matching `query`, newest first.
    ///
    /// # Errors
    /// [`StudioError::Store`] when the saver fails.
    pub async fn threads(&self, query: &ThreadQuery) -> Result<ThreadList, StudioError> {
        let saver = &*self.inner.saver;
        let mut rows = Vec::new();
        for info in saver.list_threads().await? {
            if let Some(search) = &query.search
                && !info.thread_id.contains(search.as_str())
            {
                continue;
            }
            let config = CheckpointConfig::thread(&info.thread_id).at(&info.latest_checkpoint_id);
            let Some(latest) = saver.get_tuple(&config).await? else {
                // Deleted since it was listed.
                continue;
            };
            let status = ThreadStatus::of(&latest);
            if query.status.is_some_and(|s| s != status) {
                continue;
            }
            let graph_version = version_of(&latest);
            rows.push(ThreadRow {
                graph_id: self
                    .served_graph(graph_version.as_deref())
                    .map(|(id, _)| id.clone()),
                thread_id: info.thread_id,
                status,
                updated_at: info.latest_ts,
                step: info.latest_step,
                checkpoints: info.checkpoint_count,
                graph_version,
            });
        }
        rows.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.thread_id.cmp(&b.thread_id))
        });
        let total = rows.len();
        let limit = query
            .limit
            .unwrap_or(ThreadQuery::DEFAULT_LIMIT)
            .min(ThreadQuery::MAX_LIMIT);
        let threads = rows
            .into_iter()
            .skip(query.offset.unwrap_or(0))
            .take(limit)
            .collect();
        Ok(ThreadList { threads, total })
    }

    /// The thread's root checkpoints, newest first.
    async fn root(&self, thread_id: &str) -> Result<Vec<CheckpointTuple>, StudioError> {
        let tuples = self
            .inner
            .saver
            .list(&CheckpointConfig::thread(thread_id), &ListOptions::new())
            .await?;
        if tuples.is_empty() {
            return Err(StudioError::UnknownThread {
                thread_id: thread_id.to_string(),
            });
        }
        Ok(tuples)
    }

    /// A thread: its status, graph, the path it took and its timeline.
    ///
    /// # Errors
    /// [`StudioError::UnknownThread`]; [`StudioError::Store`] when the saver fails
    /// or a recorded shape does not decode.
    pub async fn thread(&self, thread_id: &str) -> Result<ThreadView, StudioError> {
        let tuples = self.root(thread_id).await?;
        let latest = &tuples[0];
        let status = ThreadStatus::of(latest);
        let graph_version = version_of(latest);
        let served = self.served_graph(graph_version.as_deref());
        let graph = match (served, &graph_version) {
            (Some((_, shape)), _) => Some(shape.clone()),
            (None, Some(v)) => recorded_shape(&*self.inner.saver, thread_id, v).await?,
            (None, None) => None,
        };
        let timeline = timeline::timeline(&tuples);
        let path = timeline::path(&timeline, graph.as_ref(), latest.checkpoint.next.is_empty());
        Ok(ThreadView {
            thread_id: thread_id.to_string(),
            status,
            graph_id: served.map(|(id, _)| id.clone()),
            graph_version,
            graph,
            path,
            timeline,
        })
    }

    /// Checkpoint `checkpoint_id` of the thread's root namespace.
    async fn tuple(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<CheckpointTuple, StudioError> {
        let unknown = || StudioError::UnknownCheckpoint {
            thread_id: thread_id.to_string(),
            checkpoint_id: checkpoint_id.to_string(),
        };
        // Ids are letters and digits: anything else is no checkpoint (and is not
        // handed to the saver).
        if checkpoint_id.is_empty()
            || checkpoint_id.len() > 128
            || !checkpoint_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            self.root(thread_id).await?;
            return Err(unknown());
        }
        let config = CheckpointConfig::thread(thread_id).at(checkpoint_id);
        match self.inner.saver.get_tuple(&config).await? {
            Some(tuple) => Ok(tuple),
            None => {
                self.root(thread_id).await?;
                Err(unknown())
            }
        }
    }

    /// A checkpoint's values, next nodes, interrupts and metadata.
    ///
    /// # Errors
    /// [`StudioError::UnknownThread`], [`StudioError::UnknownCheckpoint`];
    /// [`StudioError::Store`] when a value cannot be rebuilt.
    pub async fn checkpoint(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<CheckpointView, StudioError> {
        let tuple = self.tuple(thread_id, checkpoint_id).await?;
        let values = channel_values(&*self.inner.saver, &tuple).await?;
        let mut metadata = serde_json::to_value(&tuple.metadata).unwrap_or(Value::Null);
        if let Value::Object(fields) = &mut metadata {
            fields.remove(GRAPH_SHAPE_KEY);
        }
        Ok(CheckpointView {
            checkpoint_id: tuple.checkpoint.id.clone(),
            step: tuple.metadata.step,
            next: tuple
                .checkpoint
                .next
                .iter()
                .map(|t| t.node.clone())
                .collect(),
            interrupts: timeline::interrupts(&tuple),
            values,
            metadata,
        })
    }

    /// Each JSON path at which checkpoints `from` and `to` differ.
    ///
    /// # Errors
    /// As [`Studio::checkpoint`], for either checkpoint.
    pub async fn diff(
        &self,
        thread_id: &str,
        from: &str,
        to: &str,
    ) -> Result<DiffView, StudioError> {
        let a = self.tuple(thread_id, from).await?;
        let b = self.tuple(thread_id, to).await?;
        let va: BTreeMap<String, Value> = channel_values(&*self.inner.saver, &a).await?;
        let vb: BTreeMap<String, Value> = channel_values(&*self.inner.saver, &b).await?;
        let changes = diff::diff_channels(&va, &vb)
            .into_iter()
            .map(|c| Change {
                path: c.path,
                kind: c.kind,
                before: c.a,
                after: c.b,
            })
            .collect();
        Ok(DiffView { changes })
    }
}
