//! A thread written by a process whose clock ran an hour ahead, then continued by one
//! with the right clock: the continuation sees and extends the latest checkpoint (it
//! neither re-runs finished tasks nor loses its own steps), on every saver.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use stategraph::BoxFuture;
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointTuple,
    ListOptions, PendingWrite, SaveOp, SaverResult, StoredValue, ThreadInfo, ThreadLock,
    new_checkpoint_id_at,
};
use stategraph::prelude::*;
use stategraph_tests::servers;

/// A saver as a process whose clock is an hour ahead uses it: every checkpoint it
/// stores gets an id minted an hour in the future (the runtime's own ids are mapped
/// to those everywhere they appear).
struct AheadClock<S> {
    inner: Arc<S>,
    ids: Mutex<HashMap<String, String>>,
}

impl<S> AheadClock<S> {
    fn new(inner: Arc<S>) -> Self {
        Self {
            inner,
            ids: Mutex::new(HashMap::new()),
        }
    }

    fn mapped(&self, id: &str) -> String {
        self.ids
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .unwrap_or_else(|| id.to_string())
    }

    fn config(&self, config: &CheckpointConfig) -> CheckpointConfig {
        let mut config = config.clone();
        config.checkpoint_id = config.checkpoint_id.map(|id| self.mapped(&id));
        config
    }

    /// A `put` as the fast clock makes it.
    fn skewed(
        &self,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        mut metadata: CheckpointMetadata,
    ) -> (CheckpointConfig, Checkpoint, CheckpointMetadata) {
        let config = self.config(config);
        let ahead = new_checkpoint_id_at(SystemTime::now() + Duration::from_secs(3600));
        self.ids
            .lock()
            .unwrap()
            .insert(checkpoint.id.clone(), ahead.clone());
        checkpoint.id = ahead;
        for parent in metadata.parents.values_mut() {
            *parent = self.mapped(parent);
        }
        (config, checkpoint, metadata)
    }
}

impl<S: CheckpointSaver> CheckpointSaver for AheadClock<S> {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, SaverResult<Option<CheckpointTuple>>> {
        self.inner.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, SaverResult<Vec<CheckpointTuple>>> {
        self.inner.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> BoxFuture<'a, SaverResult<CheckpointConfig>> {
        Box::pin(async move {
            let (config, checkpoint, metadata) = self.skewed(config, checkpoint, metadata);
            self.inner.put(&config, checkpoint, metadata).await
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<PendingWrite>,
    ) -> BoxFuture<'a, SaverResult<()>> {
        Box::pin(async move {
            let config = self.config(config);
            self.inner.put_writes(&config, writes).await
        })
    }

    fn put_batch<'a>(&'a self, ops: Vec<SaveOp>) -> BoxFuture<'a, SaverResult<()>> {
        let ops = ops
            .into_iter()
            .map(|op| match op {
                SaveOp::Checkpoint {
                    config,
                    checkpoint,
                    metadata,
                } => {
                    let (config, checkpoint, metadata) = self.skewed(&config, checkpoint, metadata);
                    SaveOp::Checkpoint {
                        config,
                        checkpoint,
                        metadata,
                    }
                }
                SaveOp::Writes { config, writes } => SaveOp::Writes {
                    config: self.config(&config),
                    writes,
                },
            })
            .collect();
        self.inner.put_batch(ops)
    }

    fn channel_history<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
        from: u64,
        to: u64,
    ) -> BoxFuture<'a, SaverResult<Vec<(u64, StoredValue)>>> {
        self.inner.channel_history(config, channel, from, to)
    }

    fn max_version<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        channel: &'a str,
    ) -> BoxFuture<'a, SaverResult<Option<u64>>> {
        self.inner.max_version(config, channel)
    }

    fn list_threads(&self) -> BoxFuture<'_, SaverResult<Vec<ThreadInfo>>> {
        self.inner.list_threads()
    }

    fn list_namespaces<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, SaverResult<Vec<String>>> {
        self.inner.list_namespaces(thread_id)
    }

    fn delete_thread<'a>(&'a self, thread_id: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        self.inner.delete_thread(thread_id)
    }

    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, SaverResult<()>> {
        self.inner.copy_thread(from, to)
    }

    fn prune<'a>(&'a self, thread_id: &'a str, keep: usize) -> BoxFuture<'a, SaverResult<()>> {
        self.inner.prune(thread_id, keep)
    }

    fn lock_thread<'a>(
        &'a self,
        thread_id: &'a str,
        wait: Duration,
    ) -> BoxFuture<'a, SaverResult<ThreadLock>> {
        self.inner.lock_thread(thread_id, wait)
    }
}

