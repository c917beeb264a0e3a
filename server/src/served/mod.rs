//! A served graph behind an object-safe trait: JSON in, JSON out, whatever its
//! state type. Input is decoded strictly into the state's update type (an unknown
//! key or a wrong type is a 422 naming the field; a run's unknown input keys are
//! dropped before, where they are named); values go out through the channels'
//! codecs, so a state need not implement `Serialize`.

mod request;

use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::builder::Endpoint;
use stategraph::checkpoint::ListOptions;
use stategraph::state::{InputError, update_from_json};
use stategraph::{
    BoxFuture, Command, CompiledGraph, Goto, GraphShape, GraphState, RunConfig, RunError, RunInput,
    StreamEvent,
};
use tokio::sync::mpsc;

use crate::astream::RunIds;
use crate::error::ApiError;
use crate::events::{WireRun, interrupts_json, to_wire};
pub(crate) use crate::wire::CommandRequest;
use crate::wire::{GraphSchemas, StateUpdated, ThreadState};
pub(crate) use request::{ContextSpec, RunRequest};

/// How a run ended.
#[derive(Debug)]
pub(crate) enum RunEnd {
    /// It finished or paused; the thread's values and pending interrupts.
    Done {
        values: Value,
        interrupts: Value,
        /// Tasks are left to run (an interrupt, or a static breakpoint).
        paused: bool,
    },
    /// It failed.
    Failed {
        values: Option<Value>,
        error: String,
    },
}

/// A graph the server runs, whatever its state type.
pub(crate) trait Served: Send + Sync + 'static {
    /// Its name (its `graph_id`).
    fn name(&self) -> &str;
    /// Its shape, for drawing.
    fn shape(&self) -> GraphShape;
    /// Its JSON Schemas.
    fn schemas(&self) -> GraphSchemas;
    /// Its node names.
    fn node_names(&self) -> Vec<String>;
    /// Its state's channel names: the keys an input may have.
    fn channel_names(&self) -> Vec<&'static str>;
    /// Checks a run request before it is queued: the input decodes, the named
    /// nodes exist.
    fn check(&self, req: &RunRequest) -> Result<(), ApiError>;
    /// Runs it, sending wire events to `events`.
    fn run(&self, req: RunRequest, events: mpsc::Sender<(String, Value)>) -> BoxFuture<'_, RunEnd>;
    /// The thread's state (at a checkpoint), as `ThreadState` JSON.
    fn state<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<String>,
        subgraphs: bool,
    ) -> BoxFuture<'a, Result<Option<ThreadState>, ApiError>>;
    /// The thread's checkpoints, newest first.
    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        options: ListOptions,
    ) -> BoxFuture<'a, Result<Vec<ThreadState>, ApiError>>;
    /// `update_state`: writes `values` as `as_node` (or as input), at a checkpoint.
    fn update_state<'a>(
        &'a self,
        thread_id: &'a str,
        values: Value,
        as_node: Option<String>,
        checkpoint_id: Option<String>,
    ) -> BoxFuture<'a, Result<StateUpdated, ApiError>>;
    /// The thread's latest values and pending interrupts (`None` without checkpoints).
    fn latest<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(Value, Value)>, ApiError>>;
}

/// A compiled graph with what the wire needs of its state type.
pub(crate) struct Entry<S: GraphState> {
    pub(crate) name: String,
    pub(crate) graph: CompiledGraph<S>,
    pub(crate) schema: GraphSchemas,
    /// The graph's context type, when it declares one; else a run's context reaches
    /// its nodes as JSON (`serde_json::Value`).
    pub(crate) context: Option<ContextSpec>,
}

/// A state's JSON Schema (`schemars`), and the input schema derived from it: every
/// channel optional, no other key allowed.
pub(crate) fn schemas_of<S: schemars::JsonSchema>(graph_id: &str) -> GraphSchemas {
    let state = serde_json::to_value(schemars::schema_for!(S)).unwrap_or(Value::Null);
    let mut input = state.clone();
    if let Value::Object(o) = &mut input {
        o.remove("required");
        o.insert("additionalProperties".into(), Value::Bool(false));
    }
    GraphSchemas {
        graph_id: graph_id.to_string(),
        input_schema: input,
        output_schema: state.clone(),
        state_schema: state,
        config_schema: None,
        context_schema: None,
    }
}

