//! [`CompileOptions`]: what a graph is compiled with (a checkpointer, a cache,
//! migrations, breakpoints).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::cache::NodeCache;
use crate::checkpoint::CheckpointSaver;
use crate::store::Store;

/// Maps the channel values of a checkpoint written under an older schema (by channel
/// name, as JSON) to the current state's channels.
pub type Migration = Arc<
    dyn Fn(&mut serde_json::Map<String, serde_json::Value>) -> Result<(), String> + Send + Sync,
>;

/// Options of [`StateGraph::compile_with`](crate::StateGraph::compile_with).
#[derive(Clone, Default)]
pub struct CompileOptions {
    pub(crate) saver: Option<Arc<dyn CheckpointSaver>>,
    pub(crate) cache: Option<Arc<dyn NodeCache>>,
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) migrations: HashMap<String, Migration>,
    pub(crate) interrupt_before: Vec<Arc<str>>,
    pub(crate) interrupt_after: Vec<Arc<str>>,
}

impl CompileOptions {
    /// No checkpointer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Saves a checkpoint per superstep to `saver`; runs then need a thread id.
    #[must_use]
    pub fn checkpointer(mut self, saver: impl CheckpointSaver) -> Self {
        self.saver = Some(Arc::new(saver));
        self
    }

    /// Loads checkpoints written under schema version `from` (an older
    /// `GraphState::SCHEMA_VERSION`) by passing their channel values, by name and as
    /// JSON, through `migrate`, which edits them into the current shape (rename, add,
    /// drop, convert). The first checkpoint saved afterwards stores every channel
    /// whole under the current schema; older checkpoints stay as they were.
    #[must_use]
    pub fn migration(
        mut self,
        from: impl Into<String>,
        migrate: impl Fn(&mut serde_json::Map<String, serde_json::Value>) -> Result<(), String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.migrations.insert(from.into(), Arc::new(migrate));
        self
    }

    /// Pauses every run before these nodes run (static breakpoints); continue with
    /// `invoke(None, ..)` or a resume.
    #[must_use]
    pub fn interrupt_before<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// Pauses every run after these nodes ran.
    #[must_use]
    pub fn interrupt_after<N: crate::node::NamedNode>(
        mut self,
        nodes: impl IntoIterator<Item = N>,
    ) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(|n| n.name_of()));
        self
    }

    /// As [`CompileOptions::checkpointer`], sharing a saver already behind an `Arc`.
    #[must_use]
    pub fn shared_checkpointer(mut self, saver: Arc<dyn CheckpointSaver>) -> Self {
        self.saver = Some(saver);
        self
    }

    /// Where nodes with a [`CachePolicy`](crate::cache::CachePolicy) keep their recorded runs
    /// ([`InMemoryCache`](crate::cache::InMemoryCache), or a durable saver).
    #[must_use]
    pub fn cache(mut self, store: impl NodeCache) -> Self {
        self.cache = Some(Arc::new(store));
        self
    }

    /// Like [`cache`](Self::cache), with a store the caller keeps a handle to.
    #[must_use]
    pub fn shared_cache(mut self, store: Arc<dyn NodeCache>) -> Self {
        self.cache = Some(store);
        self
    }

    /// Long-term memory shared across threads, reached from every node with
    /// [`NodeContext::store`](crate::NodeContext::store). Store calls are not
    /// checkpointed and not replayed: a node that runs again calls the store again, so
    /// write by key (see [`store`](crate::store)).
    #[must_use]
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Like [`store`](Self::store), with a store the caller keeps a handle to (to read
    /// it outside the graph, or share it between graphs).
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }
}

impl fmt::Debug for CompileOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompileOptions")
            .field("checkpointer", &self.saver.is_some())
            .field("cache", &self.cache.is_some())
            .field("store", &self.store.is_some())
            .field("migrations", &self.migrations.keys().collect::<Vec<_>>())
            .finish()
    }
}
