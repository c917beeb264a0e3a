//! [`react_agent`]: the tool-calling agent loop — the model answers or asks for
//! tools, [`ToolNode`] runs them, the model reads their results — as a
//! `StateGraph` you compile, extend or nest, with an optional approval pause before
//! chosen tools.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph::prelude::*;
use stategraph::{MessageChunk, NodeHandle};

use crate::model::{ChatModel, ChatRequest, stream_to};
use crate::state::{AgentState, MessagesState, pending_tool_calls};
use crate::tool::Tools;
use crate::tool_node::{ToolNode, tools_condition};

/// The model's node.
pub const AGENT_NODE: &str = "agent";
/// The tools' node.
pub const TOOLS_NODE: &str = "tools";
/// The approval node (only with [`ReactAgent::approve_before`]).
pub const APPROVE_NODE: &str = "approve";

/// What a reviewer answers to an approval pause (the resume value). `true` is
/// [`Review::Approve`], `false` is [`Review::Reject`] without a message.
///
/// On the wire: `{"action": "approve"}`, `{"action": "edit", "arguments":
/// {"<call id>": {..new arguments..}}}`, `{"action": "reject", "message": ".."}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Review {
    /// Run the calls as the model wrote them.
    Approve,
    /// Run the calls with these arguments instead, by call id (calls not named run
    /// as written).
    Edit {
        /// New arguments by call id.
        arguments: BTreeMap<String, Value>,
    },
    /// Run none of this turn's calls; the model is told, with `message`.
    Reject {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl Review {
    fn from_resume(value: Value) -> Result<Self, NodeError> {
        match value {
            Value::Bool(true) => Ok(Review::Approve),
            Value::Bool(false) => Ok(Review::Reject { message: None }),
            other => serde_json::from_value(other).map_err(|e| {
                NodeError::msg(format!(
                    "the approval answer is not a review ({e}): resume with true, false, \
                     {{\"action\": \"approve\"}}, {{\"action\": \"edit\", \"arguments\": {{\"<call id>\": {{..}}}}}} \
                     or {{\"action\": \"reject\", \"message\": \"..\"}}"
                ))
            }),
        }
    }
}

/// Why an agent graph could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `approve_before` names a tool the agent does not have.
    #[error("approve_before names `{tool}`, which is not one of the agent's tools ({known})")]
    UnknownTool {
        /// The name given.
        tool: String,
        /// The agent's tools.
        known: String,
    },
}

/// Builds the tool-calling agent graph over a state `S` holding the conversation.
///
/// The graph: `START → agent`; after `agent`, to `tools` while the model asks for
/// tool calls (through `approve` first when one of them needs approval), else to
/// `END`; `tools → agent`. The model's replies are streamed
/// (`StreamMode::MESSAGES`) and written to the conversation whole.
pub struct ReactAgent<S: AgentState = MessagesState> {
    model: Arc<dyn ChatModel>,
    tools: Tools,
    system: Option<Prompt<S>>,
    approve: BTreeSet<String>,
    state: PhantomData<fn() -> S>,
}

/// Makes the system prompt from the state.
type Prompt<S> = Arc<dyn Fn(&S) -> Option<String> + Send + Sync>;

/// The nodes [`ReactAgent::add_to`] added, to wire into a larger graph.
#[derive(Clone, Debug)]
pub struct AgentNodes<S> {
    /// The model's node: send the conversation here (`add_edge(.., &nodes.agent)`).
    pub agent: NodeHandle<S>,
    /// The tools' node.
    pub tools: NodeHandle<S>,
    /// The approval node, with [`ReactAgent::approve_before`].
    pub approve: Option<NodeHandle<S>>,
}

/// The agent over [`MessagesState`]: `react_agent(model, tools).build()?` gives
/// its graph.
pub fn react_agent(model: impl ChatModel, tools: Tools) -> ReactAgent<MessagesState> {
    ReactAgent::new(model, tools)
}

impl<S: AgentState> ReactAgent<S> {
    /// An agent asking `model`, offering it `tools`.
    pub fn new(model: impl ChatModel, tools: Tools) -> Self {
        Self::with_shared_model(Arc::new(model), tools)
    }

    /// As [`ReactAgent::new`], with a model shared with other graphs.
    pub fn with_shared_model(model: Arc<dyn ChatModel>, tools: Tools) -> Self {
        Self {
            model,
            tools,
            system: None,
            approve: BTreeSet::new(),
            state: PhantomData,
        }
    }

