//! A run's typed stream events in the wire shape LangGraph Platform's clients read:
//! one SSE event per stream mode, named by the mode (`values`, `updates`, `custom`,
//! `tasks`, `checkpoints`, `debug`), a subgraph's as `mode|namespace`.

use serde_json::{Map, Value, json};
use stategraph::checkpoint::CheckpointConfig;
use stategraph::state::{state_to_json, update_to_json};
use stategraph::{GraphState, Interrupt, MessageChunk, StreamEvent, StreamMode};

use crate::astream::{EventsRun, RunIds};
use crate::error::ApiError;
use crate::messages::{MessageForms, MessageParts};

/// The stream modes a request asked for, as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Modes {
    pub(crate) graph: Option<StreamMode>,
    /// The wire forms of `MESSAGES` asked for.
    pub(crate) messages: MessageForms,
    /// `events`: LangChain's `astream_events` shape.
    pub(crate) events: bool,
}

/// The mode names a client may ask for.
const KNOWN: &[&str] = &[
    "values",
    "updates",
    "custom",
    "tasks",
    "checkpoints",
    "debug",
    "messages",
    "messages-tuple",
    "events",
];

impl Modes {
    /// Parses `stream_mode` (a name or a list of names; default `values`), adding
    /// subgraph events when `subgraphs`.
    pub(crate) fn parse(value: Option<&Value>, subgraphs: bool) -> Result<Self, ApiError> {
        let names: Vec<&str> = match value {
            None | Some(Value::Null) => vec!["values"],
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().ok_or_else(|| {
                        ApiError::invalid("$.stream_mode", "every stream mode must be a string")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(ApiError::invalid(
                    "$.stream_mode",
                    "expected a stream mode name or a list of them",
                ));
            }
        };
        let mut mode: Option<StreamMode> = None;
        let mut messages = MessageForms::default();
        let mut events = false;
        for name in names {
            let m = match (graph_mode(name), name) {
                (Some(m), _) => m,
                (None, "messages") => {
                    messages.partial = true;
                    StreamMode::MESSAGES
                }
                (None, "messages-tuple") => {
                    messages.tuple = true;
                    StreamMode::MESSAGES
                }
                (None, "events") => {
                    events = true;
                    continue;
                }
                (None, other) => {
                    return Err(ApiError::invalid(
                        "$.stream_mode",
                        format!("unknown stream mode `{other}`; known: {}", KNOWN.join(", ")),
                    ));
                }
            };
            mode = Some(mode.map_or(m, |have| have | m));
        }
        if subgraphs {
            mode = mode.map(|m| m | StreamMode::SUBGRAPHS);
        }
        Ok(Self {
            graph: mode,
            messages,
            events,
        })
    }

    /// The modes the graph's stream is asked for: values at least (the run's result
    /// comes from them); task events to end a model's reply where its task ends
    /// (`messages`, `events`); messages for `events`.
    pub(crate) fn for_graph(self) -> StreamMode {
        let mut mode = self
            .graph
            .map_or(StreamMode::VALUES, |m| m | StreamMode::VALUES);
        if self.events || self.messages != MessageForms::default() {
            mode = mode | StreamMode::TASKS;
        }
        if self.events {
            mode = mode | StreamMode::MESSAGES;
        }
        mode
    }

    fn wants(self, mode: StreamMode) -> bool {
        self.graph.is_some_and(|m| m.contains(mode))
    }

    /// Whether the mode of this wire name was asked for (the run's own stream
    /// always carries values, to know its result; a client sees them only when
    /// asked).
    fn wants_named(self, name: &str) -> bool {
        graph_mode(name).is_some_and(|mode| self.wants(mode))
    }

    fn subgraphs(self) -> bool {
        self.wants(StreamMode::SUBGRAPHS)
    }

    /// Whether a stored event of this name belongs to these modes (a join's
    /// `stream_mode`): `metadata`, `error` and `end` always do; a subgraph's
    /// (`values|ns`) by its mode.
    pub(crate) fn carries(self, event: &str) -> bool {
        match event.split('|').next().unwrap_or(event) {
            "metadata" | "error" | "end" => true,
            "messages" => self.messages.tuple,
            "messages/partial" | "messages/complete" | "messages/metadata" => self.messages.partial,
            "events" => self.events,
            other => self.wants_named(other),
        }
    }
}

/// The graph's stream mode a wire mode name stands for, for the modes that are one
/// to one (`messages` and `events` are shaped from several).
fn graph_mode(name: &str) -> Option<StreamMode> {
    Some(match name {
        "values" => StreamMode::VALUES,
        "updates" => StreamMode::UPDATES,
        "custom" => StreamMode::CUSTOM,
        "tasks" => StreamMode::TASKS,
        "checkpoints" => StreamMode::CHECKPOINTS,
        "debug" => StreamMode::DEBUG,
        _ => return None,
    })
}

/// Interrupts as the wire lists them: `[{"value": .., "id": ..}]`.
pub(crate) fn interrupts_json(interrupts: &[Interrupt]) -> Value {
    interrupts
        .iter()
        .map(|i| {
            let mut o = json!({ "value": i.value, "id": i.id, "node": i.node });
            if !i.ns.is_empty() {
                o["ns"] = json!(i.ns);
            }
            o
        })
        .collect()
}

/// A checkpoint's config in LangGraph's `{"configurable": {..}}` shape.
pub(crate) fn config_json(c: &CheckpointConfig) -> Value {
    json!({ "configurable": {
        "thread_id": c.thread_id,
        "checkpoint_ns": c.checkpoint_ns,
        "checkpoint_id": c.checkpoint_id,
    }})
}

/// A node's updates, merged into one `{channel: value}` object.
fn updates_json<S: GraphState>(updates: &[S::Update]) -> Value {
    let mut out = Map::new();
    for u in updates {
        if let Ok(Value::Object(m)) = update_to_json::<S>(u) {
            out.extend(m);
        }
    }
    let mut out = Value::Object(out);
    crate::wire::chat::update_output::<S>(&mut out);
    out
}

fn values_json<S: GraphState>(values: &S) -> Value {
    let mut v = state_to_json(values).unwrap_or_else(|e| json!({ "__error__": e.to_string() }));
    crate::wire::chat::output::<S>(&mut v);
    v
}

/// What the wire of one run remembers between events.
#[derive(Default)]
pub(crate) struct WireRun {
    /// The messages being written.
    parts: MessageParts,
    /// The last `values`: an interrupt repeats them with `__interrupt__`.
    last_values: Option<Value>,
    /// The `events` mode's memory, when asked for.
    events: Option<EventsRun>,
}

impl WireRun {
    /// The wire of a run asking for `modes`.
    pub(crate) fn new(modes: Modes, ids: RunIds) -> Self {
        Self {
            events: modes.events.then(|| EventsRun::new(ids)),
            ..Self::default()
        }
    }