#[derive(GraphState, Clone, Debug, Default)]
struct Job {
    #[reducer(append)]
    log: Vec<String>,
}

/// Runs of each node, per thread.
static RUNS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
static THREADS: AtomicUsize = AtomicUsize::new(0);

fn visit(ctx: &NodeContext) -> JobUpdate {
    let key = format!("{}/{}", ctx.thread_id().unwrap_or("-"), ctx.node());
    *RUNS.lock().unwrap().entry(key).or_default() += 1;
    Job::update().log([ctx.node().to_string()])
}

fn runs(thread: &str, node: &str) -> usize {
    RUNS.lock()
        .unwrap()
        .get(&format!("{thread}/{node}"))
        .copied()
        .unwrap_or(0)
}

#[node]
fn draft(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx)
}

#[node]
fn publish(_s: &Job, ctx: &NodeContext) -> JobUpdate {
    visit(ctx)
}

/// `START → draft → publish`, pausing before `publish` for approval.
fn graph<S: CheckpointSaver>(saver: Arc<S>) -> CompiledGraph<Job> {
    StateGraph::<Job>::new()
        .add_node(draft)
        .add_node(publish)
        .add_edge(START, draft)
        .add_edge(draft, publish)
        .compile_with(
            CompileOptions::new()
                .shared_checkpointer(saver)
                .interrupt_before([publish]),
        )
        .unwrap()
}

/// The fast clock drafts and pauses; the right clock approves (publish runs once),
/// continues (nothing left to run), and starts a second round on the same thread.
async fn fast_then_right_clock<S: CheckpointSaver>(saver: Arc<S>) {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let thread = format!(
            "skew-{}-{}",
            std::process::id(),
            THREADS.fetch_add(1, Ordering::Relaxed)
        );
        let config = RunConfig::new()
            .thread(thread.as_str())
            .durability(durability);
        let fast = graph(Arc::new(AheadClock::new(saver.clone())));
        let paused = fast.invoke(Job::update(), &config).await.unwrap();
        assert_eq!(paused.interrupts.len(), 1, "{durability:?}");

        let right = graph(saver.clone());
        let approved = right.invoke(None, &config).await.unwrap();
        assert_eq!(approved.values.log, ["draft", "publish"], "{durability:?}");
        assert_eq!(runs(&thread, "publish"), 1, "{durability:?}");

        let again = right.invoke(None, &config).await.unwrap();
        assert!(again.interrupts.is_empty(), "{durability:?}");
        assert_eq!(again.values.log, ["draft", "publish"], "{durability:?}");
        assert_eq!(
            runs(&thread, "publish"),
            1,
            "{durability:?}: a finished task ran again"
        );

        let second = right
            .invoke(Job::update().log(["round 2"]), &config)
            .await
            .unwrap();
        assert_eq!(
            second.values.log,
            ["draft", "publish", "round 2", "draft"],
            "{durability:?}"
        );
        assert_eq!(runs(&thread, "draft"), 2, "{durability:?}");
        let state = right.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values.log, second.values.log, "{durability:?}");
    }
}

#[tokio::test]
async fn in_memory_a_fast_clock_then_the_right_one_continue_the_thread() {
    fast_then_right_clock(Arc::new(stategraph::checkpoint::InMemorySaver::new())).await;
}

#[tokio::test]
async fn on_sqlite_a_fast_clock_then_the_right_one_continue_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let saver = stategraph_sqlite::SqliteSaver::open(dir.path().join("skew.db")).unwrap();
    fast_then_right_clock(Arc::new(saver)).await;
}

#[tokio::test]
async fn on_postgres_a_fast_clock_then_the_right_one_continue_the_thread() {
    let Some(url) = servers::postgres_url(module_path!()) else {
        return;
    };
    let schema = servers::fresh_schema("skew");
    let saver = stategraph_postgres::PostgresSaver::connect_with(
        &url,
        stategraph_postgres::PostgresOptions::new().schema(&schema),
    )
    .await
    .unwrap();
    fast_then_right_clock(Arc::new(saver)).await;
    tokio::task::spawn_blocking(move || servers::drop_schema(&url, &schema))
        .await
        .unwrap();
}
