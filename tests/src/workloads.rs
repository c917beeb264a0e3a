//! Graphs the crash and concurrency tests run, in their own processes (the
//! `saver_worker` binary) and in the test process, plus the saver both open.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use stategraph::checkpoint::CheckpointSaver;
use stategraph::prelude::*;
use stategraph_postgres::{PostgresOptions, PostgresSaver};
use stategraph_sqlite::{SqliteOptions, SqliteSaver, Synchronous};

/// Environment variable naming the file each node execution appends its task id to.
pub const TASK_LOG_VAR: &str = "STATEGRAPH_TASK_LOG";

/// Where a worker's checkpoints live: `sqlite:<path>`, `sqlite-normal:<path>` or
/// `postgres:<schema>:<url>`.
#[derive(Clone, Debug)]
pub enum Store {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A SQLite file whose saver commits with `Synchronous::Normal` (durable across a
    /// process crash, not a power loss).
    SqliteNormal(std::path::PathBuf),
    /// A schema of a PostgreSQL database.
    Postgres {
        /// The connection URL.
        url: String,
        /// The schema holding the tables.
        schema: String,
    },
}

impl Store {
    /// The command-line form, parsed back by [`Store::parse`].
    pub fn arg(&self) -> String {
        match self {
            Store::Sqlite(path) => format!("sqlite:{}", path.display()),
            Store::SqliteNormal(path) => format!("sqlite-normal:{}", path.display()),
            Store::Postgres { url, schema } => format!("postgres:{schema}:{url}"),
        }
    }

    /// Parses [`Store::arg`]'s form.
    pub fn parse(arg: &str) -> Option<Self> {
        if let Some(path) = arg.strip_prefix("sqlite:") {
            return Some(Store::Sqlite(path.into()));
        }
        if let Some(path) = arg.strip_prefix("sqlite-normal:") {
            return Some(Store::SqliteNormal(path.into()));
        }
        let rest = arg.strip_prefix("postgres:")?;
        let (schema, url) = rest.split_once(':')?;
        Some(Store::Postgres {
            url: url.to_string(),
            schema: schema.to_string(),
        })
    }

    /// Opens a long-term memory store on the same file or schema.
    pub async fn open_store(
        &self,
    ) -> Result<Arc<dyn stategraph::store::Store>, stategraph::store::StoreError> {
        Ok(match self {
            Store::Sqlite(path) | Store::SqliteNormal(path) => {
                Arc::new(stategraph_sqlite::SqliteStore::open(path)?)
            }
            Store::Postgres { url, schema } => Arc::new(
                stategraph_postgres::PostgresStore::connect_with(
                    url,
                    PostgresOptions::new().schema(schema),
                )
                .await?,
            ),
        })
    }

    /// Opens the saver.
    pub async fn open(
        &self,
    ) -> Result<Arc<dyn CheckpointSaver>, stategraph::checkpoint::CheckpointError> {
        Ok(match self {
            Store::Sqlite(path) => Arc::new(SqliteSaver::open(path)?),
            Store::SqliteNormal(path) => Arc::new(SqliteSaver::open_with(
                path,
                SqliteOptions::new().synchronous(Synchronous::Normal),
            )?),
            Store::Postgres { url, schema } => Arc::new(
                PostgresSaver::connect_with(url, PostgresOptions::new().schema(schema)).await?,
            ),
        })
    }
}

/// Appends a task id to the task log, if one is configured. One `write` of a whole
/// line to a file opened for appending: a killed process leaves whole lines.
pub fn log_task(task_id: &str) {
    let Ok(path) = std::env::var(TASK_LOG_VAR) else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the task log");
    file.write_all(format!("{task_id}\n").as_bytes())
        .expect("append to the task log");
}

// ---- The long fan-out graph of the crash tests. ----

/// Per round, `plan` fans out [`WIDTH`] `work` tasks by `Send`.
pub const WIDTH: u64 = 3;

/// State of the long graph: two supersteps per round (`plan`, then the `work` tasks).
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
pub struct Long {
    /// Rounds to run.
    pub rounds: u64,
    /// Rounds planned so far.
    #[reducer(add)]
    pub round: u64,
    /// `r{round}w{k}` per work task, in apply order.
    #[reducer(append)]
    pub done: Vec<String>,
    /// Sum of the work tasks' contributions.
    #[reducer(add)]
    pub total: u64,
}

#[node]
fn plan(_s: &Long, ctx: &NodeContext) -> LongUpdate {
    log_task(&format!("{}:plan", ctx.step()));
    Long::update().round(1)
}

/// A work item: the round it belongs to and its index.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Item {
    round: u64,
    k: u64,
}

