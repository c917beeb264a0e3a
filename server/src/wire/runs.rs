//! A run's request as clients send it ([`RunCreate`]) and as the queue stores it
//! ([`RunKwargs`], read back by the worker that runs it).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::CheckpointRef;

/// A run request: `POST /threads/{id}/runs[/stream|/wait]`, `POST /runs/..`. Every
/// field LangGraph's SDKs send is here, honoured or refused by name; any other is a
/// 422.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunCreate {
    #[serde(default)]
    pub(crate) assistant_id: String,
    #[serde(default)]
    pub(crate) input: Option<Value>,
    #[serde(default)]
    pub(crate) command: Option<Value>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
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
    #[serde(default)]
    pub(crate) stream_mode: Option<Value>,
    #[serde(default)]
    pub(crate) stream_subgraphs: Option<bool>,
    #[serde(default)]
    pub(crate) interrupt_before: Option<Value>,
    #[serde(default)]
    pub(crate) interrupt_after: Option<Value>,
    #[serde(default)]
    pub(crate) multitask_strategy: Option<String>,
    #[serde(default)]
    pub(crate) if_not_exists: Option<String>,
    #[serde(default)]
    pub(crate) on_disconnect: Option<String>,
    #[serde(default)]
    pub(crate) on_completion: Option<String>,
    #[serde(default)]
    pub(crate) after_seconds: Option<Value>,
    #[serde(default)]
    pub(crate) webhook: Option<Value>,
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
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
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
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
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
    pub(crate) configurable: Map<String, Value>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tags: Vec<String>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) metadata: Map<String, Value>,
    /// Recorded in the metadata of the run's checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_name: Option<String>,
}

/// `durability`: when the run's checkpoints are saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
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
    pub(crate) on_completion: String,
}