fn input_error(e: InputError) -> ApiError {
    match e {
        InputError::Invalid { path, message } => ApiError::invalid(path, message),
        InputError::UnknownField { field, known } => ApiError::invalid(
            format!("$.{field}"),
            format!("unknown channel `{field}`; the state's channels are: {known}"),
        ),
        other => ApiError::invalid("$", other.to_string()),
    }
}

/// How many times a read is tried again when the thread was pruned under it.
const READ_TRIES: usize = 3;

/// Whether a read failed because the thread was pruned while it read (a
/// checkpoint it listed lost the values it needs): read again, it is gone from
/// the listing now.
fn pruned_meanwhile(e: &RunError) -> bool {
    matches!(
        e,
        RunError::Checkpoint(stategraph::checkpoint::CheckpointError::MissingValue { .. })
    )
}

fn run_error(e: RunError) -> ApiError {
    match e {
        RunError::NothingToContinue { .. } => ApiError::bad_request(e.to_string()),
        RunError::UnknownCheckpoint { .. } => {
            ApiError::new(axum::http::StatusCode::NOT_FOUND, e.to_string())
        }
        other => ApiError::internal(other),
    }
}

impl<S: GraphState> Entry<S> {
    fn decode(&self, value: &Value, at: &str) -> Result<S::Update, ApiError> {
        update_from_json::<S>(crate::wire::chat::input::<S>(value.clone())).map_err(|e| {
            let mut err = input_error(e);
            for (path, _) in &mut err.errors {
                *path = path.replacen('$', at, 1);
            }
            err.detail = err.detail.replacen("at $", &format!("at {at}"), 1);
            err
        })
    }

