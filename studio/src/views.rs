//! What the JSON API answers, as types: each serializes to the body of one route
//! (see the [crate docs](crate) for the routes).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use stategraph::GraphShape;

use crate::diff::ChangeKind;
use crate::status::ThreadStatus;

/// `GET /studio/api/info`: how the Studio is served.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Info {
    /// `stored` (read from a file or database, no user code) or `served` (by
    /// stategraph-server, with the graphs).
    pub mode: &'static str,
    /// Whether the page may start runs, answer interrupts and edit state (through
    /// the server's LangGraph Platform routes).
    pub drive: bool,
    /// What is shown: the file or database (without its password), or `server`.
    pub source: String,
}

/// One thread in the list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadRow {
    /// The thread.
    pub thread_id: String,
    /// Judged from its newest checkpoint.
    pub status: ThreadStatus,
    /// When its newest checkpoint was written (RFC 3339).
    pub updated_at: String,
    /// The superstep of its newest checkpoint.
    pub step: i64,
    /// How many checkpoints it has (in every namespace).
    pub checkpoints: u64,
    /// The graph version that wrote its newest checkpoint.
    pub graph_version: Option<String>,
    /// The served graph of that version, when served.
    pub graph_id: Option<String>,
}

/// `GET /studio/api/threads`: a page of the threads, newest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadList {
    /// The threads of the page.
    pub threads: Vec<ThreadRow>,
    /// How many threads match the search and status, over every page.
    pub total: usize,
}

/// An interrupt a task of the next step raised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InterruptView {
    /// The interrupt's id (what a resume by id names).
    pub id: Option<String>,
    /// The node that asked.
    pub node: Option<String>,
    /// What it asked with.
    pub value: Value,
    /// The checkpoint namespace of the task (empty: the root graph).
    pub ns: String,
    /// Whether it was answered already.
    pub answered: bool,
}

/// A task of the step that produced a checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskView {
    /// The task id (`{step}:{node}`, ...).
    pub id: String,
    /// The node.
    pub node: String,
    /// How long the node ran, in microseconds.
    pub duration_us: u64,
    /// Whether its writes came from the node cache.
    pub cached: bool,
    /// Whether its writes were reused from an interrupted attempt of the step.
    pub resumed: bool,
    /// How many times it ran: 1, plus one per failed attempt recorded before it.
    pub attempts: u32,
    /// The error of its last failed attempt, when one was recorded.
    pub error: Option<String>,
    /// What it wrote, by channel (`None` when its writes were not stored apart,
    /// as with `Durability::Exit`).
    pub writes: Option<serde_json::Map<String, Value>>,
    /// Where its routers sent the run.
    pub routed_to: Vec<String>,
}

/// A task of the next step that failed (the thread stopped on it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedTask {
    /// The task id.
    pub task_id: String,
    /// Its node (from the task id).
    pub node: String,
    /// The error it recorded.
    pub error: String,
}

/// One checkpoint of a thread's timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineEntry {
    /// The checkpoint.
    pub checkpoint_id: String,
    /// The checkpoint it follows.
    pub parent_checkpoint_id: Option<String>,
    /// Its superstep (-1 for the input).
    pub step: i64,
    /// Why it was written: `input`, `loop`, `update` or `fork`.
    pub source: String,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// The nodes planned next.
    pub next: Vec<String>,
    /// The interrupts the next step's tasks raised (answered or not).
    pub interrupts: Vec<InterruptView>,
    /// The tasks of the step (or steps) that produced it.
    pub tasks: Vec<TaskView>,
    /// Tasks of the next step that recorded an error and did not finish.
    pub errors: Vec<FailedTask>,
    /// 0 for the line the latest checkpoint is on; 1, 2, ... for other branches.
    pub branch: u32,
}

/// `GET /studio/api/threads/{tid}`: a thread with its graph and timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadView {
    /// The thread.
    pub thread_id: String,
    /// Judged from its latest checkpoint.
    pub status: ThreadStatus,
    /// The served graph of its latest graph version, when served.
    pub graph_id: Option<String>,
    /// The graph version that wrote its latest checkpoint.
    pub graph_version: Option<String>,
    /// That version's shape: the served graph's, or the one the thread recorded.
    pub graph: Option<GraphShape>,
    /// The edges the thread took on its latest line, in order, each once.
    pub path: Vec<(String, String)>,
    /// Every root checkpoint, oldest first.
    pub timeline: Vec<TimelineEntry>,
}

/// `GET /studio/api/threads/{tid}/checkpoints/{cid}`: a checkpoint's values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointView {
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Its superstep.
    pub step: i64,
    /// Every stored channel's value, rebuilt as JSON.
    pub values: BTreeMap<String, Value>,
    /// The nodes planned next.
    pub next: Vec<String>,
    /// The interrupts the next step's tasks raised.
    pub interrupts: Vec<InterruptView>,
    /// Its whole metadata (the recorded graph shape left out).
    pub metadata: Value,
}

/// One path at which two checkpoints differ.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The JSON path (`$.channel...`).
    pub path: String,
    /// Added, removed or changed.
    pub kind: ChangeKind,
    /// The value in the first checkpoint (`null` when absent there).
    pub before: Option<Value>,
    /// The value in the second checkpoint (`null` when absent there).
    pub after: Option<Value>,
}

/// `GET /studio/api/threads/{tid}/diff`: what differs between two checkpoints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiffView {
    /// Each path at which they differ, channel by channel.
    pub changes: Vec<Change>,
}
