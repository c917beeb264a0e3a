//! A run's request as clients send it ([`RunCreate`]) and as the queue stores it
//! ([`RunKwargs`], read back by the worker that runs it).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// A run request: `POST /threads/{id}/runs[/stream|/wait]`, `POST /runs/..`. Every
/// field LangGraph's SDKs send is here, honoured or refused by name; any other is a
/// 422.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunCreate {
    #[serde(default)]
    pub(crate) assistant_id: String,
    #[serde(default)]
    pub(crate) input: Option<Value>,
    /// A resume, update or goto ([`CommandRequest`]).
    #[serde(default)]
    #[schema(value_type = Option<CommandRequest>)]
    pub(crate) command: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<Map<String, Value>>,
    /// LangGraph's `RunnableConfig` ([`RunConfigRequest`]).
    #[serde(default)]
    #[schema(value_type = Option<RunConfigRequest>)]
    pub(crate) config: Option<Value>,
    /// The run's context (what its nodes read with `NodeContext::context`).
    #[serde(default)]
    pub(crate) context: Option<Value>,
    #[serde(default)]
    pub(crate) durability: Option<DurabilityRequest>,
    /// Deprecated spelling of `durability`: `false` is `exit`, `true` `async`.
    #[serde(default)]
    pub(crate) checkpoint_during: Option<bool>,
    /// Every run's events are kept for re-joining (for [`Server::event_retention`]):
    /// a run is resumable whether asked or not.
    ///
    /// [`Server::event_retention`]: crate::Server::event_retention
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) stream_resumable: Option<bool>,
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
    #[serde(default)]
    pub(crate) checkpoint: Option<CheckpointRef>,
    /// A mode or a list of them: `values`, `updates`, `messages`, `messages-tuple`,
    /// `custom`, `events`, `tasks`, `checkpoints`, `debug`.
    #[serde(default)]
    pub(crate) stream_mode: Option<Value>,
    #[serde(default)]
    pub(crate) stream_subgraphs: Option<bool>,
    #[serde(default)]
    pub(crate) interrupt_before: Option<Value>,
    #[serde(default)]
    pub(crate) interrupt_after: Option<Value>,
    #[serde(default)]
    pub(crate) multitask_strategy: Option<MultitaskStrategy>,
    #[serde(default)]
    pub(crate) if_not_exists: Option<IfNotExists>,
    #[serde(default)]
    pub(crate) on_disconnect: Option<OnDisconnect>,
    #[serde(default)]
    pub(crate) on_completion: Option<OnCompletion>,
    /// Seconds the run waits (pending) before it may start; cancellable meanwhile.
    #[serde(default)]
    pub(crate) after_seconds: Option<f64>,
    /// A URL the run's end is POSTed to (see [`Webhooks`](crate::Webhooks)).
    #[serde(default)]
    pub(crate) webhook: Option<String>,
    /// A resume is always strict here (one for a thread waiting on nothing is a 409,
    /// an answer to an unknown interrupt fails the run): accepted either way.
    #[serde(default)]
    #[allow(dead_code)]
    pub(crate) strict_resume: Option<bool>,
    /// LangSmith's: refused with a 422.
    #[serde(default)]
    pub(crate) feedback_keys: Option<Value>,
    /// LangSmith's: refused with a 422.
    #[serde(default)]
    pub(crate) langsmith_tracer: Option<Value>,
}

/// `command` of a run request: resume an interrupt, write an update, go to nodes.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandRequest {
    /// The answer to the pending interrupt (or a map of answers by interrupt id).
    #[serde(default)]
    pub(crate) resume: Option<Value>,
    /// An update applied before resuming.
    #[serde(default)]
    pub(crate) update: Option<Value>,
    /// Node names to run next.
    #[serde(default)]
    pub(crate) goto: Option<Value>,
}

/// `config` of a run request (LangGraph's `RunnableConfig`): each field is honoured,
/// any other is a 422.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunConfigRequest {
    /// Most supersteps the run may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) recursion_limit: Option<usize>,
    /// Most tasks of a superstep running at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_concurrency: Option<usize>,
    /// Values every node reads with `NodeContext::configurable`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub(crate) configurable: Map<String, Value>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tags: Vec<String>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schema(value_type = Object)]
    pub(crate) metadata: Map<String, Value>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_name: Option<String>,
}