    fn check_nodes(&self, names: &[String], field: &str) -> Result<(), ApiError> {
        let known: Vec<&str> = self.graph.node_names().collect();
        for name in names {
            if !known.contains(&name.as_str()) {
                return Err(ApiError::invalid(
                    format!("$.{field}"),
                    format!(
                        "`{name}` is not a node of graph `{}`; its nodes: {}",
                        self.name,
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn goto_names(command: &CommandRequest) -> Result<Vec<String>, ApiError> {
        match &command.goto {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ApiError::invalid("$.command.goto", "expected node names"))
                })
                .collect(),
            Some(_) => Err(ApiError::invalid(
                "$.command.goto",
                "expected a node name or a list of them",
            )),
        }
    }

    fn input(&self, req: &RunRequest) -> Result<RunInput<S>, ApiError> {
        if let Some(command) = &req.command {
            let mut c: Command<S> = match &command.resume {
                // Answers by interrupt id: `{"<24 hex digits>": answer, ..}`.
                Some(Value::Object(map))
                    if !map.is_empty()
                        && map
                            .keys()
                            .all(|k| k.len() == 24 && k.bytes().all(|b| b.is_ascii_hexdigit())) =>
                {
                    Command::resume_map(map.clone())
                }
                Some(value) => Command::resume(value.clone()),
                None => Command::new(),
            };
            if let Some(update) = &command.update {
                c = c.update(self.decode(update, "$.command.update")?);
            }
            for name in Self::goto_names(command)? {
                c = c.and_goto(if name == "__end__" {
                    Goto::End
                } else {
                    Goto::Node(name.into())
                });
            }
            return Ok(RunInput::Command(c));
        }
        match &req.input {
            None | Some(Value::Null) => Ok(RunInput::Continue),
            Some(v) => Ok(RunInput::Update(self.decode(v, "$.input")?)),
        }
    }

    /// The run's configuration: its thread, checkpoint, breakpoints, limits,
    /// `configurable` values and context.
    fn config(&self, req: &RunRequest) -> Result<RunConfig, ApiError> {
        let mut config = RunConfig::new()
            .thread(req.thread_id.as_str())
            .run_id(req.run_id.clone())
            .metadata(req.checkpoint_metadata())
            .interrupt_before_names(req.interrupt_before.clone())
            .interrupt_after_names(req.interrupt_after.clone())
            .configurable(req.config.configurable.clone());
        if let Some(id) = &req.checkpoint_id {
            config = config.checkpoint(id.clone());
        }
        if let Some(limit) = req.config.recursion_limit {
            config = config.recursion_limit(limit);
        }
        if let Some(tasks) = req.config.max_concurrency {
            config = config.max_concurrency(tasks);
        }
        if let Some(durability) = req.durability {
            config = config.durability(durability);
        }
        if let Some(context) = &req.context {
            config = match &self.context {
                Some(spec) => {
                    (spec.apply)(context, config).map_err(|e| ApiError::invalid("$.context", e))?
                }
                None => config.context(context.clone()),
            };
        }
        if let Some(lease) = &req.lease {
            config = config.lease(lease.clone());
        }
        if req.retry {
            config = config.retry();
        }
        Ok(config)
    }

    async fn run_inner(&self, req: RunRequest, events: mpsc::Sender<(String, Value)>) -> RunEnd {
        let (input, config) = match self.input(&req).and_then(|i| Ok((i, self.config(&req)?))) {
            Ok(both) => both,
            Err(e) => {
                return RunEnd::Failed {
                    values: None,
                    error: e.detail,
                };
            }
        };
        let mut stream = self.graph.stream(input, &config, req.modes.for_graph());
        let mut last_values: Option<Value> = None;
        let mut interrupts = Value::Array(Vec::new());
        let mut wire_run = WireRun::new(
            req.modes,
            RunIds {
                graph: self.name.clone(),
                run_id: req.run_id.clone(),
                thread_id: req.thread_id.clone(),
            },
        );
        for wire in wire_run.begin(req.input.clone().unwrap_or(Value::Null)) {
            let _ = events.send(wire).await;
        }
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    match &event {
                        StreamEvent::Values { values, .. } => {
                            last_values = stategraph::state::state_to_json(values).ok();
                        }
                        StreamEvent::Interrupt {
                            interrupts: pending,
                        } => {
                            interrupts = interrupts_json(pending);
                        }
                        _ => {}
                    }
                    for wire in to_wire(&event, req.modes, &mut wire_run) {
                        if events.send(wire).await.is_err() {
                            break;
                        }
                    }
                }
                Err(e) => {
                    return RunEnd::Failed {
                        values: last_values,
                        error: e.to_string(),
                    };
                }
            }
        }
        // The thread's own view (a resumed or continued run's last values event may
        // predate writes it restored); fall back to what streamed.
        let config = RunConfig::new().thread(req.thread_id.as_str());
        let end = match self.graph.get_state(&config).await {
            Ok(Some(s)) => RunEnd::Done {
                values: self.values_of(&s.values),
                interrupts: interrupts_json(&s.interrupts),
                paused: !s.interrupts.is_empty() || !s.next.is_empty(),
            },
            _ => RunEnd::Done {
                paused: interrupts.as_array().is_some_and(|a| !a.is_empty()),
                values: last_values.unwrap_or_else(|| json!({})),
                interrupts,
            },
        };
        if let RunEnd::Done { values, .. } = &end {
            for wire in wire_run.end(values) {
                let _ = events.send(wire).await;
            }
        }
        end
    }

    /// A state as the wire shows it.
    fn values_of(&self, values: &S) -> Value {
        let mut v = stategraph::state::state_to_json(values).unwrap_or_else(|_| json!({}));
        crate::wire::chat::output::<S>(&mut v);
        v
    }

    async fn latest_inner(&self, thread_id: &str) -> Result<Option<(Value, Value)>, ApiError> {
        let config = RunConfig::new().thread(thread_id);
        let snapshot = self.graph.get_state(&config).await.map_err(run_error)?;
        Ok(snapshot.map(|s| (self.values_of(&s.values), interrupts_json(&s.interrupts))))
    }
}