    /// What is sent before the run's first event.
    pub(crate) fn begin(&self, input: Value) -> Vec<(String, Value)> {
        self.events.iter().map(|e| e.begin(input.clone())).collect()
    }

    /// What is sent after the run's last event, given its final values.
    pub(crate) fn end(&self, output: &Value) -> Vec<(String, Value)> {
        self.events.iter().map(|e| e.end(output.clone())).collect()
    }
}

/// The wire events for one typed event, given the requested modes.
pub(crate) fn to_wire<S: GraphState>(
    event: &StreamEvent<S>,
    modes: Modes,
    run: &mut WireRun,
) -> Vec<(String, Value)> {
    let one = |name: &str, data: Value| vec![(name.to_string(), data)];
    let parts = &mut run.parts;
    match event {
        StreamEvent::Values { values, .. }
            if modes.wants(StreamMode::VALUES) || run.events.is_some() =>
        {
            let values = values_json(values);
            run.last_values = Some(values.clone());
            if modes.wants(StreamMode::VALUES) {
                one("values", values)
            } else {
                Vec::new()
            }
        }
        StreamEvent::Updates { node, updates, .. } if modes.wants(StreamMode::UPDATES) => {
            one("updates", json!({ node: updates_json::<S>(updates) }))
        }
        StreamEvent::Custom { value, .. } if modes.wants(StreamMode::CUSTOM) => {
            one("custom", value.clone())
        }
        StreamEvent::Message { step, node, chunk } => {
            // `events` first: an adapter reading both (AG-UI's) follows `events`
            // once it has seen one, and would show the first piece twice.
            let first = parts.is_new(&chunk.id);
            let mut out = match &run.events {
                Some(events) => events.message(*step, node, chunk, first),
                None => Vec::new(),
            };
            out.extend(parts.wire(modes.messages, *step, node, "", chunk));
            out
        }
        StreamEvent::TaskStart {
            step,
            id,
            node,
            input,
            ..
        } => {
            let mut out = Vec::new();
            if let Some(events) = &run.events {
                let input = input.clone().or_else(|| run.last_values.clone());
                out.push(events.task_start(*step, id, node, input.unwrap_or(Value::Null)));
            }
            if modes.wants(StreamMode::TASKS) {
                out.push(("tasks".to_string(), task_json(event)));
            }
            out
        }
        StreamEvent::TaskResult {
            step,
            id,
            node,
            error,
            result,
            ..
        } => {
            let (mut out, finished) = parts.finish_task(modes.messages, node, "");
            if let Some(events) = &mut run.events {
                let output = match error {
                    Some(e) => json!({ "error": e }),
                    None => updates_json::<S>(result),
                };
                out.extend(events.task_end(*step, id, node, output, &finished));
            }
            if modes.wants(StreamMode::TASKS) {
                out.push(("tasks".to_string(), task_json(event)));
            }
            out
        }
        StreamEvent::Checkpoint { .. } if modes.wants(StreamMode::CHECKPOINTS) => {
            one("checkpoints", checkpoint_json(event))
        }
        StreamEvent::Debug {
            step,
            timestamp,
            kind,
            event: inner,
        } if modes.wants(StreamMode::DEBUG) => {
            let payload = match &**inner {
                StreamEvent::Checkpoint { .. } => checkpoint_json(inner),
                _ => task_json(inner),
            };
            one(
                "debug",
                json!({ "type": kind, "step": step, "timestamp": timestamp, "payload": payload }),
            )
        }
        // As LangGraph 1.x streams it: in `updates` alone, and in `values` as the
        // state with the pending interrupts beside it.
        StreamEvent::Interrupt { interrupts } => {
            let pending = interrupts_json(interrupts);
            let mut out = Vec::new();
            if modes.wants(StreamMode::UPDATES) {
                out.push(("updates".to_string(), json!({ "__interrupt__": pending })));
            }
            if modes.wants(StreamMode::VALUES) {
                let mut values = match run.last_values.clone() {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                values.insert("__interrupt__".into(), pending);
                out.push(("values".to_string(), Value::Object(values)));
            }
            out
        }
        StreamEvent::Subgraph { ns, event } if modes.subgraphs() => {
            if event.get("type").and_then(Value::as_str) == Some("message") {
                return subgraph_message(ns, event, modes, parts);
            }
            subgraph_wire(ns, event)
                .filter(|(mode, _)| modes.wants_named(mode))
                .map(|(mode, data)| vec![(format!("{mode}|{ns}"), data)])
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

fn task_json<S: GraphState>(event: &StreamEvent<S>) -> Value {
    match event {
        StreamEvent::TaskStart {
            step,
            id,
            node,
            input,
            triggers,
            ..
        } => json!({ "id": id, "name": node, "step": step, "input": input, "triggers": triggers }),
        StreamEvent::TaskResult {
            step,
            id,
            node,
            error,
            result,
            interrupts,
            ..
        } => json!({
            "id": id, "name": node, "step": step, "error": error,
            "result": updates_json::<S>(result), "interrupts": interrupts_json(interrupts),
        }),
        _ => Value::Null,
    }
}

fn checkpoint_json<S: GraphState>(event: &StreamEvent<S>) -> Value {
    match event {
        StreamEvent::Checkpoint {
            config,
            parent_config,
            values,
            metadata,
            next,
        } => json!({
            "config": config_json(config),
            "parent_config": parent_config.as_ref().map(config_json),
            "values": values_json(values),
            "metadata": metadata,
            "next": next,
            "tasks": next.iter().map(|n| json!({ "name": n, "error": null, "interrupts": [], "state": null })).collect::<Vec<_>>(),
            "checkpoint": crate::wire::Checkpoint::from(config),
            "parent_checkpoint": parent_config.as_ref().map(crate::wire::Checkpoint::from),
        }),
        _ => Value::Null,
    }
}

/// A subgraph's message piece (the child's own JSON form) in the asked wire forms.
fn subgraph_message(
    ns: &str,
    event: &Value,
    modes: Modes,
    parts: &mut MessageParts,
) -> Vec<(String, Value)> {
    let chunk = event
        .get("chunk")
        .and_then(|c| serde_json::from_value::<MessageChunk>(c.clone()).ok());
    match (
        chunk,
        event.get("step").and_then(Value::as_i64),
        event.get("node").and_then(Value::as_str),
    ) {
        (Some(chunk), Some(step), Some(node)) => parts.wire(modes.messages, step, node, ns, &chunk),
        _ => Vec::new(),
    }
}

/// A subgraph's event (the child's own JSON form) as `(mode, data)`.
fn subgraph_wire(ns: &str, event: &Value) -> Option<(&'static str, Value)> {
    let _ = ns;
    let flat = |v: &Value| -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, w)| {
                        let inner = w
                            .get("reduce")
                            .or_else(|| w.get("overwrite"))
                            .unwrap_or(w)
                            .clone();
                        (k.clone(), inner)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    };
    let merged = |list: Option<&Value>| -> Value {
        let mut out = Map::new();
        for u in list.and_then(Value::as_array).into_iter().flatten() {
            if let Value::Object(m) = flat(u) {
                out.extend(m);
            }
        }
        Value::Object(out)
    };
    match event.get("type")?.as_str()? {
        "values" => {
            let mut values = event.get("values")?.clone();
            crate::wire::chat::untyped_output(&mut values);
            Some(("values", values))
        }
        "updates" => {
            let node = event.get("node")?.as_str()?;
            let mut update = merged(event.get("updates"));
            crate::wire::chat::untyped_output(&mut update);
            Some(("updates", json!({ node: update })))
        }
        "custom" => Some(("custom", event.get("value")?.clone())),
        "task_start" => Some((
            "tasks",
            json!({ "id": event.get("id"), "name": event.get("node"), "input": event.get("input"),
                    "triggers": event.get("triggers") }),
        )),
        "task_result" => Some((
            "tasks",
            json!({ "id": event.get("id"), "name": event.get("node"), "error": event.get("error"),
                    "result": merged(event.get("result")), "interrupts": event.get("interrupts") }),
        )),
        "checkpoint" => Some(("checkpoints", event.clone())),
        "debug" => Some(("debug", event.clone())),
        "interrupt" => Some((
            "updates",
            json!({ "__interrupt__": event.get("interrupts") }),
        )),
        _ => None,
    }
}
