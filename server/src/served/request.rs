//! What a worker asks a served graph to run ([`RunRequest`], read from the run's
//! stored request), and a graph's declared context type ([`ContextSpec`]).

use serde_json::{Map, Value, json};
use stategraph::{Durability, RunConfig};

use crate::error::ApiError;
use crate::events::Modes;
use crate::wire::{CommandRequest, RunConfigRequest, RunKwargs};

/// What a worker asks a graph to run.
#[derive(Clone, Debug)]
pub(crate) struct RunRequest {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    pub(crate) input: Option<Value>,
    pub(crate) command: Option<CommandRequest>,
    pub(crate) checkpoint_id: Option<String>,
    pub(crate) interrupt_before: Vec<String>,
    pub(crate) interrupt_after: Vec<String>,
    pub(crate) modes: Modes,
    /// The run's metadata (recorded in its checkpoints' metadata).
    pub(crate) metadata: Map<String, Value>,
    /// `config`: limits, `configurable` values, tags.
    pub(crate) config: RunConfigRequest,
    pub(crate) durability: Option<Durability>,
    /// The run's context, as sent (decoded into the graph's context type, if any).
    pub(crate) context: Option<Value>,
    /// Another attempt of the run (a worker died or stalled): it continues from the
    /// checkpoint its earlier attempt saved last, if any (decided under the thread's
    /// lock).
    pub(crate) retry: bool,
    /// The worker's lease on the run: once lapsed, the run saves nothing more.
    pub(crate) lease: Option<stategraph::RunLease>,
    /// The served graph it runs (absent in runs stored before it was recorded: their
    /// assistant is a served graph's).
    pub(crate) graph_id: Option<String>,
}

impl RunRequest {
    /// The request stored as `kwargs`, for run `run_id` of `thread_id`.
    ///
    /// # Errors
    /// Stream modes that do not parse (a 422 naming `$.stream_mode`).
    pub(crate) fn of(
        thread_id: &str,
        run_id: &str,
        kwargs: RunKwargs,
        metadata: Map<String, Value>,
    ) -> Result<Self, ApiError> {
        let modes = Modes::parse(Some(&json!(kwargs.stream_mode)), kwargs.stream_subgraphs)?;
        Ok(Self {
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            input: kwargs.input,
            command: kwargs.command,
            checkpoint_id: kwargs.checkpoint_id,
            interrupt_before: kwargs.interrupt_before,
            interrupt_after: kwargs.interrupt_after,
            modes,
            metadata,
            graph_id: kwargs.graph_id,
            config: kwargs.config.unwrap_or_default(),
            durability: kwargs.durability.map(Durability::from),
            context: kwargs.context,
            retry: false,
            lease: None,
        })
    }

    /// What the run's checkpoints record in their metadata: the run's metadata,
    /// `config.metadata`, and `config.tags` and `config.run_name` when given.
    pub(crate) fn checkpoint_metadata(&self) -> Map<String, Value> {
        let mut extra = self.metadata.clone();
        extra.extend(self.config.metadata.clone());
        if !self.config.tags.is_empty() {
            extra.insert("tags".into(), json!(self.config.tags));
        }
        if let Some(name) = &self.config.run_name {
            extra.insert("run_name".into(), json!(name));
        }
        extra
    }
}

/// Puts a run's JSON context, decoded into the graph's context type, into its
/// configuration; the error says why it does not decode.
pub(crate) type ApplyContext =
    Box<dyn Fn(&Value, RunConfig) -> Result<RunConfig, String> + Send + Sync>;

/// A graph's declared context type: its JSON Schema and its decoder.
pub(crate) struct ContextSpec {
    pub(crate) schema: Value,
    pub(crate) apply: ApplyContext,
}

impl ContextSpec {
    /// The spec of context type `C`.
    pub(crate) fn of<C>() -> Self
    where
        C: serde::de::DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    {
        Self {
            schema: serde_json::to_value(schemars::schema_for!(C)).unwrap_or(Value::Null),
            apply: Box::new(|value, config| {
                serde_json::from_value::<C>(value.clone())
                    .map(|c| config.context(c))
                    .map_err(|e| {
                        format!(
                            "does not decode as the graph's context `{}`: {e}",
                            std::any::type_name::<C>()
                        )
                    })
            }),
        }
    }
}