    /// Sends `text` as a system message before the conversation on every model
    /// call (it is not written to the state).
    #[must_use]
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        let text = text.into();
        self.system = Some(Arc::new(move |_: &S| Some(text.clone())));
        self
    }

    /// Makes the system message from the state on every model call (`None`: no
    /// system message) — for what the state knows about the user, the task, the
    /// date.
    #[must_use]
    pub fn system_prompt_with(
        mut self,
        prompt: impl Fn(&S) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.system = Some(Arc::new(prompt));
        self
    }

    /// Pauses the run (an interrupt from the `approve` node) before any turn that
    /// calls one of these tools; the interrupt's value is `{"tool_calls": [..]}`, the
    /// calls needing approval. Resume with a [`Review`].
    #[must_use]
    pub fn approve_before<I: Into<String>>(mut self, tools: impl IntoIterator<Item = I>) -> Self {
        self.approve.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The graph, to compile (with a checkpointer when approval is on: the pause
    /// is saved there).
    ///
    /// # Errors
    /// [`AgentError::UnknownTool`] when `approve_before` names a tool the agent
    /// does not have.
    pub fn build(self) -> Result<StateGraph<S>, AgentError> {
        let mut graph = StateGraph::<S>::new();
        let nodes = self.add_to(&mut graph)?;
        graph.add_edge(START, &nodes.agent);
        Ok(graph)
    }

    /// Adds the agent's nodes (`agent`, `tools`, and `approve` with approval) and
    /// the edges between them to `graph`, which may hold nodes of its own: lead
    /// into `nodes.agent`; the agent ends the run (`END`) when the model answers
    /// without tool calls.
    ///
    /// # Errors
    /// As [`ReactAgent::build`].
    pub fn add_to(self, graph: &mut StateGraph<S>) -> Result<AgentNodes<S>, AgentError> {
        if let Some(tool) = self.approve.iter().find(|t| self.tools.get(t).is_none()) {
            return Err(AgentError::UnknownTool {
                tool: tool.clone(),
                known: self.tools.names().collect::<Vec<_>>().join(", "),
            });
        }
        let model = self.model.clone();
        let specs = Arc::new(self.tools.specs());
        let system = self.system.clone();
        let agent = graph.add_node_async(AGENT_NODE, move |state: S, ctx: NodeContext| {
            let (model, specs, system) = (model.clone(), specs.clone(), system.clone());
            async move {
                let mut messages = Vec::with_capacity(state.messages().len() + 1);
                messages.extend(system.and_then(|p| p(&state)).map(Message::system));
                messages.extend_from_slice(state.messages());
                let request = ChatRequest::new(messages).with_tools(specs.to_vec());
                let reply = stream_to(&*model, &request, &ctx).await?;
                Ok::<_, NodeError>(Command::new().update(S::add_messages(vec![reply])))
            }
        });
        let tools = ToolNode::new(self.tools).add_to(graph, TOOLS_NODE);
        graph.add_edge(&tools, &agent);
        if self.approve.is_empty() {
            graph.add_conditional_edges(&agent, tools_condition(&tools), (&tools, END));
            return Ok(AgentNodes {
                agent,
                tools,
                approve: None,
            });
        }
        let approve = Arc::new(self.approve);
        let approval = add_approval(graph, approve.clone(), &tools, &agent);
        let (to_tools, to_approval) = (tools.clone(), approval.clone());
        graph.add_conditional_edges(
            &agent,
            move |state: &S| {
                let calls = pending_tool_calls(state.messages());
                if calls.is_empty() {
                    Route::end()
                } else if calls.iter().any(|c| approve.contains(&c.name)) {
                    Route::to(to_approval.clone())
                } else {
                    Route::to(to_tools.clone())
                }
            },
            (&approval, &tools, END),
        );
        Ok(AgentNodes {
            agent,
            tools,
            approve: Some(approval),
        })
    }
}

/// The `approve` node: pauses with the calls needing approval, then runs the
/// review: on to `tools` (with edited arguments written over the model's message,
/// same id), or back to `agent` with a rejection for each call.
fn add_approval<S: AgentState>(
    graph: &mut StateGraph<S>,
    approve: Arc<BTreeSet<String>>,
    tools: &NodeHandle<S>,
    agent: &NodeHandle<S>,
) -> NodeHandle<S> {
    let (tools, agent) = (tools.clone(), agent.clone());
    graph.add_node_async(APPROVE_NODE, move |state: S, ctx: NodeContext| {
        let (approve, tools, agent) = (approve.clone(), tools.clone(), agent.clone());
        async move {
            let Some(asking) = state.messages().last().cloned() else {
                return Ok(Command::goto(agent));
            };
            let needing: Vec<_> = asking
                .tool_calls
                .iter()
                .filter(|c| approve.contains(&c.name))
                .collect();
            let answer: Value = ctx.interrupt(json!({ "tool_calls": needing }))?;
            match Review::from_resume(answer)? {
                Review::Approve => Ok(Command::goto(tools)),
                Review::Edit { arguments } => {
                    let mut edited = asking.clone();
                    for (id, args) in arguments {
                        let call = edited
                            .tool_calls
                            .iter_mut()
                            .find(|c| c.id == id)
                            .ok_or_else(|| {
                                NodeError::msg(format!(
                                    "the review edits call `{id}`, which the model's message does not have; its calls are: {}",
                                    asking.tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>().join(", ")
                                ))
                            })?;
                        call.arguments = args;
                    }
                    Ok(Command::goto(tools).update(S::add_messages(vec![edited])))
                }
                Review::Reject { message } => {
                    let why = message.unwrap_or_else(|| "no reason given".to_string());
                    let answers = asking
                        .tool_calls
                        .iter()
                        .map(|c| {
                            Message::tool(
                                c.id.clone(),
                                format!("The user rejected this tool call ({}): {why}", c.name),
                            )
                            .with_id(format!("tool-{}", c.id))
                        })
                        .collect::<Vec<_>>();
                    for a in &answers {
                        ctx.emit_message(MessageChunk::whole(a, "")).await;
                    }
                    Ok::<_, NodeError>(Command::goto(agent).update(S::add_messages(answers)))
                }
            }
        }
    })
}
