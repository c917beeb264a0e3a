//! `Durability::Sync` stores a step's last finished task's writes together with the
//! checkpoint that follows them: one `put_batch` (one transaction, one `fsync` on
//! SQLite) per superstep instead of a `put_writes` and a `put`. A task's writes are
//! still stored before any other task of its step runs or is awaited, so a crash
//! while a sibling runs never loses a finished task.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use stategraph::BoxFuture;
use stategraph::checkpoint::{CheckpointConfig, CheckpointSaver, ListOptions, SaveOp};
use stategraph::prelude::*;
use stategraph_tests::intercept::{Intercepted, OnWrite, Write};

/// One saver call, as the runtime made it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Put,
    /// The task ids of the writes.
    PutWrites(Vec<String>),
    /// Per op: `"writes"` or `"checkpoint"`.
    Batch(Vec<&'static str>),
}

/// Records the calls the runtime makes.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Call>>,
}

impl OnWrite for Recorder {
    fn before<'a>(&'a self, write: Write<'a>) -> BoxFuture<'a, ()> {
        let call = match write {
            Write::Put { .. } => Call::Put,
            Write::PutWrites { writes, .. } => {
                Call::PutWrites(writes.iter().map(|w| w.task_id.clone()).collect())
            }
            Write::Batch(ops) => Call::Batch(
                ops.iter()
                    .map(|op| match op {
                        SaveOp::Writes { .. } => "writes",
                        SaveOp::Checkpoint { .. } => "checkpoint",
                    })
                    .collect(),
            ),
        };
        self.calls.lock().unwrap().push(call);
        Box::pin(async {})
    }
}

type Recording = Intercepted<Recorder>;

fn recording() -> Arc<Recording> {
    Arc::new(Intercepted::new(Recorder::default()))
}

trait Calls {
    fn calls(&self) -> Vec<Call>;
    /// Whether writes of a task whose id ends with `suffix` were stored.
    fn stored_writes_of(&self, suffix: &str) -> bool;
}

impl Calls for Recording {
    fn calls(&self) -> Vec<Call> {
        self.hook.calls.lock().unwrap().clone()
    }