/// `durability`: when the run's checkpoints are saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DurabilityRequest {
    /// Before the next superstep starts.
    Sync,
    /// In the background while the next superstep runs.
    Async,
    /// Once, when the run ends.
    Exit,
}

impl From<DurabilityRequest> for stategraph::Durability {
    fn from(d: DurabilityRequest) -> Self {
        match d {
            DurabilityRequest::Sync => Self::Sync,
            DurabilityRequest::Async => Self::Async,
            DurabilityRequest::Exit => Self::Exit,
        }
    }
}

/// A run's request as the queue stores it: written when the run is created, read
/// back (strictly: a row that does not decode fails the run, naming why) by the
/// worker that runs it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct RunKwargs {
    #[serde(default)]
    pub(crate) input: Option<Value>,
    #[serde(default)]
    pub(crate) command: Option<CommandRequest>,
    #[serde(default)]
    pub(crate) stream_mode: Vec<String>,
    #[serde(default)]
    pub(crate) stream_subgraphs: bool,
    #[serde(default)]
    pub(crate) interrupt_before: Vec<String>,
    #[serde(default)]
    pub(crate) interrupt_after: Vec<String>,
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
    #[serde(default)]
    pub(crate) config: Option<RunConfigRequest>,
    #[serde(default)]
    pub(crate) durability: Option<DurabilityRequest>,
    #[serde(default)]
    pub(crate) context: Option<Value>,
    #[serde(default)]
    pub(crate) on_completion: OnCompletion,
    /// Where the run's end is POSTed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) webhook: Option<String>,
    /// The served graph the run's assistant runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) graph_id: Option<String>,
}

/// What a run does when its thread has an active run (`multitask_strategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MultitaskStrategy {
    /// Refused with a 409.
    Reject,
    /// The active run is stopped, keeping what it saved.
    Interrupt,
    /// The active run is stopped and deleted with what it saved.
    Rollback,
    /// It waits its turn.
    #[default]
    Enqueue,
}

impl MultitaskStrategy {
    /// The stored form.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
            Self::Enqueue => "enqueue",
        }
    }
}

/// What a run on a missing thread does (`if_not_exists`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum IfNotExists {
    /// A 404.
    #[default]
    Reject,
    /// The thread is created.
    Create,
}

/// What creating a thread that exists does (`if_exists`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IfExists {
    /// A 409.
    Raise,
    /// The existing thread is returned.
    DoNothing,
}

/// What happens to a streamed run whose client goes away (`on_disconnect`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnDisconnect {
    /// It is cancelled.
    Cancel,
    /// It runs on, as a background run.
    #[default]
    Continue,
}

/// What happens to a stateless run's thread when it ends (`on_completion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OnCompletion {
    /// Deleted (the default of a stateless run).
    Delete,
    /// Kept (a thread's own runs always keep it).
    #[default]
    Keep,
}

impl OnCompletion {
    /// The stored form.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Delete => "delete",
            Self::Keep => "keep",
        }
    }
}

/// How a cancelled run stops (`action`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CancelAction {
    /// It stops, keeping what it saved.
    #[default]
    Interrupt,
    /// It stops and is deleted with what it saved.
    Rollback,
}

impl CancelAction {
    /// The stored form.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
        }
    }
}

/// A checkpoint named in a request, as LangGraph's clients send a state's
/// `checkpoint` back: only its id is read (the `thread_id`, `checkpoint_ns` and
/// `checkpoint_map` they carry along are not). Anything but an object is a 422.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct CheckpointRef {
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
}

/// A checkpoint id from `checkpoint_id` or `checkpoint: {checkpoint_id}`.
pub(crate) fn checkpoint_id(
    id: Option<&String>,
    checkpoint: Option<&CheckpointRef>,
) -> Option<String> {
    id.cloned()
        .or_else(|| checkpoint.and_then(|c| c.checkpoint_id.clone()))
}
