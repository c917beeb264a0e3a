//! The `events` stream mode: a run as LangChain's `astream_events(version="v2")`
//! sees it, the shape LangGraph Platform streams in `events` and agent adapters
//! (CopilotKit's AG-UI adapter among them) read: `on_chain_start`/`on_chain_end` for
//! the graph and for each task, `on_chat_model_start`/`_stream`/`_end` for each
//! model reply, `on_tool_start`/`on_tool_end` for each tool's answer. Each event
//! carries `run_id`, `name`, `tags`, `metadata` (`langgraph_node`, `langgraph_step`,
//! the run's `run_id` and `thread_id`, …) and `data`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use stategraph::{MessageChunk, Role};

use crate::messages::{Finished, chunk_json};

/// Who the run is, for every event's metadata.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunIds {
    pub(crate) graph: String,
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
}

/// The `events` of one run: what it needs to remember between the runtime's events.
#[derive(Default)]
pub(crate) struct EventsRun {
    ids: RunIds,
    /// Tool calls the model asked for, by call id: the tool's name and arguments.
    calls: HashMap<String, (String, Value)>,
}

/// One event, as an SSE `events` event.
fn sse(data: Value) -> (String, Value) {
    ("events".to_string(), data)
}

impl EventsRun {
    /// The events of a run of graph `ids.graph`.
    pub(crate) fn new(ids: RunIds) -> Self {
        Self {
            ids,
            calls: HashMap::new(),
        }
    }

    fn metadata(&self, step: Option<i64>, node: Option<(&str, &str)>) -> Value {
        let mut m = Map::new();
        m.insert("run_id".into(), json!(self.ids.run_id));
        m.insert("thread_id".into(), json!(self.ids.thread_id));
        m.insert("graph_id".into(), json!(self.ids.graph));
        if let Some(step) = step {
            m.insert("langgraph_step".into(), json!(step));
        }
        if let Some((node, task)) = node {
            m.insert("langgraph_node".into(), json!(node));
            m.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
            m.insert(
                "langgraph_checkpoint_ns".into(),
                json!(format!("{node}:{task}")),
            );
        }
        Value::Object(m)
    }

    fn event(
        &self,
        kind: &str,
        name: &str,
        run_id: &str,
        tags: Value,
        metadata: Value,
        data: Value,
    ) -> (String, Value) {
        sse(json!({
            "event": kind, "name": name, "run_id": run_id, "tags": tags,
            "metadata": metadata, "data": data, "parent_ids": [],
        }))
    }

    /// The graph starts, with its input.
    pub(crate) fn begin(&self, input: Value) -> (String, Value) {
        let meta = self.metadata(None, None);
        self.event(
            "on_chain_start",
            &self.ids.graph,
            &self.ids.run_id,
            json!([]),
            meta,
            json!({ "input": input }),
        )
    }

    /// The graph ends, with its output (the state's values).
    pub(crate) fn end(&self, output: Value) -> (String, Value) {
        let meta = self.metadata(None, None);
        self.event(
            "on_chain_end",
            &self.ids.graph,
            &self.ids.run_id,
            json!([]),
            meta,
            json!({ "output": output }),
        )
    }

    /// A task starts, with its input (a `Send` payload, else the state).
    pub(crate) fn task_start(
        &self,
        step: i64,
        task: &str,
        node: &str,
        input: Value,
    ) -> (String, Value) {
        self.event(
            "on_chain_start",
            node,
            task,
            json!([format!("graph:step:{step}")]),
            self.metadata(Some(step), Some((node, task))),
            json!({ "input": input }),
        )
    }

    /// A task ended: its model replies end, then the task with its update (or error).
    pub(crate) fn task_end(
        &mut self,
        step: i64,
        task: &str,
        node: &str,
        output: Value,
        finished: &[Finished],
    ) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for f in finished
            .iter()
            .filter(|f| f.message.role == Role::Assistant)
        {
            for call in &f.message.tool_calls {
                self.calls
                    .insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
            }
            let id = f.message.id.clone().unwrap_or_default();
            out.push(self.event(
                "on_chat_model_end",
                "model",
                &id,
                json!([]),
                self.metadata(Some(f.step), Some((&f.node, task))),
                json!({ "output": crate::wire::chat::langchain_message(&f.message) }),
            ));
        }
        out.push(self.event(
            "on_chain_end",
            node,
            task,
            json!([format!("graph:step:{step}")]),
            self.metadata(Some(step), Some((node, task))),
            json!({ "output": output }),
        ));
        out
    }

    /// A piece of a message: a model's reply piece by piece; a tool's answer whole,
    /// as the tool's start and end.
    pub(crate) fn message(
        &self,
        step: i64,
        node: &str,
        chunk: &MessageChunk,
        first: bool,
    ) -> Vec<(String, Value)> {
        let meta = || self.metadata(Some(step), Some((node, "")));
        if chunk.role == Role::Tool {
            let call_id = chunk.tool_call_id.clone().unwrap_or_default();
            let (name, args) = self
                .calls
                .get(&call_id)
                .cloned()
                .unwrap_or_else(|| ("tool".to_string(), json!({})));
            let mut answer = chunk_json(chunk);
            answer["name"] = json!(name);
            answer["status"] = json!("success");
            let run = format!("tool-{call_id}");
            return vec![
                self.event(
                    "on_tool_start",
                    &name,
                    &run,
                    json!([]),
                    meta(),
                    json!({ "input": args.clone() }),
                ),
                self.event(
                    "on_tool_end",
                    &name,
                    &run,
                    json!([]),
                    meta(),
                    json!({ "input": args, "output": answer }),
                ),
            ];
        }
        let mut out = Vec::new();
        if first {
            out.push(self.event(
                "on_chat_model_start",
                "model",
                &chunk.id,
                json!([]),
                meta(),
                json!({ "input": {} }),
            ));
        }
        out.push(self.event(
            "on_chat_model_stream",
            "model",
            &chunk.id,
            json!([]),
            meta(),
            json!({ "chunk": chunk_json(chunk) }),
        ));
        out
    }
}