    fn stored_writes_of(&self, suffix: &str) -> bool {
        self.calls().iter().any(|c| match c {
            Call::PutWrites(tasks) => tasks.iter().any(|t| t.ends_with(suffix)),
            _ => false,
        })
    }
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Log {
    #[reducer(append)]
    seen: Vec<String>,
}

fn chain(saver: Arc<Recording>) -> CompiledGraph<Log> {
    let mut g = StateGraph::<Log>::new();
    let names = ["a", "b", "c"];
    let nodes: Vec<_> = names
        .iter()
        .map(|&n| g.add_node_fn(n, move |_: &Log| Log::update().seen([n.to_string()])))
        .collect();
    g.add_edge(START, &nodes[0])
        .add_edge(&nodes[0], &nodes[1])
        .add_edge(&nodes[1], &nodes[2])
        .add_edge(&nodes[2], END);
    g.compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn each_step_of_a_chain_is_one_batch_of_its_writes_and_checkpoint() {
    let saver = recording();
    let graph = chain(saver.clone());
    let config = RunConfig::new().thread("t");
    let out = graph.invoke(Log::update(), &config).await.unwrap();
    assert_eq!(out.values.seen, ["a", "b", "c"]);
    let batch = Call::Batch(vec!["writes", "checkpoint"]);
    assert_eq!(
        saver.calls(),
        [Call::Put, batch.clone(), batch.clone(), batch],
        "the input checkpoint, then one batch per step and nothing else"
    );

    // What is stored is what separate calls stored: each step's checkpoint has its
    // parent's writes (the task that ran after it) as pending writes.
    let history = saver
        .list(&CheckpointConfig::thread("t"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
    let written: Vec<Vec<String>> = history
        .iter()
        .rev()
        .map(|t| t.pending_writes.iter().map(|w| w.task_id.clone()).collect())
        .collect();
    assert_eq!(
        written,
        [
            vec!["0:a".to_string()],
            vec!["1:b".into()],
            vec!["2:c".into()],
            vec![]
        ]
    );
    // A new graph resumes from it as from any thread.
    let again = chain(saver.clone())
        .get_state(&config)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.values.seen, ["a", "b", "c"]);
}

#[tokio::test]
async fn async_durability_is_unchanged_by_it() {
    let saver = recording();
    let graph = chain(saver.clone());
    let config = RunConfig::new().thread("t").durability(Durability::Async);
    graph.invoke(Log::update(), &config).await.unwrap();
    let calls = saver.calls();
    assert!(
        calls.iter().all(|c| matches!(c, Call::Batch(_))),
        "{calls:?}"
    );
    assert_eq!(saver.inner.checkpoint_count(), 4);
}

/// Two tasks in one step: `fast` finishes first; `slow` waits (up to 5 s) until
/// `fast`'s writes are stored. With writes held until the checkpoint, `slow` would
/// time out and fail the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_task_is_stored_before_its_sibling_is_awaited() {
    let saver = recording();
    let mut g = StateGraph::<Log>::new();
    let fast = g.add_node_async("fast", |_: Log, _ctx: NodeContext| async {
        Ok::<_, NodeError>(Log::update().seen(["fast".to_string()]))
    });
    let probe = saver.clone();
    let slow = g.add_node_async("slow", move |_: Log, _ctx: NodeContext| {
        let probe = probe.clone();
        async move {
            for _ in 0..500 {
                if probe.stored_writes_of(":fast") {
                    return Ok(Log::update().seen(["slow".to_string()]));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(NodeError::msg(
                "the finished sibling's writes were not stored",
            ))
        }
    });
    g.add_edge(START, &fast)
        .add_edge(START, &slow)
        .add_edge(&fast, END)
        .add_edge(&slow, END);
    let graph = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let out = graph
        .invoke(Log::update(), &RunConfig::new().thread("t"))
        .await
        .unwrap();
    assert_eq!(out.values.seen, ["fast", "slow"]);
    assert_eq!(
        saver.calls(),
        [
            Call::Put,
            Call::PutWrites(vec!["0:fast".to_string()]),
            Call::Batch(vec!["writes", "checkpoint"]),
        ]
    );
}

/// A step that fails after a sibling finished (tasks run in name order): the finished
/// task's writes are stored with the error, and a resumed run does not run it again.
#[tokio::test]
async fn a_failing_step_keeps_the_finished_task() {
    let saver = recording();
    let ran = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let mut g = StateGraph::<Log>::new();
    let log = ran.clone();
    let ok = g.add_node_fn("a_ok", move |_: &Log| {
        log.lock().unwrap().push("ok");
        Log::update().seen(["ok".to_string()])
    });
    let fail_now = Arc::new(Mutex::new(true));
    let (log, flag) = (ran.clone(), fail_now.clone());
    let flaky = g.add_node_fn("b_flaky", move |_: &Log| -> Result<LogUpdate, NodeError> {
        log.lock().unwrap().push("flaky");
        if *flag.lock().unwrap() {
            Err(NodeError::msg("not yet"))
        } else {
            Ok(Log::update().seen(["flaky".to_string()]))
        }
    });
    g.add_edge(START, &ok)
        .add_edge(START, &flaky)
        .add_edge(&ok, END)
        .add_edge(&flaky, END);
    let graph = g
        .compile_with(CompileOptions::new().shared_checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new().thread("t");
    assert!(graph.invoke(Log::update(), &config).await.is_err());
    *fail_now.lock().unwrap() = false;
    let out = graph.invoke(None, &config).await.unwrap();
    assert_eq!(out.values.seen, ["ok", "flaky"]);
    assert_eq!(*ran.lock().unwrap(), ["ok", "flaky", "flaky"]);
}