impl<S: GraphState> Served for Entry<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn shape(&self) -> GraphShape {
        self.graph.shape()
    }

    fn schemas(&self) -> GraphSchemas {
        self.schema.clone()
    }

    fn node_names(&self) -> Vec<String> {
        self.graph.node_names().map(str::to_string).collect()
    }

    fn channel_names(&self) -> Vec<&'static str> {
        S::CHANNELS.iter().map(|c| c.name).collect()
    }

    fn check(&self, req: &RunRequest) -> Result<(), ApiError> {
        self.check_nodes(&req.interrupt_before, "interrupt_before")?;
        self.check_nodes(&req.interrupt_after, "interrupt_after")?;
        if let Some(command) = &req.command {
            let goto: Vec<String> = Self::goto_names(command)?
                .into_iter()
                .filter(|n| n != "__end__")
                .collect();
            self.check_nodes(&goto, "command.goto")?;
        }
        self.config(req)?;
        self.input(req).map(|_| ())
    }

    fn run(&self, req: RunRequest, events: mpsc::Sender<(String, Value)>) -> BoxFuture<'_, RunEnd> {
        Box::pin(self.run_inner(req, events))
    }

    fn state<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_id: Option<String>,
        subgraphs: bool,
    ) -> BoxFuture<'a, Result<Option<ThreadState>, ApiError>> {
        Box::pin(async move {
            let mut config = RunConfig::new().thread(thread_id);
            if let Some(id) = checkpoint_id {
                config = config.checkpoint(id);
            }
            let mut tries = 0;
            let snapshot = loop {
                let read = if subgraphs {
                    self.graph.get_state_subgraphs(&config).await
                } else {
                    self.graph.get_state(&config).await
                };
                match read {
                    Err(e) if pruned_meanwhile(&e) && tries < READ_TRIES => tries += 1,
                    other => break other.map_err(run_error)?,
                }
            };
            Ok(snapshot.as_ref().map(crate::wire::thread_state))
        })
    }

    fn history<'a>(
        &'a self,
        thread_id: &'a str,
        options: ListOptions,
    ) -> BoxFuture<'a, Result<Vec<ThreadState>, ApiError>> {
        Box::pin(async move {
            let config = RunConfig::new().thread(thread_id);
            let mut tries = 0;
            let list = loop {
                match self.graph.get_state_history(&config, &options).await {
                    Err(e) if pruned_meanwhile(&e) && tries < READ_TRIES => tries += 1,
                    other => break other.map_err(run_error)?,
                }
            };
            Ok(list.iter().map(crate::wire::thread_state).collect())
        })
    }

    fn update_state<'a>(
        &'a self,
        thread_id: &'a str,
        values: Value,
        as_node: Option<String>,
        checkpoint_id: Option<String>,
    ) -> BoxFuture<'a, Result<StateUpdated, ApiError>> {
        Box::pin(async move {
            let update = self.decode(&values, "$.values")?;
            let mut config = RunConfig::new().thread(thread_id);
            if let Some(id) = checkpoint_id {
                config = config.checkpoint(id);
            }
            let saved = match as_node {
                Some(node) => {
                    let endpoint = match node.as_str() {
                        "__start__" => Endpoint::Start,
                        "__end__" => Endpoint::End,
                        name => {
                            self.check_nodes(&[name.to_string()], "as_node")?;
                            Endpoint::Node(name.into())
                        }
                    };
                    self.graph.update_state_as(&config, update, endpoint).await
                }
                None => self.graph.update_state(&config, update).await,
            }
            .map_err(|e| match e {
                RunError::InvalidUpdate { .. } | RunError::NothingToContinue { .. } => {
                    ApiError::bad_request(e.to_string())
                }
                other => run_error(other),
            })?;
            Ok(StateUpdated::from(&saved))
        })
    }

    fn latest<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<(Value, Value)>, ApiError>> {
        Box::pin(self.latest_inner(thread_id))
    }
}