#[node]
async fn work(item: &Item, ctx: &NodeContext) -> LongUpdate {
    // Long enough that kills land inside steps, with some tasks' writes saved.
    tokio::time::sleep(Duration::from_millis(1 + item.k * 2)).await;
    log_task(&format!("{}:work:send{}", ctx.step(), item.k));
    Long::update()
        .done([format!("r{}w{}", item.round, item.k)])
        .total(item.round * 10 + item.k)
}

/// The long graph: `plan` → `WIDTH` × `work` (by `Send`) → `plan` … for `rounds`.
pub fn long_graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Long> {
    StateGraph::<Long>::new()
        .add_node(plan)
        .add_node(work)
        .add_edge(START, plan)
        .add_conditional_edges(
            plan,
            |s: &Long| {
                if s.round > s.rounds {
                    return Route::end();
                }
                Route::sends(
                    (0..WIDTH)
                        .map(|k| stategraph::Send::new(work, Item { round: s.round, k }))
                        .collect::<Vec<_>>(),
                )
            },
            (work, END),
        )
        .add_edge(work, plan)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the long graph compiles")
}

// ---- The journal graph of the concurrency tests. ----

/// State of the journal: each run appends `goal` entries tagged with its writer.
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
pub struct Journal {
    /// `{writer}-{n}`, in order.
    #[reducer(append)]
    pub entries: Vec<String>,
    /// Who writes the current run's entries.
    pub writer: String,
    /// Entries the current run writes.
    pub goal: u32,
    /// Entries the current run has written.
    pub written: u32,
}

#[node]
async fn entry(s: &Journal) -> JournalUpdate {
    tokio::time::sleep(Duration::from_millis(2)).await;
    Journal::update()
        .entries([format!("{}-{}", s.writer, s.written + 1)])
        .written(s.written + 1)
}

/// The journal graph: `entry` loops until the run has written `goal` entries.
pub fn journal_graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Journal> {
    StateGraph::<Journal>::new()
        .add_node(entry)
        .add_edge(START, entry)
        .add_conditional_edges(
            entry,
            |s: &Journal| {
                if s.written < s.goal {
                    Route::to(entry)
                } else {
                    Route::end()
                }
            },
            (entry, END),
        )
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the journal graph compiles")
}

/// The input of one journal run: `goal` entries by `writer`.
pub fn journal_input(writer: &str, goal: u32) -> JournalUpdate {
    Journal::update()
        .writer(writer.to_string())
        .goal(goal)
        .written(0)
}

/// Checks a journal thread's history, oldest first: one unbroken chain with increasing
/// steps, and entries that are one contiguous block of `goal` per writer — each
/// writer's run whole, never interleaved with another's. Returns the writers in the
/// order they ran.
///
/// # Panics
/// When the history is broken or runs interleaved.
pub fn check_journal(
    history: &[stategraph::checkpoint::CheckpointTuple],
    entries: &[String],
    goal: u32,
) -> Vec<String> {
    for pair in history.windows(2) {
        assert_eq!(
            pair[1].parent_config.as_ref(),
            Some(&pair[0].config),
            "the history is one chain"
        );
        assert!(
            pair[1].metadata.step > pair[0].metadata.step,
            "steps increase along the chain: {} then {}",
            pair[0].metadata.step,
            pair[1].metadata.step
        );
    }
    let goal = goal as usize;
    assert_eq!(entries.len() % goal, 0, "whole runs only: {entries:?}");
    let mut writers = Vec::new();
    for block in entries.chunks(goal) {
        let writer = block[0]
            .rsplit_once('-')
            .map(|(w, _)| w.to_string())
            .unwrap_or_default();
        let expected: Vec<String> = (1..=goal).map(|n| format!("{writer}-{n}")).collect();
        assert_eq!(block, expected, "runs interleaved: {entries:?}");
        writers.push(writer);
    }
    writers
}

/// The state of the thread-start race: who started the thread, and who ran its node.
#[derive(GraphState, Clone, Debug, Default, PartialEq)]
pub struct Starters {
    /// Appended by each run's input.
    #[reducer(append)]
    pub starters: Vec<String>,
    /// Appended each time `publish` runs.
    #[reducer(add)]
    pub published: u32,
}

#[node]
async fn publish(_s: &Starters) -> StartersUpdate {
    // Long enough for a racing starter to be waiting on the thread's lock.
    tokio::time::sleep(Duration::from_millis(100)).await;
    Starters::update().published(1)
}

/// `START → publish`: a run that must happen once per thread.
pub fn starters_graph(saver: Arc<dyn CheckpointSaver>) -> CompiledGraph<Starters> {
    StateGraph::<Starters>::new()
        .add_node(publish)
        .add_edge(START, publish)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .expect("the starters graph compiles")
}
